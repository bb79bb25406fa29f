// SPDX-License-Identifier: MIT
// How a row runs and measures its senders (private to src/bench, for row_*.cpp): each sender's
// state (Sender), the flags the senders poll (RunFlags), one run's measured window (Window,
// measure()) and the figures taken from it, the summary of a run on TX queues; and the senders'
// frames and pace (pacing.cpp). Pinning, stop-aware sleeps and the summary: measure.cpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "base/clock.hpp"
#include "bench/bench_internal.hpp"
#include "bench/live.hpp"
#include "bench/noise.hpp"
#include "bench/pacer.hpp"
#include "bench/traffic.hpp"
#include "txpath/histogram.hpp"
#include "txpath/netdev.hpp"
#include "txpath/packet.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::bench_detail {

inline constexpr uint64_t kLatencySampleEvery = 64;  // one send() in 64 is timed

// The CPU time of the whole process (every thread), ns.
uint64_t process_cpu_ns();

// Sender i's CPU: round-robin over the nodes in use (spread), then over that node's cores.
int cpu_for_sender(int i, int nodes_in_use);

// The CPUs senders 0 .. threads - 1 are pinned to (each once); empty when they are not pinned.
std::vector<unsigned> sender_cpus(const BenchConfig& cfg, int threads);

// Pins the calling thread to `cpu`, best effort; a negative cpu: no pinning.
void pin_to(int cpu);

// Jain's fairness index of `xs` (1: all equal); 0 when empty or all 0.
double jain_index(const std::vector<uint64_t>& xs);

// Sleeps for `d`, waking early when a stop is requested; false if it woke early.
bool sleep_unless_stopped(const BenchConfig& cfg, std::chrono::duration<double> d);

// Per-sender state, each starting on its own cache line (what a sender writes per packet, its
// counters, shares the first line; its latency histogram, written once per 64 packets, follows).
struct alignas(64) Sender {
  uint64_t accepted_in_window = 0;  // queued or congested (kernel row: sent) while measuring
  // The kernel row's totals, the floor row's submitted and dropped, peer:dpdk's submitted
  // (txpath's rows read the queue's counters instead). relaxed (all three): owner-written
  // counters, read by the main thread at the window edges; the join orders the end.
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> submitted{0};
  LatencyHistogram latency;  // sampled send() ns

  // Calls send(), which hands over the `n` packets from number `seq` on; while the window is
  // open, times it when one of them is a multiple of kLatencySampleEvery (one packet in that
  // many, one call in that many for n = 1) and stamps that packet's sent_stamp (`packets`: the
  // n packets, when there are Packets; their stamps are 0 otherwise, see SenderTraffic::write)
  // for the device's departure log.
  template <class Send>
  auto timed(bool window, uint64_t seq, Send&& send, uint64_t n = 1, Packet* const* packets = nullptr) {
    const uint64_t k = (seq + kLatencySampleEvery - 1) / kLatencySampleEvery * kLatencySampleEvery - seq;
    if (!window || k >= n) return send();
    const uint64_t t0 = now_ns();
    if (packets != nullptr) packets[k]->sent_stamp = std::max<uint32_t>(1, static_cast<uint32_t>(t0));
    auto result = send();
    latency.record(now_ns() - t0);
    return result;
  }
};

// `threads` senders' state, zeroed.
std::vector<Sender> make_senders(int threads);

// What one run's senders poll. relaxed (every access): flags that only steer the loops and a
// start-up head count; the join orders the senders' results before the main thread reads them.
struct RunFlags {
  std::atomic<bool> stop{false};
  std::atomic<bool> measuring{false};
  std::atomic<int> ready{0};

  void started() noexcept { ready.fetch_add(1, std::memory_order_relaxed); }  // relaxed: above
  bool running() const noexcept { return !stop.load(std::memory_order_relaxed); }
  bool in_window() const noexcept { return measuring.load(std::memory_order_relaxed); }
};

// The measured window of one run: the run's counters (a sample at each edge) and the process CPU
// time at its edges, less the sink's (the sink's CPU is not ours).
template <class Counters>
struct Window {
  Counters start{}, end{};
  uint64_t cpu0 = 0, cpu1 = 0;
  bench_detail::MachineSample machine0, machine1;  // the whole machine's CPU time at the edges
  std::chrono::steady_clock::duration length{};
  bool whole = true;  // false: a stop cut the run short
};

// Sleeps through a measured window that opened with `start` sampled; with BenchConfig::on_interval,
// wakes at each slice's end to sample and report it. False if a stop cut the window short.
template <class Counters, class Sample>
bool sleep_through_window(const BenchConfig& cfg, const Counters& start, Sample& sample) {
  bench_detail::IntervalClock clock(cfg, bench_detail::interval_counts(start));
  if (!clock.enabled()) return sleep_unless_stopped(cfg, std::chrono::duration<double>(cfg.duration_s));
  for (auto end = clock.next_end();;) {
    if (!sleep_unless_stopped(cfg, end - std::chrono::steady_clock::now())) return false;
    clock.tick(bench_detail::interval_counts(sample()));
    const auto next = clock.next_end();
    if (next <= end) return true;  // that was the window's last slice
    end = next;
  }
}

