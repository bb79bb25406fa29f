// SPDX-License-Identifier: MIT
// The bench chart's panels, error bars, drop marks, provenance line and series styles
// (render_svg, bench/report.hpp).
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench.hpp"
#include "bench/report.hpp"

namespace txpath {
namespace {

BenchPoint point(const std::string& strategy, int threads, double mpps, double cpu = 100) {
  BenchPoint p;
  p.strategy = strategy;
  p.lock = "ticket";
  p.threads = threads;
  p.mpps = p.mpps_min = p.mpps_max = mpps;
  p.cpu_ns_per_pkt = cpu;
  p.submitted = p.sent = 1000;
  return p;
}

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// The text between `from` and the next `to` (or the end).
std::string between(const std::string& svg, const std::string& from, const std::string& to) {
  const std::size_t a = svg.find(from);
  if (a == std::string::npos) return {};
  const std::size_t b = svg.find(to, a + from.size());
  return svg.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

// Each series group of the Mpps panel: (stroke colour, dash pattern, marker shape).
std::vector<std::tuple<std::string, std::string, std::string>> styles(const std::string& svg) {
  const std::string panel = between(svg, "<g class=\"panel mpps\">", "<g class=\"panel cpu\">");
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  const std::regex group("<g class=\"series\">([\\s\\S]*?)</g>");
  const std::regex stroke("<polyline [^>]*stroke=\"(#[0-9a-f]{6})\"");
  const std::regex dash("<polyline [^>]*stroke-dasharray=\"([^\"]*)\"");
  const std::regex shape("class=\"marker ([a-z-]+)");
  for (std::sregex_iterator it(panel.begin(), panel.end(), group), end; it != end; ++it) {
    const std::string body = (*it)[1];
    std::smatch s, d, m;
    std::regex_search(body, s, stroke);
    std::regex_search(body, m, shape);
    const bool dashed = std::regex_search(body, d, dash);
    out.emplace_back(s[1], dashed ? d[1].str() : "solid", m[1]);
  }
  return out;
}

TEST(ReportSvgPanels, CpuPanelBesideMpps) {
  const std::vector<BenchPoint> v = {point("busylock", 1, 2, 300), point("busylock", 4, 3, 450),
                                     point("drainer", 1, 4, 120), point("drainer", 4, 8, 90)};
  const std::string svg = render_svg(v, "t");
  const std::string cpu = between(svg, "<g class=\"panel cpu\">", "<g class=\"legend\">");
  ASSERT_FALSE(cpu.empty()) << svg;
  EXPECT_NE(cpu.find(">CPU ns/pkt</text>"), std::string::npos) << "its axis title";
  EXPECT_EQ(count(cpu, "<polyline"), 2u) << "a line per series";
  EXPECT_NE(cpu.find(">500</text>"), std::string::npos) << "its y axis spans the CPU figures (to 500)";
  EXPECT_NE(svg.find(">Mpps</text>"), std::string::npos);
}

TEST(ReportSvgPanels, EverySeriesHasItsOwnColourDashAndShape) {
  // The default strategy list: drainer/sharded and mutex/nolock were hard to tell apart.
  const std::vector<std::string> names = {"floor", "busylock", "rootlock", "llist", "mutex", "nolock",
                                          "combining", "drainer", "sharded", "peer:ck_ring", "peer:mutex_deque"};
  std::vector<BenchPoint> v;
  for (const auto& n : names) v.push_back(point(n, 1, 1));
  const auto s = styles(render_svg(v, "styles"));
  ASSERT_EQ(s.size(), names.size());
  EXPECT_EQ(std::set(s.begin(), s.end()).size(), s.size()) << "no two series look alike";
  for (std::size_t i = 0; i < s.size(); ++i) {
    for (std::size_t j = i + 1; j < s.size(); ++j) {
      const int same = (std::get<0>(s[i]) == std::get<0>(s[j])) + (std::get<1>(s[i]) == std::get<1>(s[j])) +
                       (std::get<2>(s[i]) == std::get<2>(s[j]));
      EXPECT_EQ(same, 0) << names[i] << " vs " << names[j] << ": the first 11 differ in all three";
    }
  }
  // Past the first 11: two series still differ in at least two of the three.
  std::vector<BenchPoint> many;
  for (int i = 0; i < 60; ++i) many.push_back(point("s" + std::to_string(i), 1, 1));
  const auto m = styles(render_svg(many, "many"));
  ASSERT_EQ(m.size(), 60u);
  for (std::size_t i = 0; i < m.size(); ++i)
    for (std::size_t j = i + 1; j < m.size(); ++j)
      EXPECT_LE((std::get<0>(m[i]) == std::get<0>(m[j])) + (std::get<1>(m[i]) == std::get<1>(m[j])) +
                    (std::get<2>(m[i]) == std::get<2>(m[j])),
                1)
          << i << " vs " << j;
}

TEST(ReportSvgPanels, ConfidenceIntervalsFromTheRoundsSamples) {
  BenchPoint p = point("busylock", 1, 2);
  p.mpps_samples = {1, 2, 3};  // mean 2, sd 1: 2 +- 4.303 / sqrt(3) = [0 (clipped), 4.48]
  p.cpu_samples = {100, 100, 100};  // no spread: no bar
  const std::string svg = render_svg({p, point("busylock", 2, 2)}, "ci");
  const std::string mpps = between(svg, "<g class=\"panel mpps\">", "<g class=\"panel cpu\">");
  const std::string cpu = between(svg, "<g class=\"panel cpu\">", "<g class=\"legend\">");
  EXPECT_EQ(count(mpps, "class=\"whisker\""), 3u) << "one bar (a line and two caps)";
  EXPECT_EQ(count(cpu, "class=\"whisker\""), 0u);
  EXPECT_NE(mpps.find(">5</text>"), std::string::npos) << "the y axis reaches the CI's top (4.48)";
  EXPECT_NE(svg.find("bars: 95% CI of the mean over rounds"), std::string::npos);
  EXPECT_EQ(svg.find("min-max"), std::string::npos);
  // Without samples, min-max as before.
  BenchPoint spread = point("busylock", 1, 2);
  spread.mpps_min = 1;
  spread.mpps_max = 3;
  EXPECT_NE(render_svg({spread}, "mm").find("bars: min-max over repeats"), std::string::npos);
}

TEST(ReportSvgPanels, DroppedPointsAreHollowAndLabelled) {
  BenchPoint lossy = point("peer:mutex_deque", 2, 5);
  lossy.dropped = 985;
  lossy.sent = 15;
  const std::string svg = render_svg({point("busylock", 2, 1), lossy}, "drops");
  EXPECT_EQ(count(svg, " dropped\""), 2u) << "a hollow marker in each panel";
  EXPECT_NE(svg.find("fill=\"#ffffff\""), std::string::npos);
  EXPECT_EQ(count(svg, ">99% dropped</text>"), 1u) << "labelled in the Mpps panel: " << svg;
  EXPECT_NE(svg.find("hollow: &gt;= 50% of the offered load dropped"), std::string::npos);
  const std::string clean = render_svg({point("busylock", 2, 1)}, "clean");
  EXPECT_EQ(clean.find("dropped"), std::string::npos);
}

TEST(ReportSvgPanels, ProvenanceLineIsEscaped) {
  const std::string svg =
      render_svg({point("busylock", 1, 1)}, "t", "txpath v1 <b>&amp;\" \x01host 2026-12-03");
  const std::string line = between(svg, "class=\"provenance\"", "</text>");
  ASSERT_FALSE(line.empty()) << svg;
  EXPECT_NE(line.find(">txpath v1 &lt;b&gt;&amp;amp;&quot; host 2026-12-03"), std::string::npos) << line;
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(render_svg({point("busylock", 1, 1)}, "t").find("provenance"), std::string::npos)
      << "no line when empty";
  EXPECT_NE(render_svg({}, "none", "txpath host").find(">txpath host</text>"), std::string::npos)
      << "the no-data chart has it too";
}

}  // namespace
}  // namespace txpath
