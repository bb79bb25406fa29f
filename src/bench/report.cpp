// SPDX-License-Identifier: MIT
// CSV and SVG output for bench points. Not on any hot path: clarity over speed.
#include "bench/report.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include "bench/stats.hpp"
#include "bench/table.hpp"

namespace txpath {

namespace {

// Appends every part to `out` (no temporaries).
template <class... Parts>
void put(std::string& out, const Parts&... parts) {
  (out.append(std::string_view(parts)), ...);
}

// ---- number formatting (locale-independent) ---------------------------------------------------

// Shortest text that reads back to exactly `v`.
std::string shortest(double v) {
  std::array<char, 64> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), res.ptr);
}

// `v` with at most `decimals` digits after the point, trailing zeros dropped ("12.5", "300").
// Used for SVG coordinates, which are always finite and bounded by the layout.
std::string fixed(double v, int decimals = 2) {
  if (!std::isfinite(v)) v = 0;
  v = std::clamp(v, -1e9, 1e9);
  const double unit = std::pow(10.0, -decimals);
  if (std::fabs(v) < unit / 2) v = 0;  // no "-0"
  std::array<char, 64> buf{};
  const auto res =
      std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, decimals);
  std::string s(buf.data(), res.ptr);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

// An axis tick value: six significant digits hide the binary noise of i * step.
std::string tick_text(double v) {
  if (std::fabs(v) < 1e-300) v = 0;
  std::array<char, 64> buf{};
  const auto res =
      std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::general, 6);
  return std::string(buf.data(), res.ptr);
}

// ---- CSV --------------------------------------------------------------------------------------

// One CSV row, its fields separated by commas as they are added.
class CsvRow {
 public:
  explicit CsvRow(std::ostream& out) : out_(out) {}

  // Quoted as RFC 4180 says when it holds a comma, a double quote, CR or LF.
  CsvRow& text(std::string_view s) {
    next();
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
      out_ << s;
      return *this;
    }
    out_ << '"';
    for (const char c : s) {
      if (c == '"') out_ << '"';
      out_ << c;
    }
    out_ << '"';
    return *this;
  }
  // Never quoted: for words written here (on, true).
  CsvRow& word(std::string_view s) {
    next();
    out_ << s;
    return *this;
  }
  template <class Int>
  CsvRow& integer(Int v) {
    next();
    out_ << v;
    return *this;
  }
  CsvRow& flag(bool v) { return word(v ? "true" : "false"); }
  // The shortest form that reads back to `v`; NaN is an empty field: missing.
  CsvRow& real(double v) {
    next();
    if (!std::isnan(v)) out_ << shortest(v);
    return *this;
  }
  // A ratio to a reference row: empty when it does not apply (the bench writes 0: no such row).
  CsvRow& ratio(double v) { return v > 0 ? real(v) : empty(1); }
  // A 95% interval as two fields, lo and hi: both empty when there is none (lo == hi == 0).
  CsvRow& interval(const Interval95& ci) {
    if (ci.lo == 0 && ci.hi == 0) return empty(2);
    return real(ci.lo).real(ci.hi);
  }
  CsvRow& empty(int fields) {
    for (int i = 0; i < fields; ++i) next();
    return *this;
  }

 private:
  void next() {
    if (fields_++ > 0) out_ << ',';
  }

  std::ostream& out_;
  int fields_ = 0;
};

// ---- XML / SVG helpers ------------------------------------------------------------------------

// Escapes the five XML specials; drops control characters that XML 1.0 does not allow at all.
std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        out += c;
      }
    }
  }
  return out;
}

