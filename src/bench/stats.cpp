// SPDX-License-Identifier: MIT
#include "bench/stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

namespace txpath::bench_stats {

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string percent(double fraction) { return fixed(100.0 * fraction, 0) + "%"; }

}  // namespace

double mean(std::span<const double> xs) {
  if (xs.empty()) return 0;
  double sum = 0;
  for (const double x : xs) sum += x;
  return sum / static_cast<double>(xs.size());
}

double stddev(std::span<const double> xs) {
  if (xs.size() < 2) return 0;
  const double m = mean(xs);
  double sq = 0;
  for (const double x : xs) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(xs.size() - 1));
}

double cv(std::span<const double> xs) {
  const double m = mean(xs);
  return xs.size() < 2 || m == 0 ? 0 : stddev(xs) / std::fabs(m);
}

double t975(int dof) {
  // Student's t, two-sided 95% (the 0.975 quantile), for 1..30 degrees of freedom.
  static constexpr std::array<double, 30> kTable = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1) return 0;
  if (dof <= 30) return kTable[static_cast<std::size_t>(dof - 1)];
  // Cornish-Fisher: t = z + (z^3 + z) / 4v + (5z^5 + 16z^3 + 3z) / 96v^2, within 1e-3 from 30 up.
  constexpr double z = 1.959964;
  const double v = dof;
  return z + (z * z * z + z) / (4 * v) +
         (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

Interval95 ci95_mean(std::span<const double> xs) {
  if (xs.size() < 2) return {};
  const double m = mean(xs);
  const double half = t975(static_cast<int>(xs.size()) - 1) * stddev(xs) /
                      std::sqrt(static_cast<double>(xs.size()));
  return {m - half, m + half};
}

Interval95 paired_ratio_ci95(std::span<const double> mine, std::span<const double> ref) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < std::min(mine.size(), ref.size()); ++i)
    if (mine[i] > 0 && ref[i] > 0) ratios.push_back(mine[i] / ref[i]);
  return ci95_mean(ratios);
}

Modes find_modes(std::span<const double> xs) {
  if (xs.size() < 2) return {};
  std::vector<double> sorted(xs.begin(), xs.end());
  std::sort(sorted.begin(), sorted.end());
  std::size_t cut = 1;  // the high group starts here
  for (std::size_t i = 2; i < sorted.size(); ++i)
    if (sorted[i] - sorted[i - 1] > sorted[cut] - sorted[cut - 1]) cut = i;
  const std::span<const double> low(sorted.data(), cut);
  const std::span<const double> high(sorted.data() + cut, sorted.size() - cut);
  const double gap = sorted[cut] - sorted[cut - 1];
  const double spread = std::max(low.back() - low.front(), high.back() - high.front());
  Modes m;
  m.low = mean(low);
  m.high = mean(high);
  m.bimodal = m.low > 0 && gap >= kModeGapRelative * m.low && gap >= kModeGapOverSpread * spread;
  return m;
}

Verdict judge(std::span<const double> mpps, std::span<const double> cpu_ns_per_pkt) {
  if (const Modes m = find_modes(mpps); m.bimodal)
    return {true, "bimodal: " + fixed(m.low, 2) + " vs " + fixed(m.high, 2) + " Mpps"};
  if (const Modes m = find_modes(cpu_ns_per_pkt); m.bimodal)
    return {true, "bimodal: " + fixed(m.low, 0) + " vs " + fixed(m.high, 0) + " CPU ns/pkt"};
  if (const double c = cv(mpps); c > kUnstableCv) return {true, "Mpps cv " + percent(c)};
  if (const double c = cv(cpu_ns_per_pkt); c > kUnstableCv) return {true, "CPU cv " + percent(c)};
  return {};
}