// One run, for txpath's rows and the kernel row alike: starts `threads` senders (pinned when
// cfg.pin), each running send_loop(t, flags) (which calls flags.started() once it is set up, then
// sends while flags.running()); once all have started, warms up, measures for cfg.duration_s with
// `sample()` at both edges, then stops and joins the senders.
template <class SendLoop, class Sample>
auto measure(const BenchConfig& cfg, int threads, const Delivery& delivery, SendLoop&& send_loop,
             Sample&& sample) {
  Window<std::invoke_result_t<Sample&>> w;
  RunFlags flags;
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      if (cfg.pin) pin_to(cpu_for_sender(t, cfg.nodes));
      send_loop(t, flags);
    });
  }
  // relaxed (ready, measuring, stop): see RunFlags.
  while (flags.ready.load(std::memory_order_relaxed) < threads) std::this_thread::yield();
  const auto warmup = std::chrono::duration<double>(std::min(0.2, cfg.duration_s * 0.1));
  w.whole = sleep_unless_stopped(cfg, warmup);
  flags.measuring.store(true, std::memory_order_relaxed);
  w.start = sample();
  w.cpu0 = process_cpu_ns() - delivery.cpu_ns();
  w.machine0 = bench_detail::sample_machine();
  const auto t0 = std::chrono::steady_clock::now();
  w.whole = w.whole && sleep_through_window(cfg, w.start, sample);
  w.end = sample();
  w.cpu1 = process_cpu_ns() - delivery.cpu_ns();
  w.machine1 = bench_detail::sample_machine();
  w.length = std::chrono::steady_clock::now() - t0;
  flags.measuring.store(false, std::memory_order_relaxed);
  flags.stop.store(true, std::memory_order_relaxed);
  for (auto& worker : workers) worker.join();
  return w;
}

// The rates of a run over its window (`window_sent` packets), and what its senders saw: fairness
// of the sends accepted in the window, sampled send() latency.
template <class Counters, class Senders>
void fill_window_figures(Run& r, uint64_t window_sent, const Window<Counters>& w,
                         const Senders& senders) {
  const double secs = std::chrono::duration<double>(w.length).count();
  r.interrupted = !w.whole;
  r.window_sent = window_sent;
  r.mpps = secs > 0 ? static_cast<double>(r.window_sent) / secs / 1e6 : 0;
  r.cpu_ns_per_pkt = r.window_sent > 0 ? static_cast<double>(w.cpu1 - w.cpu0) /
                                             static_cast<double>(r.window_sent)
                                       : 0;
  std::vector<uint64_t> per_sender;
  for (const Sender& s : senders) {
    per_sender.push_back(s.accepted_in_window);
    r.send_latency.merge(s.latency);
  }
  r.fairness = jain_index(per_sender);
  r.noise = bench_detail::noise_between(w.machine0, w.machine1);
}

// A run's numbers once its senders have stopped and its queues were drained (`drained`; `end`:
// each TX queue's counters after it): rates over the window, totals over the whole run,
// conservation on every queue and in total, fairness and latency from the senders.
Run summarize_run(std::string_view lock, bool drained, const std::vector<TxQueueStats>& end,
                  const std::vector<Sender>& senders, const Window<std::vector<TxQueueStats>>& w);

// ---- pacing.cpp: the senders' traffic and pace -----------------------------------------------

// Sender t's frames: a capture's share, or generated frames (cfg.flows flows; with one flow,
// a flow of its own when `own_flow`).
std::vector<bench_detail::SenderTraffic> sender_traffic(const BenchConfig& cfg, const FrameSpec& spec,
                                                        int threads, bool own_flow,
                                                        const bench_detail::Capture* capture);

// A sender's pacer: the capture's timing (cfg.replay_speed), a rate, or none (flat out). At most
// max(kPacedCatchUp, burst) packets are due at once.
bench_detail::Pacer pacer_for(const BenchConfig& cfg, int threads, const bench_detail::SenderTraffic& traffic);

// The packets sender may hand over now, at most `most`: `most` when unpaced; when paced, once
// its pacer has some due (0 when the run stopped first). Inline: every send loop asks it once
// per packet or burst (an out-of-line call cost 1-2 ns per packet of one sender on null).
inline uint64_t due_now(bench_detail::Pacer& pacer, uint64_t most, const RunFlags& flags) {
  if (!pacer.paced()) return most;
  return std::min(most, bench_detail::pace_wait(pacer, [&] { return flags.running(); }));
}

// Each TX queue of `device` records its sampled queueing delay into logs[q] (Device::note_departure).
void log_departures(NetDevice& device, std::vector<LatencyHistogram>& logs);

// A sender with nothing to send (a capture with fewer frames than senders) waits for the end.
void idle_until_stopped(const RunFlags& flags);

}  // namespace txpath::bench_detail