// Characters as a reader sees them (UTF-8 code points), for width estimates.
std::size_t glyphs(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// Rough advance width of sans-serif text: good enough to keep labels apart.
double text_width(std::string_view s, double font_size) {
  return static_cast<double>(glyphs(s)) * font_size * 0.6;
}

// Tableau 10 and two darker tones: distinct, colour-blind-friendlier than the SVG named colours.
constexpr std::array<std::string_view, 12> kPalette = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1b5e20", "#3f3f7f"};
// Each series also has its own dash pattern and marker shape, so that two lines differ in more
// than colour. Series i: colour i % 12, dash i % 11, shape i % 13 — the first 11 differ in all
// three, and two series share two of them only when their indices differ by a multiple of 132,
// 143 or 156.
constexpr std::array<std::string_view, 11> kDashes = {
    "", "8 4", "2 3", "8 3 2 3", "14 4", "5 2 1 2 1 2", "3 6", "10 2 2 2 2 2", "1 4", "16 3 4 3", "6 2"};
// A marker: a closed outline through these points (unit radius, y down), or, with an odd name
// ("cross", "plus"), two strokes; "circle" is drawn as a circle.
struct Shape {
  std::string_view name;
  std::vector<std::pair<double, double>> outline;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> list = {
      {"circle", {}},
      {"square", {{-0.8, -0.8}, {0.8, -0.8}, {0.8, 0.8}, {-0.8, 0.8}}},
      {"triangle", {{0, -1.05}, {1, 0.75}, {-1, 0.75}}},
      {"diamond", {{0, -1.1}, {1.1, 0}, {0, 1.1}, {-1.1, 0}}},
      {"triangle-down", {{0, 1.05}, {1, -0.75}, {-1, -0.75}}},
      {"cross", {{-1, -1}, {1, 1}, {1, -1}, {-1, 1}}},
      {"triangle-left", {{-1.05, 0}, {0.75, -1}, {0.75, 1}}},
      {"pentagon", {{0, -1}, {0.95, -0.31}, {0.59, 0.81}, {-0.59, 0.81}, {-0.95, -0.31}}},
      {"plus", {{-1.1, 0}, {1.1, 0}, {0, -1.1}, {0, 1.1}}},
      {"triangle-right", {{1.05, 0}, {-0.75, -1}, {-0.75, 1}}},
      {"hexagon", {{0, -1}, {0.87, -0.5}, {0.87, 0.5}, {0, 1}, {-0.87, 0.5}, {-0.87, -0.5}}},
      {"star", {{0, -1.2}, {0.28, -0.38}, {1.14, -0.37}, {0.45, 0.15}, {0.71, 0.97},
                {0, 0.47}, {-0.71, 0.97}, {-0.45, 0.15}, {-1.14, -0.37}, {-0.28, -0.38}}},
      {"hourglass", {{-0.9, -0.9}, {0.9, -0.9}, {-0.9, 0.9}, {0.9, 0.9}}},
  };
  return list;
}

bool stroked(const Shape& shape) { return shape.name == "cross" || shape.name == "plus"; }

struct Style {
  std::string_view colour;
  std::string_view dash;
  const Shape* shape = nullptr;
};

Style style_for(std::size_t index) {
  return {kPalette[index % kPalette.size()], kDashes[index % kDashes.size()],
          &shapes()[index % shapes().size()]};
}

struct Series {
  std::string key;
  std::vector<const BenchPoint*> points;  // sorted by thread count
};

bool plottable(const BenchPoint& p) { return std::isfinite(p.mpps); }

// Groups points into series in order of first appearance. The key is the strategy, plus a
// parenthesised qualifier naming what varies for that strategy: its lock kind when it appears
// with several, its TX queue count when it appears with several ("2 TX queues"), "park on" /
// "park off" when it appears with both policies ("busylock (mcs, 2 TX queues, park off)").
std::vector<Series> group(const std::vector<BenchPoint>& points) {
  std::map<std::string, std::set<std::string>, std::less<>> locks_of;
  std::map<std::string, std::set<bool>, std::less<>> parks_of;
  std::map<std::string, std::set<uint32_t>, std::less<>> queues_of;
  for (const auto& p : points) {
    locks_of[p.strategy].insert(p.lock);
    parks_of[p.strategy].insert(p.park);
    queues_of[p.strategy].insert(p.queues);
  }
  std::vector<Series> out;
  std::map<std::string, std::size_t, std::less<>> index_of;
  for (const auto& p : points) {
    if (!plottable(p)) continue;
    std::string key = p.strategy;
    std::vector<std::string> qualifiers;
    if (locks_of[p.strategy].size() > 1) qualifiers.push_back(p.lock);
    if (queues_of[p.strategy].size() > 1)
      qualifiers.push_back(std::to_string(p.queues) + (p.queues == 1 ? " TX queue" : " TX queues"));
    if (parks_of[p.strategy].size() > 1) qualifiers.push_back(std::string("park ") + park_name(p.park));
    for (std::size_t i = 0; i < qualifiers.size(); ++i) put(key, i ? ", " : " (", qualifiers[i]);
    if (!qualifiers.empty()) put(key, ")");
    auto [it, inserted] = index_of.try_emplace(key, out.size());
    if (inserted) out.push_back({key, {}});
    out[it->second].points.push_back(&p);
  }
  for (auto& s : out)
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const BenchPoint* a, const BenchPoint* b) { return a->threads < b->threads; });
  return out;
}

