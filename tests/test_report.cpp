// SPDX-License-Identifier: MIT
// Report output: the CSV's columns, rows, values and quoting; the SVG chart's well-formedness
// (checked by a small XML tokenizer below), its series, axis titles and edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench.hpp"
#include "bench/report.hpp"
#include "support/bench_statistics.hpp"

namespace txpath {
namespace {

constexpr std::string_view kHeader =
    "strategy,lock,park,threads,queues,mpps,mpps_min,mpps_max,cpu_ns_per_pkt,submitted,sent,dropped,"
    "requeues,fairness,batch_mean,lock_waits,lock_wait_ns,send_p50_ns,send_p99_ns,"
    "vs_busylock_mpps,vs_busylock_cpu,vs_floor_cpu,conserved,vs_kernel_mpps,vs_kernel_cpu,sink_received,"
    "sink_lost,sink_duplicated,sink_out_of_order,sink_socket_drops,delivered,"
     "send_p90_ns,send_p999_ns,queue_p50_ns,queue_p90_ns,queue_p99_ns,queue_p999_ns,offered_mpps,flows,runs,complete,"
    "mpps_cv,cpu_cv,vs_busylock_mpps_ci95_lo,vs_busylock_mpps_ci95_hi,vs_busylock_cpu_ci95_lo,"
    "vs_busylock_cpu_ci95_hi,vs_floor_cpu_ci95_lo,vs_floor_cpu_ci95_hi,vs_kernel_mpps_ci95_lo,"
    "vs_kernel_mpps_ci95_hi,vs_kernel_cpu_ci95_lo,vs_kernel_cpu_ci95_hi,unstable,unstable_reason,"
    "noise_steal_pct,noise_other_cpu_pct,advised_repeat,limit_line_ns,limit_lock_ns,vs_limit,vs_dpdk_mpps,vs_dpdk_cpu,partial";

BenchPoint point(std::string strategy, std::string lock, int threads, double mpps) {
  BenchPoint p;
  p.strategy = std::move(strategy);
  p.lock = std::move(lock);
  p.threads = threads;
  p.mpps = mpps;
  p.mpps_min = mpps * 0.95;
  p.mpps_max = mpps * 1.04;
  p.cpu_ns_per_pkt = 1000.0 / (mpps + 1);
  p.submitted = static_cast<uint64_t>(mpps * 1e6) + 17;
  p.sent = static_cast<uint64_t>(mpps * 1e6);
  p.dropped = 17;
  p.requeues = 3;
  p.doorbells = 1000;
  p.fairness = 0.987654321;
  p.batch_mean = 12.5;
  p.lock_waits = 42;
  p.lock_wait_ns = 123456789012ULL;
  p.send_p50_ns = 150.25;
  p.send_p99_ns = 2200;
  p.vs_busylock_mpps = 1.0 / 3.0;
  p.vs_busylock_cpu = 2.5;
  p.vs_floor_cpu = 6.25;
  p.drained = true;
  p.conserved = true;
  return p;
}

// Two strategies x four thread counts.
std::vector<BenchPoint> typical() {
  std::vector<BenchPoint> v;
  const int threads[] = {1, 8, 16, 64};
  for (const int t : threads) v.push_back(point("busylock", "ticket", t, 3.2 + 0.01 * t));
  for (const int t : threads) v.push_back(point("rootlock", "ticket", t, 4.1 - 0.02 * t));
  return v;
}

// ---- CSV helpers --------------------------------------------------------------------------------

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Splits one CSV record (RFC 4180 quoting; the record may span lines inside quotes).
std::vector<std::string> split_csv(std::string_view rec) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < rec.size(); ++i) {
    const char c = rec[i];
    if (quoted) {
      if (c == '"' && i + 1 < rec.size() && rec[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

double to_double(const std::string& s) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  EXPECT_TRUE(ec == std::errc() && ptr == s.data() + s.size()) << "not a double: " << s;
  return v;
}

uint64_t to_u64(const std::string& s) {
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  EXPECT_TRUE(ec == std::errc() && ptr == s.data() + s.size()) << "not an integer: " << s;
  return v;
}

std::string csv(const std::vector<BenchPoint>& points) {
  std::ostringstream out;
  write_csv(out, points);
  return out.str();
}

// ---- a small XML well-formedness checker --------------------------------------------------------
// Enough of XML 1.0 for generated documents: an optional declaration, an optional DOCTYPE,
// comments, processing instructions, CDATA, one root element, properly nested and closed tags,
// quoted and unique attributes, and entity references only in their legal forms.

class XmlChecker {
 public:
  explicit XmlChecker(std::string_view doc) : d_(doc) {}

  // Empty when well-formed, else the first problem with its offset.
  std::string check() {
    if (d_.substr(0, 5) == "<?xml") {
      if (!pi()) return err_;
    }
    bool doctype_seen = false;
    misc();
    if (!err_.empty()) return err_;
    if (d_.substr(i_, 9) == "<!DOCTYPE") {
      doctype_seen = true;
      if (!doctype()) return err_;
      misc();
      if (!err_.empty()) return err_;
    }
    (void)doctype_seen;
    if (i_ >= d_.size() || d_[i_] != '<') return fail("no root element");
    if (!element()) return err_;
    misc();
    if (!err_.empty()) return err_;
    if (i_ != d_.size()) return fail("content after the root element");
    return {};
  }

  const std::vector<std::string>& elements() const { return names_; }
  const std::vector<std::string>& attribute_values() const { return values_; }
  const std::string& text() const { return text_; }

 private:
  std::string fail(const std::string& what) {
    if (err_.empty()) err_ = what + " at offset " + std::to_string(i_);
    return err_;
  }
  bool failed(const std::string& what) {
    fail(what);
    return false;
  }
  static bool name_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           static_cast<unsigned char>(c) >= 0x80;
  }
  static bool name_char(char c) {
    return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  }
  static bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  void skip_space() {
    while (i_ < d_.size() && space(d_[i_])) ++i_;
  }
  bool name(std::string& out) {
    if (i_ >= d_.size() || !name_start(d_[i_])) return failed("expected a name");
    const std::size_t start = i_;
    while (i_ < d_.size() && name_char(d_[i_])) ++i_;
    out = std::string(d_.substr(start, i_ - start));
    return true;
  }
  // At '&': a predefined entity or a character reference.
  bool reference() {
    const std::size_t semi = d_.find(';', i_);
    if (semi == std::string_view::npos || semi - i_ > 10) return failed("raw '&'");
    const std::string_view ref = d_.substr(i_ + 1, semi - i_ - 1);
    static const std::set<std::string_view> named = {"amp", "lt", "gt", "quot", "apos"};
    bool ok = named.count(ref) > 0;
    if (!ok && ref.size() > 1 && ref[0] == '#') {
      const bool hex = ref[1] == 'x';
      const std::string_view digits = ref.substr(hex ? 2 : 1);
      ok = !digits.empty() && std::all_of(digits.begin(), digits.end(), [&](char c) {
        return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                   : std::isdigit(static_cast<unsigned char>(c)) != 0;
      });
    }
    if (!ok) return failed("bad entity reference '&" + std::string(ref) + ";'");
    i_ = semi + 1;
    return true;
  }
  bool pi() {  // "<?target ... ?>"
    i_ += 2;
    std::string target;
    if (!name(target)) return false;
    if (target == "xml" && i_ != 5) return failed("XML declaration not at the start");
    const std::size_t end = d_.find("?>", i_);
    if (end == std::string_view::npos) return failed("unterminated processing instruction");
    if (target == "xml") {
      const std::string_view decl = d_.substr(i_, end - i_);
      if (decl.find("version=\"1.0\"") == std::string_view::npos &&
          decl.find("version='1.0'") == std::string_view::npos)
        return failed("XML declaration without version 1.0");
    }
    i_ = end + 2;
    return true;
  }
  bool comment() {  // "<!-- ... -->"
    const std::size_t end = d_.find("--", i_ + 4);
    if (end == std::string_view::npos) return failed("unterminated comment");
    if (d_.substr(end, 3) != "-->") return failed("'--' inside a comment");
    i_ = end + 3;
    return true;
  }
  bool doctype() {  // "<!DOCTYPE name ... [internal subset]? >"
    i_ += 9;
    if (i_ >= d_.size() || !space(d_[i_])) return failed("DOCTYPE without a name");
    skip_space();
    std::string root;
    if (!name(root)) return false;
    bool subset = false;
    char quote = 0;
    for (; i_ < d_.size(); ++i_) {
      const char c = d_[i_];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '[') {
        subset = true;
      } else if (c == ']') {
        subset = false;
      } else if (c == '>' && !subset) {
        ++i_;
        return true;
      }
    }
    return failed("unterminated DOCTYPE");
  }
  // Whitespace, comments and PIs outside the root element.
  void misc() {
    for (;;) {
      skip_space();
      if (d_.substr(i_, 4) == "<!--") {
        if (!comment()) return;
      } else if (d_.substr(i_, 2) == "<?") {
        if (!pi()) return;
      } else {
        return;
      }
    }
  }
  bool attribute_value() {
    if (i_ >= d_.size() || (d_[i_] != '"' && d_[i_] != '\'')) return failed("unquoted attribute");
    const char quote = d_[i_++];
    std::string value;
    while (i_ < d_.size() && d_[i_] != quote) {
      if (d_[i_] == '<') return failed("'<' in an attribute value");
      if (d_[i_] == '&') {
        const std::size_t start = i_;
        if (!reference()) return false;
        value += d_.substr(start, i_ - start);
      } else {
        value += d_[i_++];
      }
    }
    if (i_ >= d_.size()) return failed("unterminated attribute value");
    ++i_;
    values_.push_back(value);
    return true;
  }
  // At '<' of a start tag; consumes through the matching end tag.
  bool element() {
    ++i_;
    std::string tag;
    if (!name(tag)) return false;
    names_.push_back(tag);
    std::set<std::string> seen;
    for (;;) {
      const bool had_space = i_ < d_.size() && space(d_[i_]);
      skip_space();
      if (i_ >= d_.size()) return failed("unterminated start tag <" + tag + ">");
      if (d_.substr(i_, 2) == "/>") {
        i_ += 2;
        return true;
      }
      if (d_[i_] == '>') {
        ++i_;
        break;
      }
      if (!had_space) return failed("no space before an attribute in <" + tag + ">");
      std::string attr;
      if (!name(attr)) return false;
      if (!seen.insert(attr).second) return failed("duplicate attribute " + attr);
      skip_space();
      if (i_ >= d_.size() || d_[i_] != '=') return failed("attribute " + attr + " without '='");
      ++i_;
      skip_space();
      if (!attribute_value()) return false;
    }
    // Content.
    for (;;) {
      if (i_ >= d_.size()) return failed("<" + tag + "> is never closed");
      const char c = d_[i_];
      if (c == '&') {
        if (!reference()) return false;
      } else if (c == '<') {
        if (d_.substr(i_, 2) == "</") {
          i_ += 2;
          std::string end;
          if (!name(end)) return false;
          if (end != tag) return failed("</" + end + "> closes <" + tag + ">");
          skip_space();
          if (i_ >= d_.size() || d_[i_] != '>') return failed("bad end tag </" + end);
          ++i_;
          return true;
        }
        if (d_.substr(i_, 4) == "<!--") {
          if (!comment()) return false;
        } else if (d_.substr(i_, 9) == "<![CDATA[") {
          const std::size_t end = d_.find("]]>", i_ + 9);
          if (end == std::string_view::npos) return failed("unterminated CDATA");
          i_ = end + 3;
        } else if (d_.substr(i_, 2) == "<?") {
          if (!pi()) return false;
        } else if (i_ + 1 < d_.size() && name_start(d_[i_ + 1])) {
          if (!element()) return false;
        } else {
          return failed("'<' in text");
        }
      } else {
        if (d_.substr(i_, 3) == "]]>") return failed("']]>' in text");
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 && !space(c)) return failed("control character in text");
        text_ += c;
        ++i_;
      }
    }
  }

  std::string_view d_;
  std::size_t i_ = 0;
  std::string err_;
  std::vector<std::string> names_;
  std::vector<std::string> values_;
  std::string text_;
};

std::string xml_error(std::string_view doc) { return XmlChecker(doc).check(); }

std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t at = hay.find(needle); at != std::string_view::npos;
       at = hay.find(needle, at + needle.size()))
    ++n;
  return n;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Checks every attribute value for "nan"/"inf" (text may legitimately contain user names).