int advised_repeat(double c) {
  if (!(c > 0)) return 0;
  constexpr int kMaxRepeat = 1000;  // BenchConfig::repeat's bound
  for (int n = 2; n < kMaxRepeat; ++n)
    if (t975(n - 1) * c / std::sqrt(static_cast<double>(n)) <= kTargetHalfWidth) return n;
  return kMaxRepeat;
}

void fill_row_statistics(BenchPoint& p) {
  p.mpps_cv = cv(p.mpps_samples);
  p.cpu_cv = cv(p.cpu_samples);
  const Verdict v = judge(p.mpps_samples, p.cpu_samples);
  p.unstable = v.unstable;
  p.unstable_reason = v.reason;
  p.noise = {};
  for (const BenchNoise& n : p.noise_samples) {
    p.noise.steal_pct = std::max(p.noise.steal_pct, n.steal_pct);
    p.noise.other_cpu_pct = std::max(p.noise.other_cpu_pct, n.other_cpu_pct);
  }
  p.advised_repeat = advised_repeat(p.mpps_cv);
}

}  // namespace txpath::bench_stats

namespace txpath {

namespace {

std::string row_name(const BenchPoint& p) {
  std::string name = p.strategy + " threads=" + std::to_string(p.threads);
  if (p.queues != 1) name += " queues=" + std::to_string(p.queues);
  return name + " park=" + park_name(p.park);
}

}  // namespace

std::vector<std::string> bench_warnings(const std::vector<BenchPoint>& points) {
  using bench_stats::fixed;
  std::vector<std::string> out;
  BenchNoise worst;
  std::size_t noisy = 0;
  for (const BenchPoint& p : points) {
    worst.steal_pct = std::max(worst.steal_pct, p.noise.steal_pct);
    worst.other_cpu_pct = std::max(worst.other_cpu_pct, p.noise.other_cpu_pct);
    noisy += p.noise.other_cpu_pct > bench_stats::kNoisyOtherCpuPct ||
             p.noise.steal_pct > bench_stats::kNoisyStealPct;
  }
  if (noisy > 0)
    out.push_back("the machine was busy while " + std::to_string(noisy) + " of " +
                  std::to_string(points.size()) + " rows ran (other processes used up to " +
                  fixed(worst.other_cpu_pct, 0) + "% of its CPU, the hypervisor stole up to " +
                  fixed(worst.steal_pct, 0) + "%): their numbers are noisy; measure on an idle machine");
  constexpr std::size_t kListed = 8;  // unstable rows named one per line, the rest counted
  std::size_t unstable = 0;
  for (const BenchPoint& p : points) {
    if (!p.unstable) continue;
    if (++unstable <= kListed)
      out.push_back("unstable: " + row_name(p) + ": the rounds disagree (" + p.unstable_reason + ")");
  }
  if (unstable > kListed)
    out.push_back("unstable: " + std::to_string(unstable - kListed) + " more row(s)");
  // More rounds narrow a spread, not two modes: bimodal rows are left out of the advice.
  const BenchPoint* widest = nullptr;
  for (const BenchPoint& p : points)
    if (p.advised_repeat > p.runs && p.unstable_reason.rfind("bimodal", 0) != 0 && (!widest || p.advised_repeat > widest->advised_repeat)) widest = &p;
  if (widest) {
    const double half = bench_stats::t975(widest->runs - 1) * widest->mpps_cv /
                        std::sqrt(static_cast<double>(widest->runs));
    out.push_back("--repeat " + std::to_string(widest->advised_repeat) +
                  " would bring every row's Mpps 95% CI within +-5% (widest now: " +
                  row_name(*widest) + ", +-" + fixed(100 * half, 0) + "% over " +
                  std::to_string(widest->runs) + " rounds)");
  }
  if (!points.empty() && std::all_of(points.begin(), points.end(), [](const BenchPoint& p) { return p.runs < 2; }))
    out.push_back("one round per row: its spread is unknown (--repeat 3 or more gives confidence intervals)");
  return out;
}

}  // namespace txpath