// A "nice" upper bound (1, 2, 2.5 or 5 times a power of ten per step) and its step, for [0, max].
struct YAxis {
  double max = 1;
  double step = 0.2;
};

YAxis y_axis_for(double data_max) {
  if (!(data_max > 0) || !std::isfinite(data_max)) return {};
  const double raw = data_max / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  if (!std::isnormal(raw) || !std::isnormal(mag)) return {};
  const double norm = raw / mag;
  const double mult = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10;
  const double step = mult * mag;
  double top = std::ceil(data_max / step - 1e-9) * step;
  if (top < data_max) top += step;
  if (!std::isfinite(top) || !(top > 0) || !std::isfinite(step)) return {data_max, data_max};
  return {top, step};
}

// A point's error bar in one panel, or nothing when it adds no information.
struct Whisker {
  bool show = false;
  double lo = 0;
  double hi = 0;
};

// The 95% confidence interval of the mean of `samples` (t distribution), clipped at 0; nothing
// with fewer than two finite samples or when every sample is the same.
Whisker ci_whisker(const std::vector<double>& samples) {
  std::vector<double> v;
  for (const double x : samples)
    if (std::isfinite(x)) v.push_back(x);
  const Interval95 ci = bench_stats::ci95_mean(v);
  if (!(ci.hi > ci.lo) || !std::isfinite(ci.hi - ci.lo)) return {};
  return {true, std::max(0.0, ci.lo), ci.hi};
}

// Min-max bounds for a point, or nothing when they add no information: not filled in (both
// zero), not finite, or equal to the median.
Whisker min_max_whisker(const BenchPoint& p) {
  if (!std::isfinite(p.mpps_min) || !std::isfinite(p.mpps_max)) return {};
  if (p.mpps_min == 0 && p.mpps_max == 0) return {};
  const double lo = std::max(0.0, std::min({p.mpps_min, p.mpps_max, p.mpps}));
  const double hi = std::max({p.mpps_min, p.mpps_max, p.mpps});
  const double tol = 1e-9 * std::max(1.0, std::fabs(p.mpps));
  if (std::fabs(lo - p.mpps) <= tol && std::fabs(hi - p.mpps) <= tol) return {};
  return {true, lo, hi};
}

// What a panel plots: a figure per point and its error bar.
struct Metric {
  std::string_view axis_title;
  double (*value)(const BenchPoint&);
  // The 95% CI over the rounds' samples when there are two or more, else (Mpps) min-max.
  Whisker (*whisker)(const BenchPoint&);
};

double mpps_of(const BenchPoint& p) { return p.mpps; }
double cpu_of(const BenchPoint& p) { return p.cpu_ns_per_pkt; }
Whisker mpps_whisker(const BenchPoint& p) {
  const Whisker ci = ci_whisker(p.mpps_samples);
  return ci.show ? ci : min_max_whisker(p);
}
Whisker cpu_whisker(const BenchPoint& p) { return ci_whisker(p.cpu_samples); }

constexpr Metric kMppsPanel{"Mpps", mpps_of, mpps_whisker};
constexpr Metric kCpuPanel{"CPU ns/pkt", cpu_of, cpu_whisker};

// Layout constants (px).
constexpr double kTitleSize = 16;
constexpr double kFontSize = 12;
constexpr double kPlotLeft = 72;
constexpr double kPlotTop = 48;
constexpr double kPlotWidth = 560;
constexpr double kPlotHeight = 300;
constexpr double kPanelGap = 70;     // between the Mpps panel's x axis and the CPU panel's top
constexpr double kXInset = 24;       // keeps the first and last markers off the axes
constexpr double kLegendGap = 24;
constexpr double kLegendRow = 20;
constexpr double kLegendSample = 28;
constexpr double kProvenanceGap = 56;  // from the last panel's bottom to the provenance line