void expect_finite_attributes(const XmlChecker& x) {
  for (const auto& v : x.attribute_values()) {
    const std::string l = lower(v);
    EXPECT_EQ(l.find("nan"), std::string::npos) << v;
    EXPECT_EQ(l.find("inf"), std::string::npos) << v;
  }
}

// The x coordinates of a polyline's points, in order.
std::vector<double> polyline_xs(const std::string& svg, std::size_t which) {
  std::size_t at = std::string::npos;
  for (std::size_t n = 0; n <= which; ++n) {
    at = svg.find("<polyline points=\"", at == std::string::npos ? 0 : at + 1);
    if (at == std::string::npos) return {};
  }
  at += 18;
  const std::size_t end = svg.find('"', at);
  std::vector<double> xs;
  std::istringstream in(svg.substr(at, end - at));
  for (std::string pair; in >> pair;) xs.push_back(to_double(pair.substr(0, pair.find(','))));
  return xs;
}

// ---- the checker itself -------------------------------------------------------------------------

TEST(SvgXmlChecker, AcceptsWellFormedAndRejectsBrokenDocuments) {
  EXPECT_EQ(xml_error("<?xml version=\"1.0\"?>\n<a x='1' y=\"&amp;&#60;&#x3c;\"><b/>t&lt;</a>\n"), "");
  EXPECT_EQ(xml_error("<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
                      "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n<svg><!-- c --></svg>"),
            "");
  EXPECT_NE(xml_error("<a><b></a></b>"), "") << "misnested";
  EXPECT_NE(xml_error("<a><b></b>"), "") << "unclosed";
  EXPECT_NE(xml_error("<a x=1/>"), "") << "unquoted attribute";
  EXPECT_NE(xml_error("<a x='1' x='2'/>"), "") << "duplicate attribute";
  EXPECT_NE(xml_error("<a>a & b</a>"), "") << "raw ampersand";
  EXPECT_NE(xml_error("<a>&nbsp;</a>"), "") << "undeclared entity";
  EXPECT_NE(xml_error("<a>1 < 2</a>"), "") << "'<' in text";
  EXPECT_NE(xml_error("<a t='<'/>"), "") << "'<' in an attribute";
  EXPECT_NE(xml_error("<a/><b/>"), "") << "two roots";
  EXPECT_NE(xml_error("\n<?xml version=\"1.0\"?><a/>"), "") << "declaration not first";
  EXPECT_NE(xml_error(""), "") << "empty";
}

