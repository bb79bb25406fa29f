// SPDX-License-Identifier: MIT
// The machine's limit for a contended TX queue (issue 32, the `limit` row): two threads pinned on
// two CPUs handing one cache line, and one test-and-set lock, back and forth. What one hand-off
// costs is the least any strategy pays per packet when two senders on those CPUs share a queue:
// the qdisc's head, its lock and the RUNNING bit must each cross between the CPUs at least once
// a packet. docs/bench.md ("The limit row") says how it is measured and read.
#pragma once

#include <chrono>
#include <cstdint>

namespace txpath::bench_detail {

struct HandoffCost {
  int cpu_a = -1, cpu_b = -1;  // where the two threads ran (-1: not pinned)
  uint64_t line_handoffs = 0;  // times the line went from one thread to the other
  double line_ns = 0;          // ns per line hand-off: elapsed / line_handoffs
  uint64_t lock_handoffs = 0;  // acquisitions by the thread that did not hold it last (each
                               // holder gives it back at once and waits for the other's turn)
  uint64_t lock_acquisitions = 0;
  double lock_ns = 0;          // ns per lock hand-off: elapsed / lock_handoffs
};

// Runs the two measurements one after the other, each for `duration`, with the two threads on
// `cpu_a` and `cpu_b` (-1: wherever the scheduler puts them; then the figures mean little). A
// hand-off count of 0 (a thread never ran: one CPU, or it was preempted all along) leaves its
// ns at 0. Never blocks past 2 x duration plus the threads' start.
HandoffCost measure_handoff(int cpu_a, int cpu_b, std::chrono::nanoseconds duration);

}  // namespace txpath::bench_detail