// Builds the document text; small helpers keep the markup in one place.
class Svg {
 public:
  void open(double width, double height, std::string_view title) {
    const std::string w = fixed(width);
    const std::string h = fixed(height);
    put(out_, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
    put(out_, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"", w,
        "\" height=\"", h, "\" viewBox=\"0 0 ", w, " ", h,
        "\" font-family=\"sans-serif\" font-size=\"12\">\n");
    put(out_, "<title>", xml_escape(title), "</title>\n");
    put(out_, "<rect x=\"0\" y=\"0\" width=\"", w, "\" height=\"", h, "\" fill=\"#ffffff\"/>\n");
  }
  void close() { put(out_, "</svg>\n"); }

  // `attrs` is trusted markup built here; `content` is escaped.
  void text(double x, double y, std::string_view content, std::string_view attrs = {}) {
    put(out_, "<text x=\"", fixed(x), "\" y=\"", fixed(y), "\"");
    if (!attrs.empty()) put(out_, " ", attrs);
    put(out_, ">", xml_escape(content), "</text>\n");
  }
  // The chart title, centred, shrunk to fit the width when it is long.
  void title(double width, std::string_view title) {
    const double natural = text_width(title, kTitleSize);
    const double size =
        natural > width - 20 ? std::max(8.0, kTitleSize * (width - 20) / natural) : kTitleSize;
    std::string attrs;
    put(attrs, "text-anchor=\"middle\" font-size=\"", fixed(size),
        "\" font-weight=\"bold\" fill=\"#222222\"");
    text(width / 2, 28, title, attrs);
  }
  // The provenance line at the bottom left, in small grey type.
  void provenance(double y, std::string_view line) {
    if (!line.empty()) text(12, y, line, "class=\"provenance\" font-size=\"10\" fill=\"#777777\"");
  }
  void line(double x1, double y1, double x2, double y2, std::string_view attrs) {
    put(out_, "<line x1=\"", fixed(x1), "\" y1=\"", fixed(y1), "\" x2=\"", fixed(x2), "\" y2=\"",
        fixed(y2), "\" ", attrs, "/>\n");
  }
  void polyline(std::string_view points, std::string_view attrs) {
    put(out_, "<polyline points=\"", points, "\" ", attrs, "/>\n");
  }
  // A marker of the style's shape; hollow (white inside): the point dropped most of its load.
  void marker(double x, double y, const Style& st, bool hollow = false) {
    const Shape& shape = *st.shape;
    const bool outlined = hollow || stroked(shape);
    std::string paint;
    put(paint, "fill=\"", outlined ? "#ffffff" : st.colour, "\" stroke=\"", outlined ? st.colour : "#ffffff",
        "\" stroke-width=\"", outlined ? "1.8" : "1", "\"");
    const bool circle = shape.outline.empty();
    put(out_, "<", circle ? "circle" : "path", " class=\"marker ", shape.name, hollow ? " dropped" : "", "\" ");
    if (circle) {
      put(out_, "cx=\"", fixed(x), "\" cy=\"", fixed(y), "\" r=\"3.5\" ", paint, "/>\n");
      return;
    }
    put(out_, "d=\"", shape_path(x, y, shape), "\" ", paint, "/>\n");
  }
  void raw(std::string_view markup) { out_.append(markup); }
  std::string take() { return std::move(out_); }

 private:
  // The outline of a marker centred on (x, y), about 8 px across: a closed polygon, or for a
  // stroked shape two lines (its points pairwise).
  static std::string shape_path(double x, double y, const Shape& shape) {
    constexpr double kRadius = 4;
    std::string d;
    for (std::size_t i = 0; i < shape.outline.size(); ++i) {
      const bool move = i == 0 || (stroked(shape) && i % 2 == 0);
      put(d, i ? " " : "", move ? "M" : "L", fixed(x + kRadius * shape.outline[i].first), ",",
          fixed(y + kRadius * shape.outline[i].second));
    }
    if (!stroked(shape)) d += " Z";
    return d;
  }

  std::string out_;
};

std::string stroke_attrs(const Style& st, double width) {
  std::string a;
  put(a, "stroke=\"", st.colour, "\" stroke-width=\"", fixed(width), "\"");
  if (!st.dash.empty()) put(a, " stroke-dasharray=\"", st.dash, "\"");
  return a;
}

std::string no_data_svg(std::string_view title, std::string_view provenance) {
  const double width = kPlotLeft + kPlotWidth + 40;
  const double height = kPlotTop + kPlotHeight + 60 + (provenance.empty() ? 0 : 20);
  Svg svg;
  svg.open(width, height, title);
  svg.title(width, title);
  svg.text(width / 2, (kPlotTop + kPlotHeight + 60) / 2, "no data",
           "text-anchor=\"middle\" font-size=\"14\" fill=\"#666666\"");
  svg.provenance(height - 12, provenance);
  svg.close();
  return svg.take();
}

// ---- the chart's parts ------------------------------------------------------------------------

// Where a point goes in one panel: x from its thread count (log2 when the counts span more than
// a factor of 8), y from the panel's figure (linear from 0 to a nice maximum); the panel's top
// edge is `top`.
class Scales {
 public:
  Scales(const std::vector<Series>& series, const Metric& metric, double top)
      : metric(metric), top(top) {
    double data_max = 0;
    for (const auto& s : series) {
      for (const BenchPoint* p : s.points) {
        counts.push_back(p->threads);
        const double v = metric.value(*p);
        if (std::isfinite(v)) data_max = std::max(data_max, v);
        const Whisker w = metric.whisker(*p);
        if (w.show) {
          any_whisker = true;
          data_max = std::max(data_max, w.hi);
        }
      }
    }
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    const int tmin = counts.front();
    const int tmax = counts.back();
    log_x = tmin >= 1 && static_cast<double>(tmax) > 8.0 * static_cast<double>(tmin);
    x_lo_ = xval(tmin);
    x_hi_ = xval(tmax);
    y = y_axis_for(data_max);
  }