// ---- CSV ----------------------------------------------------------------------------------------

TEST(ReportCsv, HeaderIsExact) {
  const auto lines = lines_of(csv({}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], kHeader);
  std::string joined;
  for (const auto c : csv_columns()) {
    if (!joined.empty()) joined += ',';
    joined.append(c);
  }
  EXPECT_EQ(joined, kHeader);
}

TEST(ReportCsv, OneRowPerPointWithEveryColumn) {
  const auto points = typical();
  const auto lines = lines_of(csv(points));
  ASSERT_EQ(lines.size(), points.size() + 1);
  const std::size_t columns = split_csv(kHeader).size();
  EXPECT_EQ(columns, 64u);
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(split_csv(lines[i]).size(), columns);
}

TEST(ReportCsv, ValuesRoundTrip) {
  BenchPoint p = point("rootlock", "mcs", 48, 7.123456789012345);
  p.conserved = false;
  p.park = false;
  p.queues = 3;
  const auto lines = lines_of(csv({p}));
  ASSERT_EQ(lines.size(), 2u);
  const auto f = split_csv(lines[1]);
  ASSERT_EQ(f.size(), 64u);
  EXPECT_EQ(f[0], "rootlock");
  EXPECT_EQ(f[1], "mcs");
  EXPECT_EQ(f[2], "off");
  EXPECT_EQ(f[3], "48");
  EXPECT_EQ(f[4], "3") << "the point's TX queue count";
  EXPECT_EQ(to_double(f[5]), p.mpps) << "doubles are written exactly";
  EXPECT_EQ(to_double(f[6]), p.mpps_min);
  EXPECT_EQ(to_double(f[7]), p.mpps_max);
  EXPECT_EQ(to_double(f[8]), p.cpu_ns_per_pkt);
  EXPECT_EQ(to_u64(f[9]), p.submitted);
  EXPECT_EQ(to_u64(f[10]), p.sent);
  EXPECT_EQ(to_u64(f[11]), p.dropped);
  EXPECT_EQ(to_u64(f[12]), p.requeues);
  EXPECT_EQ(to_double(f[13]), p.fairness);
  EXPECT_EQ(to_double(f[14]), p.batch_mean);
  EXPECT_EQ(to_u64(f[15]), p.lock_waits);
  EXPECT_EQ(to_u64(f[16]), p.lock_wait_ns);
  EXPECT_EQ(to_double(f[17]), p.send_p50_ns);
  EXPECT_EQ(to_double(f[18]), p.send_p99_ns);
  EXPECT_EQ(to_double(f[19]), p.vs_busylock_mpps);
  EXPECT_EQ(to_double(f[20]), p.vs_busylock_cpu);
  EXPECT_EQ(to_double(f[21]), p.vs_floor_cpu);
  EXPECT_EQ(f[22], "false");
  EXPECT_EQ(split_csv(lines_of(csv({point("a", "-", 1, 1)}))[1])[22], "true");
  EXPECT_EQ(split_csv(lines_of(csv({point("a", "-", 1, 1)}))[1])[30], "")
      << "no sink counted the point: its columns are empty";
  BenchPoint sunk = point("kernel", "-", 2, 1);
  sunk.sink_checked = true;
  sunk.sink_received = 90;
  sunk.sink_lost = 10;
  sunk.sink_out_of_order = 3;
  sunk.delivered = false;
  sunk.vs_kernel_mpps = 1.5;
  const auto g = split_csv(lines_of(csv({sunk}))[1]);
  ASSERT_EQ(g.size(), 64u);
  EXPECT_EQ(to_double(g[23]), 1.5);
  EXPECT_EQ(to_u64(g[25]), 90u);
  EXPECT_EQ(to_u64(g[26]), 10u);
  EXPECT_EQ(to_u64(g[28]), 3u);
  EXPECT_EQ(g[30], "false");
  EXPECT_EQ(split_csv(lines_of(csv({point("a", "-", 1, 1)}))[1])[2], "on") << "the default";
}

