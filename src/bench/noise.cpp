// SPDX-License-Identifier: MIT
#include "bench/noise.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace txpath::bench_detail {

MachineSample sample_machine() noexcept {
  MachineSample s;
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  s.process_cpu_ns = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
  std::FILE* f = std::fopen("/proc/stat", "re");
  if (!f) return s;
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice": guest time is
  // counted in user and nice already, so the first eight are the whole.
  unsigned long long v[8] = {};
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                            &v[3], &v[4], &v[5], &v[6], &v[7]);
  std::fclose(f);
  if (n < 8) return s;
  for (const auto x : v) s.total_ticks += x;
  s.busy_ticks = s.total_ticks - v[3] - v[4];
  s.steal_ticks = v[7];
  s.ok = true;
  return s;
}

BenchNoise noise_between(const MachineSample& start, const MachineSample& end) noexcept {
  if (!start.ok || !end.ok || end.total_ticks <= start.total_ticks) return {};
  const long hz = ::sysconf(_SC_CLK_TCK);
  const double ns_per_tick = 1e9 / static_cast<double>(hz > 0 ? hz : 100);
  const double total_ns = static_cast<double>(end.total_ticks - start.total_ticks) * ns_per_tick;
  const double steal_ns = static_cast<double>(end.steal_ticks - start.steal_ticks) * ns_per_tick;
  const double busy_ns = static_cast<double>(end.busy_ticks - start.busy_ticks) * ns_per_tick;
  const double own_ns = static_cast<double>(end.process_cpu_ns - start.process_cpu_ns);
  BenchNoise noise;
  noise.steal_pct = std::clamp(100.0 * steal_ns / total_ns, 0.0, 100.0);
  noise.other_cpu_pct = std::clamp(100.0 * (busy_ns - steal_ns - own_ns) / total_ns, 0.0, 100.0);
  return noise;
}

}  // namespace txpath::bench_detail