  double x_of(int t) const {
    if (x_hi_ <= x_lo_) return kPlotLeft + kPlotWidth / 2;
    return kPlotLeft + kXInset + (xval(t) - x_lo_) / (x_hi_ - x_lo_) * (kPlotWidth - 2 * kXInset);
  }
  double y_of(double v) const {
    const double f = std::isfinite(v) ? std::clamp(v / y.max, 0.0, 1.0) : 0.0;
    return top + kPlotHeight - f * kPlotHeight;
  }
  double bottom() const { return top + kPlotHeight; }

  Metric metric;
  double top;
  std::vector<int> counts;  // distinct thread counts, ascending
  bool log_x = false;
  bool any_whisker = false;  // some point has an error bar
  YAxis y;

 private:
  double xval(int t) const { return log_x ? std::log2(static_cast<double>(t)) : static_cast<double>(t); }

  double x_lo_ = 0, x_hi_ = 0;
};

// The y grid, ticks and labels.
void draw_y_axis(Svg& svg, const Scales& sc) {
  const double plot_right = kPlotLeft + kPlotWidth;
  const int y_ticks = std::clamp(static_cast<int>(std::lround(sc.y.max / sc.y.step)), 1, 20);
  for (int i = 0; i <= y_ticks; ++i) {
    const double v = sc.y.max * i / y_ticks;
    const double y = sc.y_of(v);
    if (i > 0) svg.line(kPlotLeft, y, plot_right, y, "stroke=\"#e4e4e4\" stroke-width=\"1\"");
    svg.line(kPlotLeft - 5, y, kPlotLeft, y, "stroke=\"#444444\" stroke-width=\"1\"");
    svg.text(kPlotLeft - 8, y + 4, tick_text(v), "text-anchor=\"end\" fill=\"#333333\"");
  }
}

// The thread counts whose x tick gets a label: every one that fits beside the last labelled one,
// and the largest count in preference to its nearest labelled neighbour.
std::vector<std::size_t> labelled_counts(const Scales& sc) {
  const auto& counts = sc.counts;
  std::vector<std::size_t> labelled;
  const auto label_half = [&](std::size_t i) {
    return text_width(std::to_string(counts[i]), kFontSize) / 2;
  };
  const auto fits_after = [&](std::size_t i) {
    return sc.x_of(counts[i]) - sc.x_of(counts[labelled.back()]) >=
           label_half(i) + label_half(labelled.back()) + 6;
  };
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (labelled.empty() || fits_after(i)) labelled.push_back(i);
  }
  if (labelled.back() != counts.size() - 1) {
    const std::size_t last = counts.size() - 1;
    if (labelled.size() > 1) labelled.pop_back();
    if (fits_after(last)) labelled.push_back(last);
  }
  return labelled;
}