// A bench stopped by a signal: every row says partial, and each point whether it is whole.
TEST(ReportCsv, PartialBenchIsMarkedOnEveryRow) {
  BenchPoint whole = point("busylock", "ticket", 1, 1);
  whole.runs = 3;
  BenchPoint cut = point("rootlock", "ticket", 1, 1);
  cut.runs = 1;
  cut.complete = false;
  std::ostringstream out;
  write_csv(out, {whole, cut}, true);
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 3u);
  const auto f = split_csv(lines[1]);
  const auto g = split_csv(lines[2]);
  ASSERT_EQ(f.size(), 64u);
  ASSERT_EQ(g.size(), 64u);
  EXPECT_EQ(f[39], "3");
  EXPECT_EQ(f[40], "true");
  EXPECT_EQ(f[63], "true");
  EXPECT_EQ(g[39], "1");
  EXPECT_EQ(g[40], "false");
  EXPECT_EQ(g[63], "true");
  EXPECT_EQ(split_csv(lines_of(csv({whole}))[1])[63], "false") << "not partial by default";
}

TEST(ReportCsv, LargeCountsAndNonFiniteValues) {
  BenchPoint p = point("busylock", "ticket", 1, 1);
  p.sent = UINT64_MAX;
  p.mpps = std::nan("");
  p.fairness = INFINITY;
  const auto f = split_csv(lines_of(csv({p}))[1]);
  ASSERT_EQ(f.size(), 64u);
  EXPECT_EQ(to_u64(f[10]), UINT64_MAX);
  EXPECT_EQ(f[5], "") << "NaN is a missing value";
  EXPECT_EQ(f[13], "inf");
}

