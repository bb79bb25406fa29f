// SPDX-License-Identifier: MIT
// Statistics over a bench row's rounds: coefficient of variation, Student-t 95% confidence
// intervals (of a mean, and of a ratio taken round by round), the rule that calls a row's rounds
// in disagreement (bimodal, or too spread), and the number of rounds that would pin a row down.
// Pure functions over samples, so that they can be checked against known answers.
#pragma once

#include <span>
#include <string>

#include "bench/bench.hpp"

namespace txpath::bench_stats {

// A row is unstable when its Mpps or CPU-per-packet coefficient of variation is above this
// (10%, the level above which pyperf calls a result unstable).
inline constexpr double kUnstableCv = 0.10;
// Two groups of rounds are two modes when the gap between them is at least this much of the
// lower group's mean (20%) ...
inline constexpr double kModeGapRelative = 0.20;
// ... and at least this many times the wider group's own range.
inline constexpr double kModeGapOverSpread = 3.0;
// advised_repeat() aims at a 95% CI of the mean within +-5%.
inline constexpr double kTargetHalfWidth = 0.05;
// Noise during a window above which bench_warnings() warns: % of the whole machine's CPU.
inline constexpr double kNoisyOtherCpuPct = 10.0;
inline constexpr double kNoisyStealPct = 5.0;

double mean(std::span<const double> xs);
// The sample standard deviation (n - 1); 0 for fewer than two samples.
double stddev(std::span<const double> xs);
// stddev / mean; 0 for fewer than two samples or a mean of 0.
double cv(std::span<const double> xs);
// The two-sided 95% quantile of Student's t with `dof` degrees of freedom (dof >= 1): a table up
// to 30, then the Cornish-Fisher expansion around the normal's 1.96.
double t975(int dof);
// mean +- t975(n - 1) * stddev / sqrt(n); {0, 0} for fewer than two samples.
Interval95 ci95_mean(std::span<const double> xs);
// The 95% CI of the mean of mine[i] / ref[i] over the rounds both have with both > 0 (a
// round without packets has no figure); {0, 0} for fewer than two such rounds.
Interval95 paired_ratio_ci95(std::span<const double> mine, std::span<const double> ref);

// The split of the samples into two modes, when there are two: the rounds sorted, cut at the
// widest gap between neighbours; two modes when the gap is at least kModeGapRelative of the
// lower group's mean and kModeGapOverSpread times the wider group's range (one round alone is a
// group of range 0). Works from 2 samples up.
struct Modes {
  bool bimodal = false;
  double low = 0;   // the lower group's mean
  double high = 0;  // the higher group's mean
};
Modes find_modes(std::span<const double> xs);

// Whether a row's rounds disagree, and the one short phrase saying how ("bimodal: 1.40 vs 9.10
// Mpps", "Mpps cv 23%", "CPU cv 15%"); reason empty when they agree.
struct Verdict {
  bool unstable = false;
  std::string reason;
};
Verdict judge(std::span<const double> mpps, std::span<const double> cpu_ns_per_pkt);

// The fewest rounds (2..1000) whose 95% CI half-width, t975(n - 1) * cv / sqrt(n), is within
// kTargetHalfWidth; 0 when cv is 0 or unknown (fewer than two rounds).
int advised_repeat(double cv);

// Fills p's statistics from its samples (mpps_samples, cpu_samples, noise_samples): mpps_cv,
// cpu_cv, unstable and its reason, noise (each field's worst), advised_repeat. The ratio CIs
// need the reference rows: see paired_ratio_ci95.
void fill_row_statistics(BenchPoint& p);

}  // namespace txpath::bench_stats