// The x ticks (marks at every thread count, labels where they fit), both axes over the grid, and
// the axis titles.
void draw_x_axis(Svg& svg, const Scales& sc) {
  const double plot_bottom = sc.bottom();
  const double plot_right = kPlotLeft + kPlotWidth;
  const std::vector<std::size_t> labelled = labelled_counts(sc);
  for (std::size_t i = 0; i < sc.counts.size(); ++i) {
    const double x = sc.x_of(sc.counts[i]);
    svg.line(x, plot_bottom, x, plot_bottom + 5, "stroke=\"#444444\" stroke-width=\"1\"");
    if (std::find(labelled.begin(), labelled.end(), i) != labelled.end())
      svg.text(x, plot_bottom + 19, std::to_string(sc.counts[i]),
               "text-anchor=\"middle\" fill=\"#333333\"");
  }
  // Axes on top of the grid.
  svg.line(kPlotLeft, sc.top, kPlotLeft, plot_bottom, "stroke=\"#444444\" stroke-width=\"1\"");
  svg.line(kPlotLeft, plot_bottom, plot_right, plot_bottom, "stroke=\"#444444\" stroke-width=\"1\"");
  svg.text(kPlotLeft + kPlotWidth / 2, plot_bottom + 42,
           "sender threads",
           "text-anchor=\"middle\" font-size=\"13\" fill=\"#222222\"");
  if (sc.log_x)
    svg.text(plot_right, plot_bottom + 42, "(log2 scale)",
             "text-anchor=\"end\" font-size=\"11\" fill=\"#777777\"");
  const double ytitle_x = 20;
  const double ytitle_y = sc.top + kPlotHeight / 2;
  std::string ytitle_attrs;
  put(ytitle_attrs, "class=\"axis-title\" text-anchor=\"middle\" font-size=\"13\" fill=\"#222222\" transform=\"rotate(-90 ",
      fixed(ytitle_x), " ", fixed(ytitle_y), ")\"");
  svg.text(ytitle_x, ytitle_y, sc.metric.axis_title, ytitle_attrs);
}

// One series in one panel: its error bars, its line, its markers (hollow, and in the Mpps panel
// labelled with the share dropped, where the point dropped or lost most of its offered load).
void draw_series(Svg& svg, const Series& series, const Style& st, const Scales& sc, bool label_drops) {
  svg.raw("<g class=\"series\">\n");
  for (const BenchPoint* p : series.points) {
    const Whisker w = sc.metric.whisker(*p);
    if (!w.show) continue;
    const double x = sc.x_of(p->threads);
    std::string a;
    put(a, "class=\"whisker\" stroke=\"", st.colour, "\" stroke-width=\"1.2\" stroke-opacity=\"0.8\"");
    svg.line(x, sc.y_of(w.lo), x, sc.y_of(w.hi), a);
    svg.line(x - 4, sc.y_of(w.lo), x + 4, sc.y_of(w.lo), a);
    svg.line(x - 4, sc.y_of(w.hi), x + 4, sc.y_of(w.hi), a);
  }
  std::string pts;
  for (const BenchPoint* p : series.points) {
    if (!pts.empty()) pts += ' ';
    put(pts, fixed(sc.x_of(p->threads)), ",", fixed(sc.y_of(sc.metric.value(*p))));
  }
  std::string line_attrs;
  put(line_attrs, "fill=\"none\" ", stroke_attrs(st, 2), " stroke-linejoin=\"round\"");
  svg.polyline(pts, line_attrs);
  for (const BenchPoint* p : series.points) {
    const double x = sc.x_of(p->threads);
    const double y = sc.y_of(sc.metric.value(*p));
    const bool dropped = wins_by_dropping(*p);
    svg.marker(x, y, st, dropped);
    if (dropped && label_drops) {
      std::string attrs;
      put(attrs, "class=\"drop-label\" font-size=\"10\" fill=\"", st.colour, "\"");
      svg.text(x + 6, y - 6, std::to_string(std::lround(offered_loss_pct(*p))) + "% dropped", attrs);
    }
  }
  svg.raw("</g>\n");
}

// The legend, right of the plots and never over them; it sets the document's size.
class Legend {
 public:
  Legend(const std::vector<Series>& series, const std::vector<std::string_view>& notes, double plots_bottom)
      : notes_(notes) {
    double text = 0;
    for (const auto& s : series) text = std::max(text, text_width(s.key, kFontSize));
    for (const auto note : notes_) text = std::max(text, text_width(note, 11) - kLegendSample - 8);
    width = x_ + kLegendSample + 8 + text + 16;
    const double rows = static_cast<double>(series.size()) + 0.5 + static_cast<double>(notes_.size());
    height = std::max(plots_bottom + kProvenanceGap + 16, kPlotTop + 8 + rows * kLegendRow + 16);
  }