// The field of `column` in a data record.
std::string field(const std::vector<std::string>& record, std::string_view column) {
  const auto& columns = csv_columns();
  const auto it = std::find(columns.begin(), columns.end(), column);
  EXPECT_NE(it, columns.end()) << column;
  const auto i = static_cast<std::size_t>(it - columns.begin());
  return i < record.size() ? record[i] : "<missing>";
}

// A ratio to a reference row that the group did not have (0 from the bench) is an empty cell,
// not 0: vs_kernel_* without a kernel row (--device null), vs_busylock_* without busylock,
// vs_floor_cpu without a floor row; so are the statistics that were not taken.
TEST(ReportCsv, CellsThatDoNotApplyAreEmpty) {
  BenchPoint p = point("nolock", "-", 2, 3);
  p.vs_busylock_mpps = p.vs_busylock_cpu = p.vs_floor_cpu = 0;
  p.vs_kernel_mpps = p.vs_kernel_cpu = 0;
  const auto f = split_csv(lines_of(csv({p}))[1]);
  ASSERT_EQ(f.size(), csv_columns().size());
  for (const std::string_view c :
       {"vs_busylock_mpps", "vs_busylock_cpu", "vs_floor_cpu", "vs_kernel_mpps", "vs_kernel_cpu",
        "mpps_cv", "cpu_cv", "vs_busylock_mpps_ci95_lo", "vs_busylock_mpps_ci95_hi",
        "vs_busylock_cpu_ci95_lo", "vs_busylock_cpu_ci95_hi", "vs_floor_cpu_ci95_lo",
        "vs_floor_cpu_ci95_hi", "vs_kernel_mpps_ci95_lo", "vs_kernel_mpps_ci95_hi",
        "vs_kernel_cpu_ci95_lo", "vs_kernel_cpu_ci95_hi", "unstable_reason", "noise_steal_pct",
        "noise_other_cpu_pct", "advised_repeat", "limit_line_ns", "limit_lock_ns", "vs_limit", "vs_dpdk_mpps", "vs_dpdk_cpu"})
    EXPECT_EQ(field(f, c), "") << c;
  EXPECT_EQ(field(f, "unstable"), "false");
  // One sample is no spread: the CVs stay empty.
  p.mpps_samples = {3};
  p.cpu_samples = {100};
  const auto g = split_csv(lines_of(csv({p}))[1]);
  EXPECT_EQ(field(g, "mpps_cv"), "");
  EXPECT_EQ(field(g, "cpu_cv"), "");
}

// The statistics of a row whose rounds were measured (as the stats code fills them).
TEST(ReportCsv, StatisticsColumnsRoundTrip) {
  const BenchPoint p = test::with_statistics(point("busylock", "ticket", 2, 3));
  const auto lines = lines_of(csv({p}));
  ASSERT_EQ(lines.size(), 2u);
  const auto f = split_csv(lines[1]);
  ASSERT_EQ(f.size(), csv_columns().size());
  EXPECT_EQ(to_double(field(f, "vs_kernel_mpps")), 2);
  EXPECT_EQ(to_double(field(f, "vs_kernel_cpu")), 0.5);
  EXPECT_EQ(to_double(field(f, "mpps_cv")), p.mpps_cv);
  EXPECT_EQ(to_double(field(f, "cpu_cv")), p.cpu_cv);
  EXPECT_EQ(to_double(field(f, "vs_busylock_mpps_ci95_lo")), 1.25);
  EXPECT_EQ(to_double(field(f, "vs_busylock_mpps_ci95_hi")), 1.75);
  EXPECT_EQ(to_double(field(f, "vs_busylock_cpu_ci95_lo")), 0.5);
  EXPECT_EQ(to_double(field(f, "vs_busylock_cpu_ci95_hi")), 1);
  EXPECT_EQ(to_double(field(f, "vs_floor_cpu_ci95_lo")), 3);
  EXPECT_EQ(to_double(field(f, "vs_floor_cpu_ci95_hi")), 5);
  EXPECT_EQ(to_double(field(f, "vs_kernel_mpps_ci95_lo")), 1.5);
  EXPECT_EQ(to_double(field(f, "vs_kernel_mpps_ci95_hi")), 2.5);
  EXPECT_EQ(to_double(field(f, "vs_kernel_cpu_ci95_lo")), 0.25);
  EXPECT_EQ(to_double(field(f, "vs_kernel_cpu_ci95_hi")), 0.75);
  EXPECT_EQ(field(f, "unstable"), "true");
  EXPECT_EQ(field(f, "unstable_reason"), p.unstable_reason) << "quoted: it holds a comma";
  EXPECT_EQ(to_double(field(f, "noise_steal_pct")), 2);
  EXPECT_EQ(to_double(field(f, "noise_other_cpu_pct")), 40);
  EXPECT_EQ(to_u64(field(f, "advised_repeat")), 9u);
}

