// SPDX-License-Identifier: MIT
// A BenchPoint whose round statistics are filled with known values, as the bench fills them after
// three rounds: for the JSON and CSV tests (the values are exact in binary, so they read back
// equal).
#pragma once

#include "bench/bench.hpp"

namespace txpath::test {

inline BenchPoint with_statistics(BenchPoint p) {
  p.vs_busylock_mpps = 1.5;
  p.vs_busylock_cpu = 0.75;
  p.vs_floor_cpu = 4;
  p.vs_kernel_mpps = 2;
  p.vs_kernel_cpu = 0.5;
  p.mpps_samples = {2.5, 3, 3.5};
  p.cpu_samples = {310, 300, 290};
  p.noise_samples = {{0.5, 10}, {2, 5}, {0, 40}};
  p.mpps_cv = 0.1667;
  p.cpu_cv = 0.0333;
  p.vs_busylock_mpps_ci95 = {1.25, 1.75};
  p.vs_busylock_cpu_ci95 = {0.5, 1};
  p.vs_floor_cpu_ci95 = {3, 5};
  p.vs_kernel_mpps_ci95 = {1.5, 2.5};
  p.vs_kernel_cpu_ci95 = {0.25, 0.75};
  p.unstable = true;
  p.unstable_reason = "bimodal: 1.4 vs 9.1 Mpps, cv 23%";
  p.noise = {2, 40};
  p.advised_repeat = 9;
  return p;
}

}  // namespace txpath::test