  void draw(Svg& svg, const std::vector<Series>& series) const {
    svg.raw("<g class=\"legend\">\n");
    for (std::size_t si = 0; si < series.size(); ++si) {
      const Style st = style_for(si);
      const double y = kPlotTop + 8 + static_cast<double>(si) * kLegendRow;
      svg.line(x_, y, x_ + kLegendSample, y, stroke_attrs(st, 2));
      svg.marker(x_ + kLegendSample / 2, y, st);
      svg.text(x_ + kLegendSample + 8, y + 4, series[si].key, "fill=\"#222222\"");
    }
    for (std::size_t i = 0; i < notes_.size(); ++i) {
      const double y = kPlotTop + 8 + (static_cast<double>(series.size() + i) + 0.5) * kLegendRow;
      svg.text(x_, y + 4, notes_[i], "font-size=\"11\" fill=\"#777777\"");
    }
    svg.raw("</g>\n");
  }

  double width = 0, height = 0;  // the whole document's

 private:
  std::vector<std::string_view> notes_;
  const double x_ = kPlotLeft + kPlotWidth + kLegendGap;
};

// The legend's notes on the marks the chart uses.
std::vector<std::string_view> legend_notes(const std::vector<Series>& series, const Scales& mpps,
                                           const Scales& cpu) {
  bool samples = false, min_max = false, dropped = false;
  for (const auto& s : series) {
    for (const BenchPoint* p : s.points) {
      samples = samples || ci_whisker(p->mpps_samples).show || ci_whisker(p->cpu_samples).show;
      min_max = min_max || (!ci_whisker(p->mpps_samples).show && min_max_whisker(*p).show);
      dropped = dropped || wins_by_dropping(*p);
    }
  }
  std::vector<std::string_view> notes;
  if ((mpps.any_whisker || cpu.any_whisker) && samples) notes.emplace_back("bars: 95% CI of the mean over rounds");
  if (mpps.any_whisker && min_max) notes.emplace_back("bars: min-max over repeats");
  if (dropped) notes.emplace_back("hollow: >= 50% of the offered load dropped");
  return notes;
}

}  // namespace

// ---- public -----------------------------------------------------------------------------------

namespace {

// send_p90_ns .. flows: the queueing-delay cells are empty for a row without samples of it (the
// kernel row), offered_mpps for a row that ran flat out.
void write_traffic_cells(CsvRow& row, const BenchPoint& p) {
  row.real(p.send_p90_ns).real(p.send_p999_ns);
  if (p.queue_delay.count() > 0)
    row.real(p.queue_p50_ns).real(p.queue_p90_ns).real(p.queue_p99_ns).real(p.queue_p999_ns);
  else
    row.empty(4);
  if (p.offered_mpps > 0) row.real(p.offered_mpps);
  else row.empty(1);
  row.integer(p.flows);
}

}  // namespace

const std::vector<std::string_view>& csv_columns() {
  static const std::vector<std::string_view> columns = {
      "strategy",      "lock",          "park",        "threads",     "queues",      "mpps",        "mpps_min",
      "mpps_max",      "cpu_ns_per_pkt", "submitted",  "sent",        "dropped",
      "requeues",      "fairness",      "batch_mean",  "lock_waits",  "lock_wait_ns",
      "send_p50_ns",   "send_p99_ns",   "vs_busylock_mpps", "vs_busylock_cpu", "vs_floor_cpu", "conserved",
      "vs_kernel_mpps", "vs_kernel_cpu", "sink_received", "sink_lost", "sink_duplicated",
      "sink_out_of_order", "sink_socket_drops", "delivered",
       "send_p90_ns", "send_p999_ns", "queue_p50_ns", "queue_p90_ns", "queue_p99_ns", "queue_p999_ns",
       "offered_mpps", "flows", "runs", "complete",
      "mpps_cv", "cpu_cv", "vs_busylock_mpps_ci95_lo", "vs_busylock_mpps_ci95_hi",
      "vs_busylock_cpu_ci95_lo", "vs_busylock_cpu_ci95_hi", "vs_floor_cpu_ci95_lo",
      "vs_floor_cpu_ci95_hi", "vs_kernel_mpps_ci95_lo", "vs_kernel_mpps_ci95_hi",
      "vs_kernel_cpu_ci95_lo", "vs_kernel_cpu_ci95_hi", "unstable", "unstable_reason",
      "noise_steal_pct", "noise_other_cpu_pct", "advised_repeat", "limit_line_ns", "limit_lock_ns", "vs_limit",
      "vs_dpdk_mpps", "vs_dpdk_cpu", "partial"};
  return columns;
}