// The limit's columns, where it was measured (2+ pinned senders).
TEST(ReportCsv, LimitColumnsRoundTrip) {
  BenchPoint p = point("busylock", "ticket", 2, 3);
  p.limit_line_ns = 25.5;
  p.limit_lock_ns = 31.25;
  p.vs_limit = 9.5;
  const auto f = split_csv(lines_of(csv({p}))[1]);
  ASSERT_EQ(f.size(), csv_columns().size());
  EXPECT_EQ(to_double(field(f, "limit_line_ns")), 25.5);
  EXPECT_EQ(to_double(field(f, "limit_lock_ns")), 31.25);
  EXPECT_EQ(to_double(field(f, "vs_limit")), 9.5);
  EXPECT_EQ(field(f, "partial"), "false");
}

TEST(ReportCsv, QuotesTextThatNeedsIt) {
  const auto plain = lines_of(csv({point("peer:ck_ring", "-", 2, 1)}));
  EXPECT_EQ(plain[1].rfind("peer:ck_ring,-,on,2,", 0), 0u) << "no quotes where none are needed";

  const std::string name = "odd, \"quoted\" name";
  const auto out = csv({point(name, "ti,ck\net", 4, 2.5)});
  EXPECT_NE(out.find("\"odd, \"\"quoted\"\" name\",\"ti,ck\net\",on,4,"), std::string::npos) << out;
  // The record spans two physical lines because of the embedded newline.
  const std::string record = out.substr(out.find('\n') + 1);
  const auto f = split_csv(record.substr(0, record.size() - 1));
  ASSERT_EQ(f.size(), 64u);
  EXPECT_EQ(f[0], name);
  EXPECT_EQ(f[1], "ti,ck\net");
  EXPECT_EQ(f[3], "4");
  EXPECT_EQ(to_double(f[5]), 2.5);
}

// ---- SVG ----------------------------------------------------------------------------------------

// The Mpps panel's part of a chart (the CPU panel follows it).
std::string mpps_panel(const std::string& svg) {
  const std::size_t begin = svg.find("<g class=\"panel mpps\">");
  const std::size_t end = svg.find("<g class=\"panel cpu\">");
  if (begin == std::string::npos) return {};
  return svg.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

void expect_well_formed_svg(const std::string& svg) {
  XmlChecker x(svg);
  const std::string error = x.check();
  ASSERT_EQ(error, "") << svg;
  ASSERT_FALSE(x.elements().empty());
  EXPECT_EQ(x.elements().front(), "svg");
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("<style"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos) << "nothing external";
  expect_finite_attributes(x);
}

TEST(ReportSvg, TypicalDataIsWellFormedWithOneLinePerSeries) {
  const std::string svg = render_svg(typical(), "busylock vs rootlock, nic, pfifo_fast");
  expect_well_formed_svg(svg);
  EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<polyline"), 4u) << "the same lines in the CPU panel";
  EXPECT_EQ(count(svg, "class=\"marker "), 2 * 8u + 2u) << "8 points per panel and 2 legend samples";
  EXPECT_NE(svg.find(">sender threads</text>"), std::string::npos);
  EXPECT_NE(svg.find(">Mpps</text>"), std::string::npos);
  EXPECT_NE(svg.find(">busylock vs rootlock, nic, pfifo_fast</text>"), std::string::npos);
  EXPECT_NE(svg.find(">busylock</text>"), std::string::npos) << "legend";
  EXPECT_NE(svg.find(">rootlock</text>"), std::string::npos) << "legend";
  for (const char* t : {">1</text>", ">8</text>", ">16</text>", ">64</text>"})
    EXPECT_NE(svg.find(t), std::string::npos) << "x tick label " << t;
  EXPECT_GT(count(svg, "class=\"whisker\""), 0u) << "min != max: whiskers";
  const std::string l = lower(svg);
  EXPECT_EQ(l.find("nan"), std::string::npos);
  EXPECT_EQ(l.find("inf"), std::string::npos);
}

TEST(ReportSvg, EmptyInputSaysNoData) {
  const std::string svg = render_svg({}, "nothing");
  expect_well_formed_svg(svg);
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 0u);
}

