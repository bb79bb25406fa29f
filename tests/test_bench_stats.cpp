// SPDX-License-Identifier: MIT
// The bench's statistics over rounds, against samples with known answers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "bench/bench.hpp"
#include "bench/noise.hpp"
#include "bench/stats.hpp"

namespace txpath {
namespace {

using namespace bench_stats;

TEST(BenchStats, MeanStddevAndCv) {
  const std::vector<double> xs = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(xs), 5.0);
  EXPECT_NEAR(stddev(xs), 2.13809, 1e-5) << "sample (n - 1) standard deviation: sqrt(32 / 7)";
  EXPECT_NEAR(cv(xs), 2.13809 / 5, 1e-5);
  EXPECT_EQ(cv(std::vector<double>{3.0}), 0.0) << "one sample: no spread known";
  EXPECT_EQ(cv(std::vector<double>{0.0, 0.0}), 0.0) << "mean 0: no ratio";
}

TEST(BenchStats, StudentTQuantiles) {
  EXPECT_DOUBLE_EQ(t975(1), 12.706);
  EXPECT_DOUBLE_EQ(t975(4), 2.776);
  EXPECT_DOUBLE_EQ(t975(30), 2.042);
  EXPECT_NEAR(t975(31), 2.0395, 1e-3);
  EXPECT_NEAR(t975(60), 2.0003, 1e-3);
  EXPECT_NEAR(t975(120), 1.9799, 1e-3);
  EXPECT_NEAR(t975(100000), 1.96, 1e-3);
}

TEST(BenchStats, ConfidenceIntervalOfAKnownSample) {
  // mean 3, s = sqrt(2.5), t(4) = 2.776: 3 +- 2.776 * 1.5811 / sqrt(5) = 3 +- 1.9629.
  const Interval95 ci = ci95_mean(std::vector<double>{1, 2, 3, 4, 5});
  EXPECT_NEAR(ci.lo, 1.0371, 1e-3);
  EXPECT_NEAR(ci.hi, 4.9629, 1e-3);
  const Interval95 none = ci95_mean(std::vector<double>{7});
  EXPECT_EQ(none.lo, 0.0);
  EXPECT_EQ(none.hi, 0.0);
}

TEST(BenchStats, PairedRatioTakesEachRoundOverItsReference) {
  // Every round's ratio is 2 however the rounds drift: the CI is exactly [2, 2], where the
  // ratio of unpaired means would carry the drift.
  const Interval95 exact = paired_ratio_ci95(std::vector<double>{2, 8, 20}, std::vector<double>{1, 4, 10});
  EXPECT_DOUBLE_EQ(exact.lo, 2.0);
  EXPECT_DOUBLE_EQ(exact.hi, 2.0);
  // A round where either has no figure is left out: ratios {2, 3}, mean 2.5, s 0.7071, t(1).
  const Interval95 two = paired_ratio_ci95(std::vector<double>{2, 3, 0}, std::vector<double>{1, 1, 1});
  EXPECT_NEAR(two.lo, 2.5 - 6.353, 1e-3);
  EXPECT_NEAR(two.hi, 2.5 + 6.353, 1e-3);
  const Interval95 one = paired_ratio_ci95(std::vector<double>{2, 3}, std::vector<double>{1, 0});
  EXPECT_EQ(one.hi, 0.0) << "one usable round: no interval";
}

TEST(BenchStats, BimodalRoundsAreTwoModes) {
  const Modes three = find_modes(std::vector<double>{1.40, 6.90, 1.42});
  EXPECT_TRUE(three.bimodal);
  EXPECT_NEAR(three.low, 1.41, 1e-9);
  EXPECT_NEAR(three.high, 6.90, 1e-9);
  EXPECT_TRUE(find_modes(std::vector<double>{1.3, 9.1, 1.31, 9.0, 1.29}).bimodal);
  std::vector<double> twenty;
  for (int i = 0; i < 10; ++i) {
    twenty.push_back(1.0 + 0.001 * i);
    twenty.push_back(2.0 + 0.001 * i);
  }
  EXPECT_TRUE(find_modes(twenty).bimodal);
  EXPECT_TRUE(find_modes(std::vector<double>{1.4, 9.1}).bimodal) << "two rounds far apart disagree";
}

TEST(BenchStats, SpreadWithoutAGapIsNotBimodal) {
  EXPECT_FALSE(find_modes(std::vector<double>{5.0, 5.1, 5.2, 5.3}).bimodal);
  EXPECT_FALSE(find_modes(std::vector<double>{1.0, 1.5, 2.0}).bimodal) << "gap 0.5 = the spread";
  EXPECT_FALSE(find_modes(std::vector<double>{1.0, 1.0, 1.0}).bimodal);
  EXPECT_FALSE(find_modes(std::vector<double>{1.00, 1.00, 1.01}).bimodal) << "a gap of 1% is noise";
  EXPECT_FALSE(find_modes(std::vector<double>{4.2}).bimodal);
  EXPECT_FALSE(find_modes(std::vector<double>{}).bimodal);
}

TEST(BenchStats, UnstableAboveTheCvThreshold) {
  // {a - d, a, a + d}: stddev d, cv d / a.
  const Verdict below = judge(std::vector<double>{9.1, 10, 10.9}, std::vector<double>{100, 100, 100});
  EXPECT_FALSE(below.unstable) << "cv 9%";
  EXPECT_EQ(below.reason, "");
  const Verdict above = judge(std::vector<double>{8.9, 10, 11.1}, std::vector<double>{100, 100, 100});
  EXPECT_TRUE(above.unstable);
  EXPECT_EQ(above.reason, "Mpps cv 11%");
  const Verdict cpu = judge(std::vector<double>{10, 10, 10}, std::vector<double>{80, 100, 120});
  EXPECT_TRUE(cpu.unstable);
  EXPECT_EQ(cpu.reason, "CPU cv 20%");
  const Verdict modes = judge(std::vector<double>{1.4, 6.9, 1.42}, std::vector<double>{100, 100, 100});
  EXPECT_TRUE(modes.unstable);
  EXPECT_EQ(modes.reason, "bimodal: 1.41 vs 6.90 Mpps");
}

TEST(BenchStats, AdvisedRepeatBringsTheCiWithinFivePercent) {
  // cv 5%: the first n with t(n - 1) <= sqrt(n) is 7 (2.447 <= 2.646; n = 6: 2.571 > 2.449).
  EXPECT_EQ(advised_repeat(0.05), 7);
  // cv 2%: n = 3 (4.303 * 0.02 / sqrt(3) = 0.0497).
  EXPECT_EQ(advised_repeat(0.02), 3);
  EXPECT_EQ(advised_repeat(0.0), 0) << "no spread known";
  EXPECT_EQ(advised_repeat(1.0), 1000) << "capped at --repeat's limit";
}

TEST(BenchStats, RowStatisticsFromSamples) {
  BenchPoint p;
  p.runs = 3;
  p.mpps_samples = {1.40, 6.90, 1.42};
  p.cpu_samples = {700, 150, 690};
  p.noise_samples = {{1, 30}, {4, 2}, {0, 12}};
  fill_row_statistics(p);
  EXPECT_TRUE(p.unstable);
  EXPECT_EQ(p.unstable_reason, "bimodal: 1.41 vs 6.90 Mpps");
  EXPECT_NEAR(p.mpps_cv, cv(p.mpps_samples), 1e-12);
  EXPECT_GT(p.cpu_cv, 0.5);
  EXPECT_DOUBLE_EQ(p.noise.steal_pct, 4);
  EXPECT_DOUBLE_EQ(p.noise.other_cpu_pct, 30);
  EXPECT_EQ(p.advised_repeat, advised_repeat(p.mpps_cv));
}

TEST(BenchStats, NoiseBetweenTwoReadings) {
  const double tick_ns = 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  bench_detail::MachineSample a, b;
  a.ok = b.ok = true;
  // 2 CPUs for 100 ticks each; 120 busy of which 10 stolen; this process used 50 ticks' worth.
  a.total_ticks = 1000, b.total_ticks = 1200;
  a.busy_ticks = 300, b.busy_ticks = 420;
  a.steal_ticks = 5, b.steal_ticks = 15;
  a.process_cpu_ns = 0, b.process_cpu_ns = static_cast<uint64_t>(50 * tick_ns);
  const BenchNoise n = bench_detail::noise_between(a, b);
  EXPECT_NEAR(n.steal_pct, 5.0, 1e-9);
  EXPECT_NEAR(n.other_cpu_pct, 30.0, 1e-9) << "(120 - 10 - 50) / 200";
  b.process_cpu_ns = static_cast<uint64_t>(200 * tick_ns);  // more than busy: tick rounding
  EXPECT_EQ(bench_detail::noise_between(a, b).other_cpu_pct, 0.0);
  b.ok = false;
  EXPECT_EQ(bench_detail::noise_between(a, b).steal_pct, 0.0) << "unreadable: no noise";
  EXPECT_TRUE(bench_detail::sample_machine().ok) << "/proc/stat is readable here";
}

BenchPoint row(std::string strategy, int runs, std::vector<double> mpps) {
  BenchPoint p;
  p.strategy = std::move(strategy);
  p.threads = 2;
  p.runs = runs;
  p.mpps_samples = std::move(mpps);
  p.cpu_samples = std::vector<double>(p.mpps_samples.size(), 100);
  p.noise_samples = std::vector<BenchNoise>(p.mpps_samples.size());
  bench_stats::fill_row_statistics(p);
  return p;
}

bool has_line(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

TEST(BenchStats, WarningsNameNoiseUnstableRowsAndTheRepeatToUse) {
  EXPECT_TRUE(bench_warnings({row("busylock", 3, {5.0, 5.0, 5.0})}).empty()) << "a quiet, stable run";
  BenchPoint noisy = row("busylock", 3, {5.0, 5.0, 5.0});
  noisy.noise = {0, 35};
  const auto busy = bench_warnings({noisy});
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_NE(busy[0].find("busy while 1 of 1 rows"), std::string::npos) << busy[0];
  EXPECT_NE(busy[0].find("up to 35%"), std::string::npos) << busy[0];
  const auto split = bench_warnings({row("rootlock", 3, {1.4, 6.9, 1.42})});
  EXPECT_TRUE(has_line(split, "unstable: rootlock threads=2 park=on: the rounds disagree (bimodal: 1.41 vs 6.90 Mpps)"));
  const auto spread = bench_warnings({row("mutex", 3, {4.6, 5.0, 5.4})});  // cv 8%: stable
  EXPECT_FALSE(has_line(spread, "unstable"));
  EXPECT_TRUE(has_line(spread, "--repeat " + std::to_string(advised_repeat(cv(std::vector<double>{4.6, 5.0, 5.4}))) +
                                   " would bring every row's Mpps 95% CI within +-5%"));
  EXPECT_TRUE(has_line(bench_warnings({row("busylock", 1, {5.0})}), "one round per row"));
}

}  // namespace
}  // namespace txpath