namespace {

// The statistics columns, mpps_cv .. advised_repeat: empty where they do not apply.
void write_round_statistics(CsvRow& row, const BenchPoint& p) {
  if (p.mpps_samples.size() >= 2) row.real(p.mpps_cv); else row.empty(1);
  if (p.cpu_samples.size() >= 2) row.real(p.cpu_cv); else row.empty(1);
  row.interval(p.vs_busylock_mpps_ci95).interval(p.vs_busylock_cpu_ci95);
  row.interval(p.vs_floor_cpu_ci95).interval(p.vs_kernel_mpps_ci95).interval(p.vs_kernel_cpu_ci95);
  row.flag(p.unstable).text(p.unstable_reason);
  if (p.noise_samples.empty()) row.empty(2); else row.real(p.noise.steal_pct).real(p.noise.other_cpu_pct);
  if (p.advised_repeat > 0) row.integer(p.advised_repeat); else row.empty(1);
}

}  // namespace

void write_csv(std::ostream& out, const std::vector<BenchPoint>& points, bool partial) {
  const auto& columns = csv_columns();
  for (std::size_t i = 0; i < columns.size(); ++i) out << (i ? "," : "") << columns[i];
  out << '\n';
  for (const auto& p : points) {
    CsvRow row(out);
    row.text(p.strategy).text(p.lock).word(park_name(p.park)).integer(p.threads).integer(p.queues);
    row.real(p.mpps).real(p.mpps_min).real(p.mpps_max).real(p.cpu_ns_per_pkt);
    row.integer(p.submitted).integer(p.sent).integer(p.dropped).integer(p.requeues);
    row.real(p.fairness).real(p.batch_mean).integer(p.lock_waits).integer(p.lock_wait_ns);
    row.real(p.send_p50_ns).real(p.send_p99_ns).ratio(p.vs_busylock_mpps).ratio(p.vs_busylock_cpu);
    row.ratio(p.vs_floor_cpu);
    row.flag(p.conserved).ratio(p.vs_kernel_mpps).ratio(p.vs_kernel_cpu);
    // Sink columns are empty when no sink counted the point.
    if (p.sink_checked) {
      row.integer(p.sink_received).integer(p.sink_lost).integer(p.sink_duplicated);
      row.integer(p.sink_out_of_order).integer(p.sink_socket_drops).flag(p.delivered);
    } else {
      row.empty(6);
    }
    write_traffic_cells(row, p);
    row.integer(p.runs).flag(p.complete);
    write_round_statistics(row, p);
    if (p.limit_line_ns > 0) row.real(p.limit_line_ns).real(p.limit_lock_ns).ratio(p.vs_limit);
    else row.empty(3);
    row.ratio(p.vs_dpdk_mpps).ratio(p.vs_dpdk_cpu);
    row.flag(partial);
    out << '\n';
  }
}

std::string render_svg(const std::vector<BenchPoint>& points, std::string_view title,
                       std::string_view provenance) {
  const std::vector<Series> series = group(points);
  if (series.empty()) return no_data_svg(title, provenance);
  const Scales mpps(series, kMppsPanel, kPlotTop);
  const Scales cpu(series, kCpuPanel, kPlotTop + kPlotHeight + kPanelGap);
  const Legend legend(series, legend_notes(series, mpps, cpu), cpu.bottom());
  Svg svg;
  svg.open(legend.width, legend.height, title);
  svg.title(legend.width, title);
  for (const Scales* panel : {&mpps, &cpu}) {
    svg.raw(panel == &mpps ? "<g class=\"panel mpps\">\n<g class=\"axis\">\n"
                           : "<g class=\"panel cpu\">\n<g class=\"axis\">\n");
    draw_y_axis(svg, *panel);
    draw_x_axis(svg, *panel);
    svg.raw("</g>\n");
    for (std::size_t si = 0; si < series.size(); ++si)
      draw_series(svg, series[si], style_for(si), *panel, panel == &mpps);
    svg.raw("</g>\n");
  }
  legend.draw(svg, series);
  svg.provenance(legend.height - 12, provenance);
  svg.close();
  return svg.take();
}

}  // namespace txpath