TEST(ReportSvg, SinglePointAndEdgeCases) {
  {
    const std::string svg = render_svg({point("busylock", "ticket", 4, 2.0)}, "one");
    expect_well_formed_svg(svg);
    EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 1u);
    EXPECT_NE(svg.find(">4</text>"), std::string::npos);
  }
  {  // all zero Mpps, no whiskers filled in
    std::vector<BenchPoint> v = typical();
    for (auto& p : v) p.mpps = p.mpps_min = p.mpps_max = 0;
    const std::string svg = render_svg(v, "zeros");
    expect_well_formed_svg(svg);
    EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 2u);
    EXPECT_EQ(count(svg, "class=\"whisker\""), 0u);
    EXPECT_EQ(lower(svg).find("nan"), std::string::npos);
  }
  {  // one thread count only, several strategies
    std::vector<BenchPoint> v = {point("a", "-", 8, 1), point("b", "-", 8, 2),
                                 point("c", "-", 8, 3)};
    const std::string svg = render_svg(v, "one count");
    expect_well_formed_svg(svg);
    EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 3u);
  }
  {  // non-finite values are left out, never printed
    std::vector<BenchPoint> v = typical();
    v[0].mpps = std::nan("");
    v[1].mpps_max = INFINITY;
    v[2].mpps = 1e308;
    const std::string svg = render_svg(v, "hostile");
    expect_well_formed_svg(svg);
    EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 2u);
  }
  {  // only non-finite: no data
    std::vector<BenchPoint> v = {point("a", "-", 1, 1)};
    v[0].mpps = INFINITY;
    const std::string svg = render_svg(v, "inf only");
    expect_well_formed_svg(svg);
    EXPECT_NE(svg.find("no data"), std::string::npos);
  }
  {  // thread count zero or negative does not break the scale
    std::vector<BenchPoint> v = {point("a", "-", 0, 1), point("a", "-", -3, 2),
                                 point("a", "-", 100, 3)};
    expect_well_formed_svg(render_svg(v, "odd counts"));
  }
  {  // tiny values
    std::vector<BenchPoint> v = {point("a", "-", 1, 1e-310), point("a", "-", 2, 4e-7)};
    expect_well_formed_svg(render_svg(v, "tiny"));
  }
}

TEST(ReportSvg, EscapesEveryText) {
  const std::string evil = "a<b&c\"d'";
  std::vector<BenchPoint> v = {point(evil, "l<&>", 1, 1), point(evil, "-", 2, 2),
                               point("x]]>y", "-", 1, 3)};
  const std::string svg = render_svg(v, evil + " \x01 title");
  expect_well_formed_svg(svg);
  EXPECT_EQ(svg.find(evil), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b&amp;c&quot;d&apos; (l&lt;&amp;&gt;)"), std::string::npos)
      << "several locks for one strategy: the lock joins the key";
  EXPECT_NE(svg.find("<title>a&lt;b&amp;c&quot;d&apos;  title</title>"), std::string::npos);
  EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 3u);
}

TEST(ReportSvg, LockJoinsTheKeyOnlyWhenItVaries) {
  std::vector<BenchPoint> v = typical();
  v.push_back(point("busylock", "mcs", 8, 3.0));
  const std::string svg = render_svg(v, "locks");
  expect_well_formed_svg(svg);
  EXPECT_NE(svg.find(">busylock (ticket)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">busylock (mcs)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">rootlock</text>"), std::string::npos);
  EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 3u);
}

TEST(ReportSvg, ParkJoinsTheKeyOnlyWhenItVaries) {
  std::vector<BenchPoint> v = typical();  // all park on
  for (const int t : {1, 8, 16, 64}) {
    BenchPoint p = point("busylock", "ticket", t, 2.0 + 0.01 * t);
    p.park = false;
    v.push_back(p);
  }
  {
    const std::string svg = render_svg(v, "park");
    expect_well_formed_svg(svg);
    EXPECT_NE(svg.find(">busylock (park on)</text>"), std::string::npos);
    EXPECT_NE(svg.find(">busylock (park off)</text>"), std::string::npos);
    EXPECT_NE(svg.find(">rootlock</text>"), std::string::npos) << "rootlock ran with one policy";
    EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 3u);
  }
  {  // lock and park both vary for busylock
    v.push_back(point("busylock", "mcs", 8, 3.0));
    const std::string svg = render_svg(v, "lock and park");
    expect_well_formed_svg(svg);
    EXPECT_NE(svg.find(">busylock (ticket, park on)</text>"), std::string::npos);
    EXPECT_NE(svg.find(">busylock (ticket, park off)</text>"), std::string::npos);
    EXPECT_NE(svg.find(">busylock (mcs, park on)</text>"), std::string::npos);
    EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 4u);
  }
  {  // only park off: no qualifier
    std::vector<BenchPoint> off = typical();
    for (auto& p : off) p.park = false;
    const std::string svg = render_svg(off, "off");
    EXPECT_NE(svg.find(">busylock</text>"), std::string::npos);
    EXPECT_EQ(svg.find("park off"), std::string::npos);
  }
}

TEST(ReportSvg, QueueCountJoinsTheKeyOnlyWhenItVaries) {
  std::vector<BenchPoint> v = typical();  // all on one TX queue
  for (const int t : {1, 8, 16, 64}) {
    BenchPoint p = point("busylock", "ticket", t, 6.0 + 0.01 * t);
    p.queues = 2;
    v.push_back(p);
  }
  {
    const std::string svg = render_svg(v, "queues");
    expect_well_formed_svg(svg);
    EXPECT_NE(svg.find(">busylock (1 TX queue)</text>"), std::string::npos);
    EXPECT_NE(svg.find(">busylock (2 TX queues)</text>"), std::string::npos);
    EXPECT_NE(svg.find(">rootlock</text>"), std::string::npos) << "rootlock ran on one count";
    EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 3u);
  }
  {  // queues and park both vary for busylock: lock, queues, park in that order
    BenchPoint p = point("busylock", "ticket", 8, 5.0);
    p.queues = 2;
    p.park = false;
    v.push_back(p);
    const std::string svg = render_svg(v, "queues and park");
    expect_well_formed_svg(svg);
    EXPECT_NE(svg.find(">busylock (2 TX queues, park off)</text>"), std::string::npos);
    EXPECT_NE(svg.find(">busylock (1 TX queue, park on)</text>"), std::string::npos);
  }
}

TEST(ReportSvg, XScaleIsLog2WhenCountsSpanMoreThanEightTimes) {
  std::vector<BenchPoint> wide;
  for (int t = 1; t <= 64; t *= 2) wide.push_back(point("a", "-", t, 1.0 + t));
  const auto xs = polyline_xs(render_svg(wide, "log"), 0);
  ASSERT_EQ(xs.size(), 7u);
  for (std::size_t i = 2; i < xs.size(); ++i)
    EXPECT_NEAR(xs[i] - xs[i - 1], xs[1] - xs[0], 0.02) << "doublings are evenly spaced";

  std::vector<BenchPoint> narrow;
  for (int t = 2; t <= 16; t *= 2) narrow.push_back(point("a", "-", t, 1.0 + t));
  const auto lx = polyline_xs(render_svg(narrow, "linear"), 0);
  ASSERT_EQ(lx.size(), 4u);
  EXPECT_NEAR((lx[2] - lx[1]) / (lx[1] - lx[0]), 2.0, 0.01) << "factor 8: linear";
  EXPECT_NEAR((lx[3] - lx[2]) / (lx[1] - lx[0]), 4.0, 0.01);
}

TEST(ReportSvg, ManySeriesStayDistinctAndDenseCountsStayReadable) {
  std::vector<BenchPoint> v;
  for (int s = 0; s < 14; ++s)
    for (int t = 1; t <= 40; ++t) v.push_back(point("strategy" + std::to_string(s), "-", t, s + 0.1 * t));
  const std::string svg = render_svg(v, "dense");
  expect_well_formed_svg(svg);
  EXPECT_EQ(count(mpps_panel(svg), "<polyline"), 14u);
  EXPECT_GT(count(svg, "stroke-dasharray"), 0u) << "past the palette, dashes tell series apart";
  EXPECT_NE(svg.find(">40</text>"), std::string::npos) << "the largest count keeps its label";
}

// The traffic columns (issue 16, section 5): latency percentiles, queueing delay (empty without
// samples: the kernel row), offered load (empty when flat out) and flows per sender.
TEST(ReportCsv, TrafficColumnsAreEmptyWhereTheyDoNotApply) {
  BenchPoint flat = point("kernel", "-", 2, 1);
  flat.send_p90_ns = 900;
  BenchPoint paced = point("busylock", "ticket", 2, 1);
  paced.offered_mpps = 0.5;
  paced.flows = 16;
  paced.queue_delay.record(1000);
  paced.queue_p50_ns = 1000;
  paced.queue_p999_ns = 1001;
  const auto lines = lines_of(csv({flat, paced}));
  const auto header = split_csv(lines[0]);
  const auto at = [&](std::string_view name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const auto f = split_csv(lines[1]), g = split_csv(lines[2]);
  EXPECT_EQ(f[at("send_p90_ns")], "900");
  EXPECT_EQ(f[at("queue_p50_ns")], "");
  EXPECT_EQ(f[at("queue_p999_ns")], "");
  EXPECT_EQ(f[at("offered_mpps")], "");
  EXPECT_EQ(f[at("flows")], "1");
  EXPECT_EQ(g[at("queue_p50_ns")], "1000");
  EXPECT_EQ(g[at("queue_p999_ns")], "1001");
  EXPECT_EQ(g[at("offered_mpps")], "0.5");
  EXPECT_EQ(g[at("flows")], "16");
}

}  // namespace
}  // namespace txpath
