// SPDX-License-Identifier: MIT
// The bench engine. One "run" = one strategy at one thread count on one TX queue count under one
// spin-park policy for one duration; a "point" aggregates the --repeat runs of a (strategy,
// threads, queues, park) tuple. Runs of different strategies, queue counts and park policies at
// the same thread count are interleaved in rounds (each round runs every row once, in an order
// shuffled from the seed: B/2q A/1q A/2q B/1q, then A/2q B/1q ...) so that ratios hold on a
// drifting machine; each round's figures are kept for the row's statistics (bench/stats.hpp).
#include "bench/bench.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <charconv>
#include <map>
#include <optional>
#include <utility>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <thread>
#include <tuple>
#include <type_traits>

#include "base/clock.hpp"
#include "base/topology.hpp"
#include "bench/live.hpp"
#include "bench/noise.hpp"
#include "bench/pacer.hpp"
#include "bench/pcap_source.hpp"
#include "bench/real_path.hpp"
#include "bench/sender_pools.hpp"
#include "bench/stats.hpp"
#include "bench/tc_final.hpp"
#include "bench/traffic.hpp"
#include "core/text.hpp"
#include "net/sink.hpp"
#include "net/testbed.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "txpath/queue_select.hpp"
#include "txpath/real_device.hpp"
#include "txpath/spin.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {

namespace {

constexpr uint64_t kLatencySampleEvery = 64;     // one send() in 64 is timed
constexpr int kMaxBurst = 1024;                  // BenchConfig::burst's upper bound
constexpr uint64_t kPacedCatchUp = 32;           // a paced sender's largest catch-up burst
constexpr uint64_t kBudgetWaitNs = 1'000'000;    // a spent budget's sleep, at most, per look at the run
constexpr unsigned kBudgetYields = 256;          // a spent budget's yields before it sleeps

uint64_t process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Sender i's CPU: round-robin over the nodes in use (spread), then over that node's cores.
int cpu_for_sender(int i, int nodes_in_use) {
  const auto& nodes = topology().cores_by_node;
  const std::size_t n = std::max<std::size_t>(
      1, nodes_in_use > 0 ? std::min<std::size_t>(static_cast<std::size_t>(nodes_in_use), nodes.size())
                          : nodes.size());
  const auto& node = nodes[static_cast<std::size_t>(i) % n];
  if (node.empty()) return -1;
  return node[(static_cast<std::size_t>(i) / n) % node.size()];
}

// The CPUs senders 0 .. threads - 1 are pinned to (each once); empty when they are not pinned.
std::vector<unsigned> sender_cpus(const BenchConfig& cfg, int threads) {
  std::vector<unsigned> cpus;
  if (!cfg.pin) return cpus;
  for (int t = 0; t < threads; ++t) {
    const int cpu = cpu_for_sender(t, cfg.nodes);
    if (cpu >= 0 && std::find(cpus.begin(), cpus.end(), static_cast<unsigned>(cpu)) == cpus.end())
      cpus.push_back(static_cast<unsigned>(cpu));
  }
  return cpus;
}

void pin_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
}

double jain_index(const std::vector<uint64_t>& xs) {
  double sum = 0, sum_sq = 0;
  for (uint64_t x : xs) {
    sum += static_cast<double>(x);
    sum_sq += static_cast<double>(x) * static_cast<double>(x);
  }
  if (xs.empty() || sum_sq == 0) return 0;
  return sum * sum / (static_cast<double>(xs.size()) * sum_sq);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// One TX queue's counters in one run: totals after the drain, and the measured window's.
struct QueueRun {
  uint64_t submitted = 0, sent = 0, dropped = 0, doorbells = 0;
  uint64_t window_sent = 0, window_doorbells = 0;
  bool conserved = false;
};

// One run's numbers: figures over its measured window (a point reports their medians), counters
// (a point sums them) and what went wrong.
struct Run {
  double mpps = 0, cpu_ns_per_pkt = 0, fairness = 0;
  LatencyHistogram send_latency, queue_delay;  // sampled, ns (BenchPoint::send_p50_ns)
  uint64_t submitted = 0, sent = 0, dropped = 0, requeues = 0, doorbells = 0;
  uint64_t window_sent = 0, window_doorbells = 0;
  uint64_t lock_waits = 0, lock_wait_ns = 0;
  std::string lock;
  bool drained = false;
  bool conserved = false;
  bool sink_checked = false;
  uint64_t sink_received = 0, sink_lost = 0, sink_duplicated = 0, sink_out_of_order = 0;
  uint64_t sink_socket_drops = 0;
  bool interrupted = false;  // BenchConfig::stop cut this run short
  std::string output_error;  // the device's output could not be written (see finish_output)
  std::string live_note;     // why tc -s gets no live counters from this run (empty: it does)
  std::string tc_stats;      // the tree's final tc -s statistics (BenchPoint::tc_stats)
  std::vector<QueueRun> per_queue;  // each TX queue's (none for the kernel row)
  BenchNoise noise;                 // the machine's noise during the measured window
};

// True once the caller asked the bench to stop (BenchConfig::stop).
bool stop_requested(const BenchConfig& cfg) {
  // relaxed: a flag that only steers loops (its writer, a signal handler, publishes nothing else)
  return cfg.stop != nullptr && cfg.stop->load(std::memory_order_relaxed);
}

// Sleeps for `d`, waking early when a stop is requested; false if it woke early.
bool sleep_unless_stopped(const BenchConfig& cfg, std::chrono::duration<double> d) {
  constexpr auto kPoll = std::chrono::milliseconds(5);  // how soon a stop is seen
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  while (!stop_requested(cfg)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(end - now, kPoll));
  }
  return false;
}

// How long the sink may take to see the last frames of a run: until it has counted every sent
// frame, or nothing arrived for kSinkQuiet, or kSinkTimeout passed.
constexpr auto kSinkQuiet = std::chrono::milliseconds(300);
constexpr auto kSinkTimeout = std::chrono::milliseconds(5000);

// Where a run's frames are counted on arrival: a sink on the testbed's peer, or, on an ifb
// testbed (a null NIC: its transmit frees each frame and counts it in rx_dropped), that
// interface's own counter. Either or neither.
class Delivery {
 public:
  Sink* sink = nullptr;
  std::string null_nic;  // the ifb testbed's interface, else empty
  // A replayed capture (BenchConfig::source), loaded once per bench: its frames are not numbered
  // by this run, so the sink does not count them (the null NIC's counter still does).
  const bench_detail::Capture* capture = nullptr;

  // Before a run: zero the sink, or take the counter's baseline.
  void reset() {
    if (sink) sink->reset();
    if (!null_nic.empty()) baseline_ = null_nic_frames(null_nic);
  }
  // Fills the delivery part of `r` once a run's senders are done and its queue drained.
  void check(uint64_t sent, Run& r) const {
    if (sink && capture == nullptr) {
      sink->wait_for(sent, kSinkQuiet, kSinkTimeout);
      const SinkReport rep = sink->report();
      fill(r, sent, rep.received);
      r.sink_duplicated = rep.duplicated;
      r.sink_out_of_order = rep.out_of_order;
      r.sink_socket_drops = rep.socket_drops;
    } else if (!null_nic.empty()) {
      fill(r, sent, counted_by_null_nic(sent));
    }
  }
  // CPU time of the sink's thread (not ours).
  uint64_t cpu_ns() const { return sink ? sink->cpu_ns() : 0; }

 private:
  static void fill(Run& r, uint64_t sent, uint64_t received) {
    r.sink_checked = true;
    r.sink_received = received;
    r.sink_lost = sent > received ? sent - received : 0;
  }
  // The frames the null NIC counted since reset(), once it has counted `sent` (a datagram of
  // the kernel row may still be in the kernel's deferred transmit when the senders return), or
  // it stopped moving for kSinkQuiet, or kSinkTimeout passed.
  uint64_t counted_by_null_nic(uint64_t sent) const {
    const auto start = std::chrono::steady_clock::now();
    auto moved = start;
    uint64_t last = 0;
    for (;;) {
      const uint64_t now = null_nic_frames(null_nic) - baseline_;
      const auto t = std::chrono::steady_clock::now();
      if (now != last) moved = t;
      last = now;
      if (now >= sent || t - moved >= kSinkQuiet || t - start >= kSinkTimeout) return now;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  uint64_t baseline_ = 0;
};

// Per-sender state, each starting on its own cache line (what a sender writes per packet, its
// counters, shares the first line; its latency histogram, written once per 64 packets, follows).
struct alignas(64) Sender {
  uint64_t accepted_in_window = 0;  // queued or congested (kernel row: sent) while measuring
  // The kernel row's totals and the floor row's submitted and dropped (txpath's rows read the
  // queue's counters instead). relaxed (all three): owner-written counters, read by the main
  // thread at the window edges; the join orders the end.
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

std::vector<Sender> make_senders(int threads) {
  return std::vector<Sender>(static_cast<std::size_t>(threads));
}

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

// The frames a device is sent: `payload` bytes each, addressed by the device and, on a
// testbed's host end, to the testbed's peer.
FrameSpec frames_for(const Device& device, std::size_t payload) {
  FrameSpec spec;
  spec.payload = payload;
  device.address_frames(spec);
  if (const std::string ifname = link_interface(device); !ifname.empty()) address_to_testbed(spec, ifname);
  return spec;
}

// ---- offered load and traffic (pacer.hpp, traffic.hpp) --------------------------------------------

// Sender t's frames: a capture's share, or generated frames (cfg.flows flows; with one flow,
// a flow of its own when `own_flow`).
std::vector<bench_detail::SenderTraffic> sender_traffic(const BenchConfig& cfg, const FrameSpec& spec,
                                                        int threads, bool own_flow,
                                                        const bench_detail::Capture* capture) {
  std::vector<bench_detail::SenderTraffic> out;
  for (int t = 0; t < threads; ++t) {
    const auto id = static_cast<uint32_t>(t);
    out.push_back(capture ? bench_detail::SenderTraffic::replayed(*capture, id, static_cast<uint32_t>(threads))
                          : bench_detail::SenderTraffic::generated(spec, id, cfg.flows, own_flow));
  }
  return out;
}

// A sender's pacer: the capture's timing (cfg.replay_speed), a rate, or none (flat out). At most
// max(kPacedCatchUp, burst) packets are due at once.
bench_detail::Pacer pacer_for(const BenchConfig& cfg, int threads, const bench_detail::SenderTraffic& traffic) {
  const uint64_t max_burst = std::max<uint64_t>(kPacedCatchUp, static_cast<uint64_t>(cfg.burst));
  if (cfg.replay_speed > 0 && !traffic.idle()) return traffic.replay_pacer(cfg.replay_speed, max_burst);
  const double per_sender = cfg.rate_per_sender_pps > 0 ? cfg.rate_per_sender_pps : cfg.rate_pps / threads;
  if (per_sender > 0) return bench_detail::Pacer::at_rate(per_sender, max_burst);
  return {};
}

// The packets sender may hand over now, at most `most`: `most` when unpaced; when paced, once
// its pacer has some due (0 when the run stopped first).
uint64_t due_now(bench_detail::Pacer& pacer, uint64_t most, const RunFlags& flags) {
  if (!pacer.paced()) return most;
  return std::min(most, bench_detail::pace_wait(pacer, [&] { return flags.running(); }));
}

// What the pacers offer, all senders together, in Mpps (0: flat out, or a capture's own timing).
double offered_mpps(const BenchConfig& cfg, int threads) {
  if (cfg.rate_per_sender_pps > 0) return cfg.rate_per_sender_pps * threads / 1e6;
  return cfg.rate_pps / 1e6;
}

// Each TX queue of `device` records its sampled queueing delay into logs[q] (Device::note_departure).
void log_departures(NetDevice& device, std::vector<LatencyHistogram>& logs) {
  for (uint32_t q = 0; q < device.num_tx_queues() && q < logs.size(); ++q) device.tx_queue(q).set_departure_log(&logs[q]);
}

// The capture of cfg.source ("pcap:FILE"), its frames checked against the device's largest.
bench_detail::Capture load_source(const BenchConfig& cfg, const Device& device) {
  return bench_detail::load_pcap(cfg.source.substr(5), device.max_frame_len());
}

// The offered-load and traffic options, each in its range and in a combination that means one
// thing (BenchConfig: rate_pps .. replay_speed). The capture itself is read by the caller.
void check_traffic(const BenchConfig& cfg) {
  const auto rate_ok = [](double r) { return std::isfinite(r) && r >= 0 && r <= 1e10; };
  if (!rate_ok(cfg.rate_pps)) throw ConfigError("rate must be in 0..1e10 packets per second");
  if (!rate_ok(cfg.rate_per_sender_pps)) throw ConfigError("rate per sender must be in 0..1e10 packets per second");
  if (cfg.rate_pps > 0 && cfg.rate_per_sender_pps > 0)
    throw ConfigError("give a total rate or a rate per sender, not both");
  if (cfg.flows < 1 || cfg.flows > kMaxFlows)
    throw ConfigError("flows " + std::to_string(cfg.flows) + " out of range 1.." + std::to_string(kMaxFlows));
  for (const int t : cfg.threads)
    if (cfg.flows > 1 && static_cast<uint64_t>(t) * cfg.flows > kSinkMaxSenders)
      throw ConfigError(std::to_string(t) + " senders x " + std::to_string(cfg.flows) + " flows is over " +
                        std::to_string(kSinkMaxSenders) + " flows (the sink's stream ids)");
  if (!std::isfinite(cfg.replay_speed) || cfg.replay_speed < 0 || cfg.replay_speed > 1e6)
    throw ConfigError("replay speed must be in 0..1e6 (0: flat out)");
  if (cfg.source.empty()) {
    if (cfg.replay_speed > 0) throw ConfigError("a replay speed needs a capture (--source pcap:FILE)");
    return;
  }
  if (!cfg.source.starts_with("pcap:") || cfg.source.size() == 5)
    throw ConfigError("source " + txpath::quoted(cfg.source) + " is not pcap:FILE");
  if (cfg.flows > 1) throw ConfigError("flows and a capture: the capture's frames have their own flows");
  if (cfg.replay_speed > 0 && (cfg.rate_pps > 0 || cfg.rate_per_sender_pps > 0))
    throw ConfigError("a rate and a replay speed both pace the senders: give one");
  if (std::find(cfg.strategies.begin(), cfg.strategies.end(), std::string(kKernelStrategy)) != cfg.strategies.end())
    throw ConfigError("strategy kernel cannot replay a capture (it sends UDP payloads through sockets)");
}

// A sender with nothing to send (a capture with fewer frames than senders) waits for the end.
void idle_until_stopped(const RunFlags& flags) {
  while (flags.running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// ---- TX queues ---------------------------------------------------------------------------------

// True when a --device spec names its own queue count (an option "queues=N" after the ':').
bool names_queues(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view opts = spec.substr(colon + 1);
  while (true) {
    const std::size_t comma = opts.find(',');
    if (opts.substr(0, comma).starts_with("queues=")) return true;
    if (comma == std::string_view::npos) return false;
    opts = opts.substr(comma + 1);
  }
}

// The kinds whose spec takes queues=N (device_kinds() documents the options of each), listed.
std::string kinds_with_queues() {
  std::string list;
  for (const DeviceKind& k : device_kinds())
    if (k.spec.find("queues=") != std::string_view::npos) list += (list.empty() ? "" : ", ") + std::string(k.name);
  return list;
}

bool kind_takes_queues(std::string_view spec) {
  const std::string_view kind = spec.substr(0, spec.find(':'));
  for (const DeviceKind& k : device_kinds())
    if (k.name == kind) return k.spec.find("queues=") != std::string_view::npos;
  return false;  // an unknown kind: make_device() says so
}

// The --device spec of the run's device with `queues` TX queues.
std::string spec_with_queues(const std::string& spec, uint32_t queues) {
  if (queues == 1 || names_queues(spec)) return spec;
  return spec + (spec.find(':') == std::string::npos ? ":" : ",") + "queues=" + std::to_string(queues);
}

// The CPUs senders are pinned to, in the order cpu_for_sender() first reaches them.
std::vector<unsigned> sender_cpu_order(int nodes_in_use) {
  const auto& nodes = topology().cores_by_node;
  std::size_t largest = 0;
  for (const auto& node : nodes) largest = std::max(largest, node.size());
  std::vector<unsigned> order;
  for (std::size_t t = 0; t < nodes.size() * largest; ++t) {
    const int cpu = cpu_for_sender(static_cast<int>(t), nodes_in_use);
    if (cpu >= 0 && std::find(order.begin(), order.end(), static_cast<unsigned>(cpu)) == order.end())
      order.push_back(static_cast<unsigned>(cpu));
  }
  return order;
}

// Sets the device's XPS map from cfg.xps (see XpsPolicy). Throws ConfigError for a CPU or queue
// the map names that the machine or the device does not have.
void apply_xps(NetDevice& device, const BenchConfig& cfg) {
  const uint32_t n = device.num_tx_queues();
  device.clear_xps();
  if (n == 1 || cfg.xps.mode == XpsPolicy::Mode::off) return;
  std::vector<std::vector<unsigned>> cpus_of(n);  // queue -> the CPUs that send on it
  // On an AF_PACKET device whose interface has at least as many TX queues, the map follows the
  // kernel's own CPU -> queue choice for bypass kicks, so txpath queue q is kernel queue q.
  const std::string ifname = link_interface(device.tx_queue(0));
  if (cfg.xps.mode == XpsPolicy::Mode::automatic && device.kind() == "afpacket" &&
      kernel_tx_queue_cpus(ifname).size() >= n && follow_kernel_tx_queues(device))
    return;
  if (cfg.xps.mode == XpsPolicy::Mode::automatic) {
    const std::vector<unsigned> order = sender_cpu_order(cfg.nodes);
    const auto c = static_cast<uint32_t>(order.size());
    for (uint32_t i = 0; i < c; ++i) {
      if (order[i] >= device.cpu_count()) continue;  // hwloc and sysconf disagree: no map
      for (uint32_t q = i % n; q < n; q += c) cpus_of[q].push_back(order[i]);  // q % c == i % n
    }
  } else {
    for (const auto& [cpu, queues] : cfg.xps.cpus) {
      for (const uint32_t q : queues) {
        if (q >= n)
          throw ConfigError("--xps: CPU " + std::to_string(cpu) + " names queue " + std::to_string(q) +
                            ", but with --queues " + std::to_string(n) + " the device has queues 0.." +
                            std::to_string(n - 1));
        cpus_of[q].push_back(cpu);
      }
    }
  }
  for (uint32_t q = 0; q < n; ++q) device.set_xps_cpus(q, cpus_of[q]);
}

// A device made only to check a spec or read its addresses (bench_detail::make_probe_device);
// for a spec that names queues=N, its first TX queue.
class Probe {
 public:
  explicit Probe(const std::string& spec) {
    if (names_queues(spec)) net_ = make_net_device(spec);
    else single_ = bench_detail::make_probe_device(spec);
  }
  Device& device() noexcept { return net_ ? net_->tx_queue(0) : *single_; }
  uint32_t queues() const noexcept { return net_ ? net_->num_tx_queues() : 1; }

 private:
  std::unique_ptr<NetDevice> net_;
  bench_detail::ProbeDevice single_;
};

// The kernel row: every sender sends the same frames' UDP payloads through its own UDP socket.
Run run_kernel_once(const BenchConfig& cfg, int threads, Delivery& delivery) {
  std::optional<Probe> probe(std::in_place, cfg.device);
  const FrameSpec spec = frames_for(probe->device(), cfg.payload);
  const FrameTemplate tmpl(spec);
  const auto traffic = sender_traffic(cfg, spec, threads, false, nullptr);
  const auto route = bench_detail::kernel_route(probe->device(), spec);
  if (!route) throw ConfigError("strategy kernel needs a real device (afpacket:IF, afxdp:IF or udp:HOST:PORT)");
  probe.reset();  // its sockets are not needed: the kernel row sends on its own sockets

  // Sockets first, so that an error surfaces before any thread starts.
  std::vector<std::unique_ptr<bench_detail::KernelSender>> sockets;
  for (int t = 0; t < threads; ++t)
    sockets.push_back(std::make_unique<bench_detail::KernelSender>(*route));
  auto senders = make_senders(threads);
  delivery.reset();
  const auto send_loop = [&](int t, RunFlags& flags) {
    Sender& me = senders[static_cast<std::size_t>(t)];
    bench_detail::KernelSender& sock = *sockets[static_cast<std::size_t>(t)];
    std::vector<std::byte> frame(tmpl.size());
    bench_detail::Pacer pacer = pacer_for(cfg, threads, traffic[static_cast<std::size_t>(t)]);
    flags.started();
    pacer.start(now_ns());
    uint64_t seq = 0, sent = 0, dropped = 0;
    while (flags.running()) {
      if (due_now(pacer, 1, flags) == 0) break;
      pacer.take(1);
      const std::size_t len = traffic[static_cast<std::size_t>(t)].write(frame, seq);
      const std::span<const std::byte> payload(frame.data() + kHeadersLen, len - kHeadersLen);
      const bool window = flags.in_window();
      if (me.timed(window, seq, [&] { return sock.send(payload); }) ==
          bench_detail::KernelSender::Result::sent) {
        me.sent.store(++sent, std::memory_order_relaxed);  // relaxed: see Sender::sent
        if (window) ++me.accepted_in_window;
      } else {
        me.dropped.store(++dropped, std::memory_order_relaxed);  // relaxed: likewise
      }
      ++seq;
    }
  };
  const auto sum_sent = [&] {
    uint64_t n = 0;
    for (auto& s : senders) n += s.sent.load(std::memory_order_relaxed);  // relaxed: likewise
    return n;
  };
  const Window<uint64_t> w = measure(cfg, threads, delivery, send_loop, sum_sent);

  Run r;
  r.lock = "-";
  r.drained = true;  // nothing of ours is queued: the kernel holds what it accepted
  fill_window_figures(r, w.end - w.start, w, senders);
  for (auto& s : senders) {
    r.sent += s.sent.load(std::memory_order_relaxed);
    r.dropped += s.dropped.load(std::memory_order_relaxed);
  }
  r.submitted = r.sent + r.dropped;
  r.conserved = true;
  delivery.check(r.sent, r);
  return r;
}

// The sum of every TX queue's counters (MultiQueueTx::stats()'s sum, from one sample).
TxQueueStats total_of(const std::vector<TxQueueStats>& queues) {
  TxQueueStats sum;
  for (const TxQueueStats& q : queues) add_stats(sum, q);
  return sum;
}

// A run's numbers once its senders have stopped and its queues were drained (`drained`; `end`:
// each TX queue's counters after it): rates over the window, totals over the whole run,
// conservation on every queue and in total, fairness and latency from the senders.
Run summarize_run(std::string_view lock, bool drained, const std::vector<TxQueueStats>& end,
                  const std::vector<Sender>& senders, const Window<std::vector<TxQueueStats>>& w) {
  Run r;
  r.lock = std::string(lock);
  r.drained = drained;
  const TxQueueStats total = total_of(end);
  const TxQueueStats start = total_of(w.start), stop = total_of(w.end);
  fill_window_figures(r, stop.sent - start.sent, w, senders);
  r.window_doorbells = stop.device.doorbells - start.device.doorbells;
  r.submitted = total.submitted;
  r.sent = total.sent;
  r.dropped = total.dropped;
  r.requeues = total.requeues;
  r.doorbells = total.device.doorbells;
  r.lock_waits = stop.lock_waits - start.lock_waits;
  r.lock_wait_ns = stop.lock_wait_ns - start.lock_wait_ns;
  r.conserved = r.drained && conservation_holds(total.submitted, total.sent, total.dropped, total.queued);
  for (std::size_t i = 0; i < end.size(); ++i) {
    const TxQueueStats& q = end[i];
    QueueRun qr{.submitted = q.submitted, .sent = q.sent, .dropped = q.dropped,
                .doorbells = q.device.doorbells,
                .window_sent = w.end[i].sent - w.start[i].sent,
                .window_doorbells = w.end[i].device.doorbells - w.start[i].device.doorbells,
                .conserved = r.drained && conservation_holds(q.submitted, q.sent, q.dropped, q.queued)};
    r.conserved = r.conserved && qr.conserved;
    r.per_queue.push_back(qr);
  }
  return r;
}

// The run's queue: the strategy, lock and qdisc of cfg, or the root tree of cfg.tc_config (its
// nodes left in *tc_tree once built).
TxQueueConfig queue_config(const BenchConfig& cfg, const std::string& strategy,
                           const std::shared_ptr<tc::Tree>& tc_tree) {
  TxQueueConfig qcfg;
  qcfg.strategy = strategy;
  qcfg.lock = cfg.lock;
  qcfg.qdisc = cfg.qdisc;
  qcfg.txqueuelen = cfg.txqueuelen;
  if (!cfg.tc_config.empty())
    qcfg.root_qdisc = tc::Config::load(cfg.tc_config).root_factory(cfg.tc_dev, tc_tree);
  return qcfg;
}

// tc -s reads this run's counters while it runs. A second process on the same file cannot serve
// them (nor can a directory that is not private): `note` says why, and the run goes on.
std::unique_ptr<tc::LiveStats> serve_live_stats(const BenchConfig& cfg, TxQueue& txq,
                                                const std::shared_ptr<tc::Tree>& tc_tree,
                                                std::string& note) {
  if (cfg.tc_config.empty() || !txq.qdisc()) return nullptr;
  try {
    return std::make_unique<tc::LiveStats>(cfg.tc_config, cfg.tc_dev, txq, tc_tree);
  } catch (const ConfigError& e) {
    note = e.what();
    return nullptr;
  }
}

// When the next completion of `tx`'s device(s) is due (steady-clock ns); 0 when none is.
uint64_t next_completion_ns(TxQueue& tx) noexcept { return tx.device().next_poll_ns(); }
uint64_t next_completion_ns(MultiQueueTx& tx) noexcept {
  uint64_t first = 0;
  for (uint32_t q = 0; q < tx.device().num_tx_queues(); ++q) {
    const uint64_t at = tx.device().tx_queue(q).next_poll_ns();
    if (at != 0 && (first == 0 || at < first)) first = at;
  }
  return first;
}

// A sender whose send budget is spent (its pool's packets are all queued or in flight; with no
// budget, the shared pool's), for the `round`-th time in a row. First its queue's completion
// work, on this thread: reap what is due and perform the run a woken queue scheduled
// (TxQueue::service), as the floor's sender polls its device, and as the kernel does on the CPU
// that takes the queue's completion interrupt. Then, as the library's waits (spin, yield, park;
// --park off: yield only), it yields for a while — the floor's wait, so that a row's CPU per packet and the floor's count
// the same way — and only then sleeps: until half its budget is back (a socket's writer,
// sock_writeable()) or the device's next completion is due, whichever comes first.
template <class Tx>
void wait_for_budget(Tx& tx, Pool& pool, std::size_t budget, unsigned round) noexcept {
  tx.service();
  if (round < kBudgetYields || !spin_park()) {
    std::this_thread::yield();
    return;
  }
  uint64_t timeout = kBudgetWaitNs;
  if (const uint64_t due = next_completion_ns(tx); due != 0) {
    const uint64_t now = now_ns();
    timeout = due > now ? std::min(due - now, kBudgetWaitNs) : 0;
  }
  if (timeout > 0) pool.wait_for_free(std::max<std::size_t>(1, budget / 2), timeout);
}

// The send loop of txpath's rows: each sender takes buffers from `pool`, writes its frames
// (`traffic`: generated or a capture's, see traffic.hpp) and sends them through `tx` (a
// TxQueue, or a MultiQueueTx that picks the queue): one send() per packet, or with cfg.burst > 1
// one send_burst() per burst of up to cfg.burst packets (a MultiQueueTx hands each run of
// packets that picked the same TX queue to that queue); paced (pacer_for()), as many as are due.
template <class Tx>
auto txpath_send_loop(Tx& tx, bench_detail::SenderPools& pools,
                      const std::vector<bench_detail::SenderTraffic>& traffic, std::vector<Sender>& senders,
                      const BenchConfig& cfg, int threads) {
  return [&tx, &pools, &traffic, &senders, &cfg, threads](int t, RunFlags& flags) {
    Sender& me = senders[static_cast<std::size_t>(t)];
    const bench_detail::SenderTraffic& frames = traffic[static_cast<std::size_t>(t)];
    bench_detail::Pacer pacer = pacer_for(cfg, threads, frames);
    const auto burst = static_cast<uint64_t>(cfg.burst);
    Pool& pool = pools.of(t);
    Pool::Cache cache(pool);
    std::array<Packet*, kMaxBurst> packets{};
    std::array<SendStatus, kMaxBurst> status{};
    flags.started();
    if (frames.idle()) return idle_until_stopped(flags);
    pacer.start(now_ns());
    uint64_t seq = 0;
    unsigned dry_rounds = 0;  // looks in a row that found no free packet
    while (flags.running()) {
      const uint64_t want = due_now(pacer, burst, flags);
      std::size_t n = 0;
      for (; n < want; ++n) {
        Packet* p = cache.get();
        if (!p) break;
        frames.write(*p, seq + n);
        packets[n] = p;
      }
      if (n == 0) {  // every buffer is queued or in flight (the send budget is spent): wait for
                     // completions to return some, as a socket waits for its send buffer
        if (want > 0) wait_for_budget(tx, pool, pools.budget_packets(), dry_rounds++);
        continue;
      }
      dry_rounds = 0;
      pacer.take(n);
      const bool window = flags.in_window();
      if (burst == 1) {
        status[0] = me.timed(window, seq, [&] { return tx.send(packets[0]); }, 1, packets.data());
      } else {
        const auto burst_call = [&] {
          tx.send_burst(std::span(packets.data(), n), std::span(status.data(), n));
          return 0;
        };
        me.timed(window, seq, burst_call, n, packets.data());
      }
      if (window) {
        for (std::size_t i = 0; i < n; ++i)
          me.accepted_in_window += status[i] == SendStatus::queued || status[i] == SendStatus::congested;
      }
      seq += n;
    }
  };
}

// One TX queue: a TxQueue on the device, the seed experiment's path.
Run run_single_queue_once(const BenchConfig& cfg, const std::string& strategy, int threads,
                          Delivery& delivery) {
  bench_detail::SenderPools pools(cfg, threads, 1, delivery.capture);
  auto device = make_device(cfg.device);  // after the pools: destroyed first, it returns its ring
  bench_detail::use_zero_copy_pool(*device, pools);  // afxdp: its UMEM's, no copy
  LatencyHistogram queue_delay;
  device->set_departure_log(&queue_delay);

  auto tc_tree = std::make_shared<tc::Tree>();
  TxQueueConfig qcfg = queue_config(cfg, strategy, tc_tree);
  qcfg.service_cpus = sender_cpus(cfg, threads);  // the queue's "irq affinity" follows its senders
  auto txq = TxQueue::create(*device, qcfg);
  std::string live_note;
  std::unique_ptr<tc::LiveStats> live = serve_live_stats(cfg, *txq, tc_tree, live_note);
  const auto traffic = sender_traffic(cfg, frames_for(*device, cfg.payload), threads, false, delivery.capture);

  delivery.reset();
  auto senders = make_senders(threads);
  const auto w = measure(cfg, threads, delivery,
                         txpath_send_loop(*txq, pools, traffic, senders, cfg, threads),
                         [&] { return std::vector<TxQueueStats>{txq->stats()}; });

  const bool drained = txq->drain(std::chrono::seconds(10));
  Run r = summarize_run(txq->lock_kind(), drained, {txq->stats()}, senders, w);
  r.queue_delay = queue_delay;
  r.live_note = std::move(live_note);
  r.tc_stats = bench_detail::final_tc_stats(cfg, *txq, *tc_tree);
  delivery.check(r.sent, r);
  // Nothing transmits once the queue is gone: the device's output (pcap:FILE) is complete.
  live.reset();
  txq.reset();
  r.output_error = bench_detail::finish_output(*device);
  return r;
}

// The XPS map of a tc configuration's device (`link set dev D txqueue Q xps_cpus MASK`), when it
// has one: it replaces the bench's own (--xps). Throws ConfigError for a CPU the machine lacks.
void apply_tc_xps(NetDevice& device, const std::vector<std::vector<unsigned>>& xps) {
  const bool any = std::any_of(xps.begin(), xps.end(), [](const auto& cpus) { return !cpus.empty(); });
  if (!any) return;
  device.clear_xps();
  for (uint32_t q = 0; q < xps.size() && q < device.num_tx_queues(); ++q) device.set_xps_cpus(q, xps[q]);
}

// The per-queue trees of cfg.tc_config's device when it has `queues` TX queues (an mq or
// mqprio root, or a tree each queue runs a copy of): sets the device's traffic classes and
// returns mq's child factory, its nodes left in *trees. Empty when there is no tc configuration,
// or when its device has another queue count (then every queue runs a copy of its root tree:
// queue_config()'s root_qdisc).
std::function<std::unique_ptr<Qdisc>(uint32_t, const QdiscEnv&)> tc_queue_trees(
    const BenchConfig& cfg, NetDevice& device, const std::shared_ptr<tc::QueueTrees>& trees) {
  if (cfg.tc_config.empty()) return {};
  tc::Config::MultiQueueSetup setup = tc::Config::load(cfg.tc_config).multiqueue(cfg.tc_dev, trees);
  if (setup.tx_queues != device.num_tx_queues()) return {};
  if (setup.traffic_classes.num_tc > 0) device.set_traffic_classes(setup.traffic_classes);
  apply_tc_xps(device, setup.xps_cpus);
  return std::move(setup.queue_qdisc);
}

// tc -s reads a multi-queue run's counters (each queue's tree, mq's sums) while it runs; see
// serve_live_stats() for why it may not.
std::unique_ptr<tc::LiveStats> serve_live_stats(const BenchConfig& cfg, MultiQueueTx& tx,
                                                const std::shared_ptr<tc::QueueTrees>& trees,
                                                std::string& note) {
  try {
    return std::make_unique<tc::LiveStats>(cfg.tc_config, cfg.tc_dev, tx, trees);
  } catch (const ConfigError& e) {
    note = e.what();
    return nullptr;
  }
}

// Several TX queues: the device built with queues=N, its XPS map set from cfg.xps, and a
// MultiQueueTx with the run's strategy, lock and qdisc on every queue (or cfg.tc_config's
// per-queue trees: mq's children).
Run run_multi_queue_once(const BenchConfig& cfg, const std::string& strategy, int threads,
                         uint32_t queues, Delivery& delivery) {
  bench_detail::SenderPools pools(cfg, threads, queues, delivery.capture);
  auto device = make_net_device(spec_with_queues(cfg.device, queues));  // after the pools, as above
  std::vector<LatencyHistogram> queue_delay(queues);
  log_departures(*device, queue_delay);
  apply_xps(*device, cfg);
  auto trees = std::make_shared<tc::QueueTrees>();
  MultiQueueConfig mq_cfg{.queue = queue_config(cfg, strategy, std::make_shared<tc::Tree>()),
                          .queue_qdisc = tc_queue_trees(cfg, *device, trees),
                          .service_on_xps_cpus = cfg.pin};  // as the single queue's, per queue
  const bool per_queue_trees = static_cast<bool>(mq_cfg.queue_qdisc);
  auto tx = MultiQueueTx::create(*device, mq_cfg);
  std::string live_note;
  std::unique_ptr<tc::LiveStats> live;
  if (per_queue_trees && tx->queue(0).qdisc()) live = serve_live_stats(cfg, *tx, trees, live_note);
  if (!cfg.tc_config.empty() && !per_queue_trees)
    live_note = "the tc device has another TX queue count than this run";
  const auto traffic = sender_traffic(cfg, frames_for(device->tx_queue(0), cfg.payload), threads, true, delivery.capture);

  delivery.reset();
  auto senders = make_senders(threads);
  const auto w = measure(cfg, threads, delivery,
                         txpath_send_loop(*tx, pools, traffic, senders, cfg, threads),
                         [&] { return tx->queue_stats(); });

  const bool drained = tx->drain(std::chrono::seconds(10));
  Run r = summarize_run(tx->queue(0).lock_kind(), drained, tx->queue_stats(), senders, w);
  for (const LatencyHistogram& q : queue_delay) r.queue_delay.merge(q);
  r.live_note = std::move(live_note);
  r.tc_stats = bench_detail::final_tc_stats(cfg, *tx, per_queue_trees ? trees.get() : nullptr);
  delivery.check(r.sent, r);
  live.reset();
  tx.reset();
  for (uint32_t q = 0; q < queues && r.output_error.empty(); ++q)
    r.output_error = bench_detail::finish_output(device->tx_queue(q));
  return r;
}

// ---- the floor row ------------------------------------------------------------------------------

// Reaps the device's completions once they are due, as the service thread does for a TxQueue.
void poll_if_due(Device& device) noexcept {
  const uint64_t at = device.next_poll_ns();
  if (at != 0 && at <= now_ns()) device.poll();
}

// Hands `batch` (numbered from `seq` on) to `device` under its tx lock, more = true until the
// last packet, whose xmit rings the doorbell. Whatever the device refuses (busy, or its queue
// stopped: it announced what it had accepted before saying so) is handed again once poll() has
// reaped completions; once the run has stopped, for up to kFloorStopGrace (then what is left is
// freed into `cache` and counted dropped: a device that never takes it again cannot hang us).
void floor_xmit(Device& device, std::span<Packet* const> batch, uint64_t seq, bool window,
                const RunFlags& flags, Sender& me, Pool::Cache& cache) {
  constexpr uint64_t kFloorStopGrace = 1'000'000'000;  // ns
  std::size_t done = 0;
  uint64_t give_up_ns = 0;  // set once the run has stopped
  for (;;) {
    {
      std::lock_guard tx(device.tx_lock());
      for (; done < batch.size() && !device.stopped(); ++done) {
        const bool more = done + 1 < batch.size();
        const auto xmit = [&] { return device.xmit_sampled(batch[done], more); };
        if (me.timed(window, seq + done, xmit, 1, &batch[done]) != XmitResult::ok) break;
        if (window) ++me.accepted_in_window;
      }
    }
    poll_if_due(device);
    if (done == batch.size()) return;
    if (!flags.running()) {
      if (give_up_ns == 0) give_up_ns = now_ns() + kFloorStopGrace;
      if (now_ns() >= give_up_ns) break;
    }
    std::this_thread::yield();  // the ring is full or the queue stopped: completions first
  }
  for (std::size_t i = done; i < batch.size(); ++i) cache.put(batch[i]);
  // relaxed (both): see Sender::dropped
  me.dropped.store(me.dropped.load(std::memory_order_relaxed) + (batch.size() - done),
                   std::memory_order_relaxed);
}

// The floor row's send loop: sender t writes kFloorBatch frames into buffers from its cache and
// hands them to TX queue t % queues (floor_xmit).
// Paced, a batch holds the packets due (at most kFloorBatch).
auto floor_send_loop(NetDevice& device, bench_detail::SenderPools& pools,
                     const std::vector<bench_detail::SenderTraffic>& traffic, std::vector<Sender>& senders,
                     const BenchConfig& cfg) {
  return [&device, &pools, &traffic, &senders, &cfg](int t, RunFlags& flags) {
    Sender& me = senders[static_cast<std::size_t>(t)];
    const bench_detail::SenderTraffic& frames = traffic[static_cast<std::size_t>(t)];
    bench_detail::Pacer pacer = pacer_for(cfg, static_cast<int>(traffic.size()), frames);
    Device& queue = device.tx_queue(static_cast<uint32_t>(t) % device.num_tx_queues());
    Pool::Cache cache(pools.of(t));
    std::array<Packet*, kFloorBatch> batch{};
    flags.started();
    if (frames.idle()) return idle_until_stopped(flags);
    pacer.start(now_ns());
    uint64_t seq = 0;
    while (flags.running()) {
      const uint64_t want = due_now(pacer, batch.size(), flags);
      std::size_t n = 0;
      for (; n < want; ++n) {
        Packet* p = cache.get();
        if (!p) break;
        frames.write(*p, seq + n);
        batch[n] = p;
      }
      pacer.take(n);
      if (n == 0) {  // every buffer is in flight: reap completions
        poll_if_due(queue);
        std::this_thread::yield();
        continue;
      }
      // relaxed (both): see Sender::submitted
      me.submitted.store(me.submitted.load(std::memory_order_relaxed) + n,
                         std::memory_order_relaxed);
      floor_xmit(queue, std::span(batch.data(), n), seq, flags.in_window(), flags, me, cache);
      seq += n;
    }
  };
}

// Each TX queue's counters in a floor run: the senders' submitted and dropped (sender t on
// queue t % queues), the device's own accepted count as sent, the device's counters.
std::vector<TxQueueStats> floor_stats(const NetDevice& device, const std::vector<Sender>& senders) {
  std::vector<TxQueueStats> out(device.num_tx_queues());
  for (std::size_t t = 0; t < senders.size(); ++t) {
    TxQueueStats& q = out[t % out.size()];
    q.submitted += senders[t].submitted.load(std::memory_order_relaxed);  // relaxed: see Sender
    q.dropped += senders[t].dropped.load(std::memory_order_relaxed);
  }
  for (uint32_t i = 0; i < device.num_tx_queues(); ++i) {
    out[i].device = device.tx_queue(i).stats();
    out[i].sent = out[i].device.tx_packets;
  }
  return out;
}

// Once the senders have stopped: polls every TX queue until each has completed what it accepted
// (in_flight() 0), up to `timeout`. False if one still has packets in flight.
bool drain_devices(NetDevice& device, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool idle = true;
    for (uint32_t i = 0; i < device.num_tx_queues(); ++i) {
      Device& queue = device.tx_queue(i);
      if (queue.in_flight() == 0) continue;
      idle = false;
      poll_if_due(queue);
    }
    if (idle) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// The floor row: the device (with `queues` TX queues) and nothing between it and the senders.
Run run_floor_once(const BenchConfig& cfg, int threads, uint32_t queues, Delivery& delivery) {
  bench_detail::SenderPools pools(cfg, threads, queues, delivery.capture);
  auto device = make_net_device(spec_with_queues(cfg.device, queues));  // after the pools, as above
  std::vector<LatencyHistogram> queue_delay(queues);
  log_departures(*device, queue_delay);
  // On several queues each sender is its own flow, as in the multi-queue rows.
  const auto traffic = sender_traffic(cfg, frames_for(device->tx_queue(0), cfg.payload), threads, queues > 1,
                                      delivery.capture);
  delivery.reset();
  auto senders = make_senders(threads);
  const auto w = measure(cfg, threads, delivery, floor_send_loop(*device, pools, traffic, senders, cfg),
                         [&] { return floor_stats(*device, senders); });
  const bool drained = drain_devices(*device, std::chrono::seconds(10));
  Run r = summarize_run("-", drained, floor_stats(*device, senders), senders, w);
  for (const LatencyHistogram& q : queue_delay) r.queue_delay.merge(q);
  delivery.check(r.sent, r);
  for (uint32_t q = 0; q < queues && r.output_error.empty(); ++q)
    r.output_error = bench_detail::finish_output(device->tx_queue(q));
  return r;
}

Run run_once(const BenchConfig& cfg, const std::string& strategy, int threads, uint32_t queues,
             Delivery& delivery) {
  if (strategy == kKernelStrategy) return run_kernel_once(cfg, threads, delivery);
  if (strategy == kFloorStrategy) return run_floor_once(cfg, threads, queues, delivery);
  if (queues == 1) return run_single_queue_once(cfg, strategy, threads, delivery);
  return run_multi_queue_once(cfg, strategy, threads, queues, delivery);
}

// The counters a point sums over its runs, and the figures it takes the median of.
constexpr std::pair<uint64_t BenchPoint::*, uint64_t Run::*> kSummed[] = {
    {&BenchPoint::submitted, &Run::submitted},       {&BenchPoint::sent, &Run::sent},
    {&BenchPoint::dropped, &Run::dropped},           {&BenchPoint::requeues, &Run::requeues},
    {&BenchPoint::doorbells, &Run::doorbells},       {&BenchPoint::lock_waits, &Run::lock_waits},
    {&BenchPoint::lock_wait_ns, &Run::lock_wait_ns}, {&BenchPoint::sink_received, &Run::sink_received},
    {&BenchPoint::sink_lost, &Run::sink_lost},       {&BenchPoint::sink_duplicated, &Run::sink_duplicated},
    {&BenchPoint::sink_out_of_order, &Run::sink_out_of_order},
    {&BenchPoint::sink_socket_drops, &Run::sink_socket_drops}};
constexpr std::pair<double BenchPoint::*, double Run::*> kMedians[] = {
    {&BenchPoint::mpps, &Run::mpps},           {&BenchPoint::cpu_ns_per_pkt, &Run::cpu_ns_per_pkt},
    {&BenchPoint::fairness, &Run::fairness}};

// The latency histograms of a point's runs, merged, and their percentiles.
void aggregate_latency(BenchPoint& p, const std::vector<Run>& runs) {
  for (const Run& r : runs) {
    p.send_latency.merge(r.send_latency);
    p.queue_delay.merge(r.queue_delay);
  }
  constexpr std::array<double, 4> kQuantiles = {0.50, 0.90, 0.99, 0.999};
  const std::array<double BenchPoint::*, 4> send = {&BenchPoint::send_p50_ns, &BenchPoint::send_p90_ns,
                                                    &BenchPoint::send_p99_ns, &BenchPoint::send_p999_ns};
  const std::array<double BenchPoint::*, 4> queue = {&BenchPoint::queue_p50_ns, &BenchPoint::queue_p90_ns,
                                                     &BenchPoint::queue_p99_ns, &BenchPoint::queue_p999_ns};
  for (std::size_t i = 0; i < kQuantiles.size(); ++i) {
    p.*send[i] = p.send_latency.percentile(kQuantiles[i]);
    p.*queue[i] = p.queue_delay.percentile(kQuantiles[i]);
  }
}

// Each TX queue's counts over a point's runs (every run of a point has the same queues).
std::vector<BenchQueuePoint> aggregate_queues(const std::vector<Run>& runs) {
  std::vector<BenchQueuePoint> out(runs.front().per_queue.size());
  for (std::size_t q = 0; q < out.size(); ++q) {
    BenchQueuePoint& mine = out[q];
    mine.conserved = true;
    uint64_t window_sent = 0, window_doorbells = 0;
    for (const Run& r : runs) {
      const QueueRun& one = r.per_queue[q];
      mine.submitted += one.submitted;
      mine.sent += one.sent;
      mine.dropped += one.dropped;
      mine.doorbells += one.doorbells;
      window_sent += one.window_sent;
      window_doorbells += one.window_doorbells;
      mine.conserved = mine.conserved && one.conserved;
    }
    mine.batch_mean = window_doorbells ? static_cast<double>(window_sent) /
                                             static_cast<double>(window_doorbells)
                                       : 0;
  }
  return out;
}

BenchPoint aggregate(const std::string& strategy, int threads, uint32_t queues, bool park,
                     const std::vector<Run>& runs) {
  BenchPoint p;
  p.strategy = strategy;
  p.threads = threads;
  p.queues = queues;
  p.per_queue = aggregate_queues(runs);
  p.park = park;
  p.lock = runs.front().lock;
  p.tc_stats = runs.back().tc_stats;  // the last round's tree: each round builds a fresh one
  p.runs = static_cast<int>(runs.size());
  p.drained = p.conserved = true;
  uint64_t window_sent = 0, window_doorbells = 0;
  for (const Run& r : runs) {
    p.complete = p.complete && !r.interrupted;
    if (p.output_error.empty()) p.output_error = r.output_error;
    for (const auto& [total, one] : kSummed) p.*total += r.*one;
    window_sent += r.window_sent;
    window_doorbells += r.window_doorbells;
    p.drained = p.drained && r.drained;
    p.conserved = p.conserved && r.conserved;
    p.sink_checked = r.sink_checked;
  }
  for (const auto& [mid, one] : kMedians) {
    std::vector<double> values;
    for (const Run& r : runs) values.push_back(r.*one);
    p.*mid = median(std::move(values));
  }
  aggregate_latency(p, runs);
  const auto by_mpps = [](const Run& a, const Run& b) { return a.mpps < b.mpps; };
  p.mpps_min = std::min_element(runs.begin(), runs.end(), by_mpps)->mpps;
  p.mpps_max = std::max_element(runs.begin(), runs.end(), by_mpps)->mpps;
  // Reordering fails txpath's rows only: the kernel row is the reference being measured, and
  // its senders' frames can cross a veth out of order when the qdisc owner on another CPU
  // transmits them (each CPU's receive backlog is drained on its own). It is reported.
  p.delivered = p.sink_duplicated == 0 && (p.sink_out_of_order == 0 || strategy == kKernelStrategy);
  p.batch_mean = window_doorbells ? static_cast<double>(window_sent) /
                                        static_cast<double>(window_doorbells)
                                  : 0;
  for (const Run& r : runs) {  // every round's figures, in round order
    p.mpps_samples.push_back(r.mpps);
    p.cpu_samples.push_back(r.cpu_ns_per_pkt);
    p.noise_samples.push_back(r.noise);
  }
  bench_stats::fill_row_statistics(p);
  return p;
}

// Restores the process-wide spin-park policy when the bench ends (or throws).
class SpinParkRestore {
 public:
  SpinParkRestore() noexcept : saved_(spin_park()) {}
  ~SpinParkRestore() { set_spin_park(saved_); }
  SpinParkRestore(const SpinParkRestore&) = delete;
  SpinParkRestore& operator=(const SpinParkRestore&) = delete;

 private:
  bool saved_;
};

// True unless the bench runs the seed experiment's one TX queue only.
bool several_queue_counts(const BenchConfig& cfg) {
  return cfg.queues.size() != 1 || cfg.queues.front() != 1;
}

// "[3/8] busylock threads=4 park=on round 2" (" queues=2" after the threads when --queues is not
// just 1): the line run_bench's progress is told.
std::string progress_line(const BenchConfig& cfg, std::size_t done, std::size_t total,
                          const std::string& strategy, int threads, uint32_t queues, bool park,
                          int round) {
  std::string line(1, '[');  // appended piecewise: GCC 12 warns (-Wrestrict) on "[" + ...
  line += std::to_string(done);
  line += '/';
  line += std::to_string(total);
  line += "] ";
  line += strategy;
  line += " threads=";
  line += std::to_string(threads);
  if (several_queue_counts(cfg)) {
    line += " queues=";
    line += std::to_string(queues);
  }
  line += " park=";
  line += park_name(park);
  if (cfg.repeat > 1) {
    line += " round ";
    line += std::to_string(round + 1);
  }
  return line;
}

// One thread count's runs, by (queues, park, strategy).
using RunsByPoint = std::map<std::tuple<uint32_t, bool, std::string>, std::vector<Run>>;

// A row's CPU per packet over the floor row's: the median over the rounds both ran (round i is
// each one's i-th run) and both sent in their measured windows (a window without packets has no
// CPU per packet) of the ratio within the round; 0 when there is none to take.
double floor_ratio(const std::vector<Run>& mine, const std::vector<Run>& floor) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < std::min(mine.size(), floor.size()); ++i)
    if (floor[i].cpu_ns_per_pkt > 0 && mine[i].cpu_ns_per_pkt > 0)
      ratios.push_back(mine[i].cpu_ns_per_pkt / floor[i].cpu_ns_per_pkt);
  return median(std::move(ratios));
}

// The points of one (threads, queues, park) group, config order of strategies, and their ratios
// to busylock, to the floor row and to the kernel row in the group.
void append_group(const BenchConfig& cfg, int threads, uint32_t queues, bool park,
                  RunsByPoint& runs, std::vector<BenchPoint>& points) {
  const std::size_t first = points.size();
  for (const auto& strategy : cfg.strategies) {
    const std::vector<Run>& mine = runs[{queues, park, strategy}];
    if (mine.empty()) continue;
    points.push_back(aggregate(strategy, threads, queues, park, mine));
    if (points.back().runs < cfg.repeat) points.back().complete = false;
    points.back().offered_mpps = offered_mpps(cfg, threads);
    points.back().flows = cfg.flows;
  }
  const auto from = points.begin() + static_cast<std::ptrdiff_t>(first);
  // Ratios against busylock in the group, when it was measured.
  const auto base = std::find_if(from, points.end(),
                                 [](const BenchPoint& p) { return p.strategy == "busylock"; });
  if (base != points.end()) {
    for (auto p = from; p != points.end(); ++p) {
      p->vs_busylock_mpps = base->mpps > 0 ? p->mpps / base->mpps : 0;
      p->vs_busylock_cpu = base->cpu_ns_per_pkt > 0 ? p->cpu_ns_per_pkt / base->cpu_ns_per_pkt : 0;
      p->vs_busylock_mpps_ci95 = bench_stats::paired_ratio_ci95(p->mpps_samples, base->mpps_samples);
      p->vs_busylock_cpu_ci95 = bench_stats::paired_ratio_ci95(p->cpu_samples, base->cpu_samples);
    }
  }
  // Against the floor row, round by round, when it ran.
  const std::vector<Run>& floor = runs[{queues, park, std::string(kFloorStrategy)}];
  const auto floor_row = std::find_if(
      from, points.end(), [](const BenchPoint& p) { return p.strategy == kFloorStrategy; });
  for (auto p = from; p != points.end(); ++p) {
    p->vs_floor_cpu = floor_ratio(runs[{queues, park, p->strategy}], floor);
    if (floor_row != points.end())
      p->vs_floor_cpu_ci95 = bench_stats::paired_ratio_ci95(p->cpu_samples, floor_row->cpu_samples);
  }
  // And against the kernel's own path, when it was measured.
  const auto kernel = std::find_if(
      from, points.end(), [](const BenchPoint& p) { return p.strategy == kKernelStrategy; });
  if (kernel != points.end()) {
    for (auto p = from; p != points.end(); ++p) {
      p->vs_kernel_mpps = kernel->mpps > 0 ? p->mpps / kernel->mpps : 0;
      p->vs_kernel_cpu =
          kernel->cpu_ns_per_pkt > 0 ? p->cpu_ns_per_pkt / kernel->cpu_ns_per_pkt : 0;
      p->vs_kernel_mpps_ci95 = bench_stats::paired_ratio_ci95(p->mpps_samples, kernel->mpps_samples);
      p->vs_kernel_cpu_ci95 = bench_stats::paired_ratio_ci95(p->cpu_samples, kernel->cpu_samples);
    }
  }
}


// Aggregates one thread count's runs into points (config order: queues, park, then strategy),
// with their ratios to busylock and to the kernel row at the same queue count and park policy.
// After a stop, a (queues, park, strategy) triple that never ran is left out and one that ran
// fewer rounds is not complete.
void append_points(const BenchConfig& cfg, int threads, RunsByPoint& runs,
                   std::vector<BenchPoint>& points) {
  for (const uint32_t queues : cfg.queues) {
    for (const bool park : cfg.park) append_group(cfg, threads, queues, park, runs, points);
  }
}

// What the progress lines count, across rounds.
struct RoundProgress {
  std::size_t total = 0;
  std::size_t done = 0;
  std::string last_live_note;  // said once, not once per run
  bool live_notes = true;      // false in a worker: run_bench says them, once for all rounds
  // The ETA: runs counted in `done` before this process started (a worker's earlier rounds),
  // and when it started.
  std::size_t done_elsewhere = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// " ETA 0:42" before run number counter.done starts: the mean time of the runs this process
// finished (a worker knows only its own) times the runs left in the whole bench.
std::string eta_note(const BenchConfig& cfg, const RoundProgress& counter) {
  const std::size_t finished = counter.done - 1;
  const std::size_t here = finished - counter.done_elsewhere;
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - counter.start;
  // As if the runs finished elsewhere had taken this process's mean (or the plan, before one).
  const double per_run = here > 0 ? elapsed.count() / static_cast<double>(here)
                                  : bench_detail::planned_run_seconds(cfg);
  return bench_detail::eta_note(cfg, per_run * static_cast<double>(finished), finished, counter.total);
}

// Says a run's "no live counters" note unless it is the one said last.
void tell_live_note(const Run& run, const std::function<void(const std::string&)>& progress,
                    RoundProgress& counter) {
  if (progress && counter.live_notes && !run.live_note.empty() && run.live_note != counter.last_live_note)
    progress("no live counters for txpath tc -s: " + run.live_note);
  counter.last_live_note = run.live_note;
}

using RowKey = RunsByPoint::key_type;  // (queues, park, strategy)

// The rows of one round at `threads`, in the order it runs them: every (queues, park, strategy)
// once, shuffled from the seed, the thread count and the round. Fisher-Yates over mt19937_64
// (both fully specified, unlike std::shuffle), so a seed gives the same order on every build.
std::vector<RowKey> round_order(const BenchConfig& cfg, int threads, int round) {
  std::vector<RowKey> rows;
  for (const uint32_t queues : cfg.queues)
    for (const bool park : cfg.park)
      for (const auto& strategy : cfg.strategies) rows.emplace_back(queues, park, strategy);
  std::mt19937_64 rng(cfg.seed ^ (static_cast<uint64_t>(threads) * 0x9e3779b97f4a7c15ULL) ^
                      (static_cast<uint64_t>(round) * 0xc2b2ae3d27d4eb4fULL));
  for (std::size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[rng() % i]);
  return rows;
}

// One round at one thread count: every (queues, park, strategy) once, into `runs`.
void run_round(const BenchConfig& cfg, int threads, int round, Delivery& delivery,
               const std::function<void(const std::string&)>& progress, RoundProgress& counter,
               RunsByPoint& runs) {
  for (const auto& [queues, park, strategy] : round_order(cfg, threads, round)) {
    if (stop_requested(cfg)) return;
    ++counter.done;
    if (progress)
      progress(progress_line(cfg, counter.done, counter.total, strategy, threads, queues, park, round) +
               eta_note(cfg, counter));
    set_spin_park(park);  // no waiter of an earlier run is left: its queue is gone
    const bench_detail::RowScope row(strategy, threads, queues, park, round);  // on_interval's
    Run run = run_once(cfg, strategy, threads, queues, delivery);
    tell_live_note(run, progress, counter);
    runs[{queues, park, strategy}].push_back(std::move(run));
  }
}

// ---- a round's runs as text, between a worker and run_bench ----------------------------------

// Every field of a Run and a QueueRun, by type: the worker writes them all, run_bench reads them
// all back (a field added to Run must be added here, or workers lose it).
constexpr std::pair<const char*, double Run::*> kRunReals[] = {
    {"mpps", &Run::mpps}, {"cpu_ns_per_pkt", &Run::cpu_ns_per_pkt}, {"fairness", &Run::fairness}};
constexpr std::pair<const char*, LatencyHistogram Run::*> kRunHistograms[] = {
    {"send_latency", &Run::send_latency}, {"queue_delay", &Run::queue_delay}};
constexpr std::pair<const char*, uint64_t Run::*> kRunCounts[] = {
    {"submitted", &Run::submitted},   {"sent", &Run::sent},
    {"dropped", &Run::dropped},       {"requeues", &Run::requeues},
    {"doorbells", &Run::doorbells},   {"window_sent", &Run::window_sent},
    {"window_doorbells", &Run::window_doorbells}, {"lock_waits", &Run::lock_waits},
    {"lock_wait_ns", &Run::lock_wait_ns}, {"sink_received", &Run::sink_received},
    {"sink_lost", &Run::sink_lost},   {"sink_duplicated", &Run::sink_duplicated},
    {"sink_out_of_order", &Run::sink_out_of_order}, {"sink_socket_drops", &Run::sink_socket_drops}};
constexpr std::pair<const char*, bool Run::*> kRunFlags[] = {
    {"drained", &Run::drained}, {"conserved", &Run::conserved},
    {"sink_checked", &Run::sink_checked}, {"interrupted", &Run::interrupted}};
constexpr std::pair<const char*, std::string Run::*> kRunTexts[] = {
    {"lock", &Run::lock}, {"output_error", &Run::output_error}, {"live_note", &Run::live_note}};
constexpr std::pair<const char*, uint64_t QueueRun::*> kQueueCounts[] = {
    {"submitted", &QueueRun::submitted}, {"sent", &QueueRun::sent},
    {"dropped", &QueueRun::dropped},     {"doorbells", &QueueRun::doorbells},
    {"window_sent", &QueueRun::window_sent}, {"window_doorbells", &QueueRun::window_doorbells}};
// What run_bench accepts from a worker: a round's text is a few kB per row.
constexpr std::size_t kMaxRoundText = 16u << 20;
constexpr std::size_t kMaxWorkerString = 4096;
constexpr std::size_t kMaxWorkerTcStats = 1u << 20;  // a row's final tc -s document (JSON text)
constexpr int kMaxRoundDepth = 7;

// A histogram as [min, max, [[bucket, count], ...]] (only the buckets that counted).
nlohmann::json histogram_json(const LatencyHistogram& h) {
  nlohmann::json buckets = nlohmann::json::array();
  const auto counts = h.counts();
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] != 0) buckets.push_back({i, counts[i]});
  return {h.min(), h.max(), std::move(buckets)};
}

nlohmann::json run_json(const Run& r) {
  nlohmann::json j;
  for (const auto& [name, field] : kRunReals) j[name] = r.*field;
  for (const auto& [name, field] : kRunCounts) j[name] = r.*field;
  for (const auto& [name, field] : kRunFlags) j[name] = r.*field;
  for (const auto& [name, field] : kRunTexts) j[name] = r.*field;
  for (const auto& [name, field] : kRunHistograms) j[name] = histogram_json(r.*field);
  j["tc_stats"] = r.tc_stats;
  j["steal_pct"] = r.noise.steal_pct;
  j["other_cpu_pct"] = r.noise.other_cpu_pct;
  j["per_queue"] = nlohmann::json::array();
  for (const QueueRun& q : r.per_queue) {
    nlohmann::json one;
    for (const auto& [name, field] : kQueueCounts) one[name] = q.*field;
    one["conserved"] = q.conserved;
    j["per_queue"].push_back(std::move(one));
  }
  return j;
}

std::string round_text(const RunsByPoint& runs) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [key, list] : runs)
    for (const Run& r : list)
      rows.push_back({{"queues", std::get<0>(key)}, {"park", std::get<1>(key)},
                      {"strategy", std::get<2>(key)}, {"run", run_json(r)}});
  // replace: a device's error text may hold bytes that are not UTF-8; the text must still go.
  return nlohmann::json{{"txpath_round", rows}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Reads one field of a worker's text; throws a one-line runtime_error naming it otherwise.
class FieldReader {
 public:
  explicit FieldReader(const nlohmann::json& j) : j_(j) {}
  const nlohmann::json& at(const char* name) const {
    if (!j_.is_object() || !j_.contains(name)) throw std::runtime_error(std::string("no field ") + name);
    return j_.at(name);
  }
  double real(const char* name) const {
    const auto& v = at(name);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      throw std::runtime_error(std::string("field ") + name + " is not a finite number >= 0");
    return v.get<double>();
  }
  uint64_t count(const char* name) const {
    const auto& v = at(name);
    if (!v.is_number_unsigned()) throw std::runtime_error(std::string("field ") + name + " is not a count");
    return v.get<uint64_t>();
  }
  bool flag(const char* name) const {
    const auto& v = at(name);
    if (!v.is_boolean()) throw std::runtime_error(std::string("field ") + name + " is not true or false");
    return v.get<bool>();
  }
  std::string text(const char* name, std::size_t limit = kMaxWorkerString) const {
    const auto& v = at(name);
    if (!v.is_string() || v.get_ref<const std::string&>().size() > limit)
      throw std::runtime_error(std::string("field ") + name + " is not a short string");
    return v.get<std::string>();
  }

 private:
  const nlohmann::json& j_;
};

// histogram_json()'s form back: the smallest and largest value land in the first and last
// bucket, each bucket's own bounds stand for the rest; anything else throws.
LatencyHistogram histogram_from_json(const nlohmann::json& j, const char* name) {
  const auto bad = [name] { return std::runtime_error(std::string("field ") + name + " is not a histogram"); };
  if (!j.is_array() || j.size() != 3 || !j[0].is_number_unsigned() || !j[1].is_number_unsigned() ||
      !j[2].is_array() || j[2].size() > LatencyHistogram::kBuckets)
    throw bad();
  const auto min = j[0].get<uint64_t>(), max = j[1].get<uint64_t>();
  LatencyHistogram h;
  const auto& buckets = j[2];
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    const auto& b = buckets[k];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned()) throw bad();
    const auto i = b[0].get<uint64_t>();
    if (i >= LatencyHistogram::kBuckets) throw bad();
    const auto idx = static_cast<std::size_t>(i);
    const uint64_t lo = k == 0 ? min : LatencyHistogram::bucket_low(idx);
    const uint64_t hi = k + 1 == buckets.size() ? max : std::max(lo, LatencyHistogram::bucket_high(idx));
    if (!h.add_bucket(idx, b[1].get<uint64_t>(), lo, std::min(hi, max))) throw bad();
  }
  if (h.count() > 0 && (h.min() != min || h.max() != max)) throw bad();
  return h;
}

Run run_from_json(const nlohmann::json& j, std::size_t queue_count) {
  const FieldReader in(j);
  Run r;
  for (const auto& [name, field] : kRunReals) r.*field = in.real(name);
  for (const auto& [name, field] : kRunCounts) r.*field = in.count(name);
  for (const auto& [name, field] : kRunFlags) r.*field = in.flag(name);
  for (const auto& [name, field] : kRunTexts) r.*field = in.text(name);
  for (const auto& [name, field] : kRunHistograms) r.*field = histogram_from_json(in.at(name), name);
  r.tc_stats = in.text("tc_stats", kMaxWorkerTcStats);
  r.noise = {in.real("steal_pct"), in.real("other_cpu_pct")};
  const auto& queues = in.at("per_queue");
  if (!queues.is_array() || queues.size() != queue_count)
    throw std::runtime_error("per_queue does not hold " + std::to_string(queue_count) + " TX queue(s)");
  for (const auto& q : queues) {
    const FieldReader qin(q);
    QueueRun one;
    for (const auto& [name, field] : kQueueCounts) one.*field = qin.count(name);
    one.conserved = qin.flag("conserved");
    r.per_queue.push_back(one);
  }
  return r;
}

// Adds a worker's round to `runs`: every row of the round at most once, each a row of the
// configuration with its TX queues; anything else throws a one-line runtime_error. Returns the
// rows it added.
std::vector<RowKey> read_round(const BenchConfig& cfg, int threads, int round, const std::string& text,
                               RunsByPoint& runs) {
  const std::string where =
      "bench worker (threads " + std::to_string(threads) + ", round " + std::to_string(round + 1) + "): ";
  try {
    if (text.size() > kMaxRoundText) throw std::runtime_error("output over 16 MiB");
    // A round nests 6 deep (object, rows, row, run, a histogram, its buckets' pairs; per_queue's
    // entries are 5 deep): deeper is refused as it
    // is read, before a hostile text of 16 MiB of '[' becomes millions of nested values.
    const auto shallow = [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxRoundDepth) throw std::runtime_error("nested deeper than a round");
      return true;
    };
    const nlohmann::json doc = nlohmann::json::parse(text, shallow, false);
    if (doc.is_discarded()) throw std::runtime_error("output is not JSON");
    const auto& rows = FieldReader(doc).at("txpath_round");
    if (!rows.is_array()) throw std::runtime_error("txpath_round is not a list");
    const std::vector<RowKey> expected = round_order(cfg, threads, round);
    std::vector<RowKey> seen;
    for (const auto& row : rows) {
      const FieldReader in(row);
      const auto queues = in.count("queues");
      const RowKey key{static_cast<uint32_t>(std::min<uint64_t>(queues, UINT32_MAX)), in.flag("park"),
                       in.text("strategy")};
      if (std::find(expected.begin(), expected.end(), key) == expected.end() || queues > UINT32_MAX)
        throw std::runtime_error("a row " + txpath::quoted(std::get<2>(key)) + " the configuration does not have");
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        throw std::runtime_error("row " + txpath::quoted(std::get<2>(key)) + " twice");
      seen.push_back(key);
      const std::size_t queue_count = std::get<2>(key) == kKernelStrategy ? 0 : std::get<0>(key);
      runs[key].push_back(run_from_json(in.at("run"), queue_count));
    }
    return seen;
  } catch (const std::exception& e) {
    throw std::runtime_error(where + "malformed output: " + e.what());
  }
}

// The sink (or the ifb testbed's counter) that checks arrivals for `delivery`, and with --source
// the capture its senders replay (into `capture`); the sink, null when none.
std::unique_ptr<Sink> start_delivery(const BenchConfig& cfg, Delivery& delivery,
                                     std::optional<bench_detail::Capture>& capture) {
  Probe probe(cfg.device);
  if (!cfg.source.empty()) {
    capture = load_source(cfg, probe.device());
    delivery.capture = &*capture;
  }
  std::unique_ptr<Sink> sink;
  if (auto sink_cfg = bench_detail::resolve_sink(cfg.sink, probe.device(),
                                                 frames_for(probe.device(), cfg.payload))) {
    sink = std::make_unique<Sink>(*sink_cfg);
    sink->start();
    delivery.sink = sink.get();
  } else if (cfg.sink == "auto") {
    delivery.null_nic = bench_detail::null_nic_of(probe.device());
  }
  return sink;
}

// The numbers of a configuration, each in its range.
void check_ranges(const BenchConfig& cfg) {
  if (std::count(cfg.park.begin(), cfg.park.end(), true) > 1 ||
      std::count(cfg.park.begin(), cfg.park.end(), false) > 1)
    throw ConfigError("park: each of on and off may be given once");
  if (!(cfg.duration_s > 0)) throw ConfigError("duration must be positive");
  if (!(cfg.interval_s >= 0) || !std::isfinite(cfg.interval_s))
    throw ConfigError("interval must be a finite number of seconds, 0 for none");
  if (cfg.repeat < 1 || cfg.repeat > 1000) throw ConfigError("repeat must be in 1..1000");
  if (cfg.burst < 1 || cfg.burst > kMaxBurst)
    throw ConfigError("burst " + std::to_string(cfg.burst) + " out of range 1.." + std::to_string(kMaxBurst));
  bench_detail::check_send_budget(cfg, nullptr);
  if (cfg.nodes < 0 || cfg.nodes > topology().numa_nodes)
    throw ConfigError("nodes " + std::to_string(cfg.nodes) + " out of range 1.." +
                      std::to_string(topology().numa_nodes) + " (NUMA nodes on this machine)");
  for (int t : cfg.threads)
    if (t < 1 || t > 4096) throw ConfigError("thread count " + std::to_string(t) + " out of range 1..4096");
}

// A tc configuration: picks its device (cfg.tc_dev), checks that its tree builds and names the
// root qdisc in cfg.qdisc.
void resolve_tc_config(BenchConfig& cfg) {
  const tc::Config tcc = tc::Config::load(cfg.tc_config);
  if (cfg.tc_dev.empty()) {
    const auto devs = tcc.devices();
    if (devs.size() != 1)
      throw ConfigError("tc configuration " + txpath::quoted(cfg.tc_config) + " has " + std::to_string(devs.size()) +
                        " devices: name one with --tc-dev");
    cfg.tc_dev = devs[0].name;
  }
  // A device with several TX queues in the file runs on that many (mq's children, one each).
  const uint32_t tc_queues = tcc.device(cfg.tc_dev) ? tcc.device(cfg.tc_dev)->tx_queues : 1;
  if (tc_queues > 1) {
    if (cfg.queues.empty()) cfg.queues = {tc_queues};
    if (cfg.queues != std::vector<uint32_t>{tc_queues})
      throw ConfigError("tc device " + txpath::quoted(cfg.tc_dev) + " has " + std::to_string(tc_queues) +
                        " TX queues: run it with --queues " + std::to_string(tc_queues));
  }
  if (tc_queues > 1)  // its XPS map names CPUs this machine has
    apply_tc_xps(*make_net_device("null:queues=" + std::to_string(tc_queues)), tcc.device(cfg.tc_dev)->xps_cpus);
  const tc::Tree tree = tcc.build(cfg.tc_dev, QdiscEnv{.txqueuelen = cfg.txqueuelen});
  const std::string options = tree.root->options();
  cfg.qdisc = std::string(tree.root->kind()) + (options.empty() ? "" : " " + options) + " (tc config " +
              txpath::quoted(cfg.tc_config) + ", dev " + txpath::quoted(cfg.tc_dev) + ")";
}

// The kernel row: named, it needs a device the kernel can send to as well; otherwise (with
// cfg.kernel_row) it is added when the device has one.
void add_kernel_row(BenchConfig& cfg, const Device& device, const FrameSpec& frames) {
  const bool named = std::find(cfg.strategies.begin(), cfg.strategies.end(),
                               std::string(kKernelStrategy)) != cfg.strategies.end();
  if (named) {
    // kernel_route throws when the device is real but there is nowhere to send.
    if (!bench_detail::kernel_route(device, frames))
      throw ConfigError("strategy kernel needs a real device (afpacket:IF, afxdp:IF or udp:HOST:PORT), not " +
                        txpath::quoted(device.describe()));
  } else if (cfg.kernel_row) {
    try {
      if (bench_detail::kernel_route(device, frames)) cfg.strategies.emplace_back(kKernelStrategy);
    } catch (const ConfigError&) {
      // afpacket on an interface without a testbed: txpath rows only
    }
  }
}

// The TX queue counts: the device spec's own (queues=N) when cfg.queues is empty, else each of
// cfg.queues once, in range, on a kind that takes queues=N; every count's device is built and
// given the XPS map (cfg.xps), so that a bad CPU or queue fails here. `spec_queues`: the spec's
// own count (1 when it names none).
void resolve_queues(BenchConfig& cfg, uint32_t spec_queues) {
  if (cfg.queues.empty()) {
    cfg.queues = {spec_queues};
  } else if (names_queues(cfg.device) && cfg.queues != std::vector<uint32_t>{spec_queues}) {
    // Only the spec's own count passes (a resolved configuration resolves to itself).
    throw ConfigError("--queues with device " + txpath::quoted(cfg.device) + ", which names its own queues=" +
                      std::to_string(spec_queues) + ": give the queue count once");
  }
  for (std::size_t i = 0; i < cfg.queues.size(); ++i) {
    const uint32_t q = cfg.queues[i];
    if (q < 1 || q > kMaxTxQueues)
      throw ConfigError("queue count " + std::to_string(q) + " out of range 1.." + std::to_string(kMaxTxQueues));
    if (std::find(cfg.queues.begin(), cfg.queues.begin() + static_cast<std::ptrdiff_t>(i), q) !=
        cfg.queues.begin() + static_cast<std::ptrdiff_t>(i))
      throw ConfigError("queue count " + std::to_string(q) + " given twice");
    if (q == 1) continue;
    if (!names_queues(cfg.device) && !kind_takes_queues(cfg.device))
      throw ConfigError("--queues " + std::to_string(q) + ": device " + txpath::quoted(cfg.device) +
                        " has one TX queue (kinds with queues=N: " + kinds_with_queues() + ")");
    apply_xps(*make_net_device(spec_with_queues(cfg.device, q)), cfg);
  }
}

// The strategies of cfg that can run its qdisc and lock on `device`. One the user named that
// cannot is an error (ConfigError, saying why); with every strategy, those that cannot are left
// out, but busylock, which runs every qdisc and lock, must (else the qdisc or lock is bad).
std::vector<std::string> runnable_strategies(const BenchConfig& cfg, Device& device,
                                             bool every_strategy) {
  const auto try_create = [&](const std::string& strategy) {
    TxQueueConfig q = queue_config(cfg, strategy, nullptr);
    q.service_thread = false;
    TxQueue::create(device, q);
  };
  if (every_strategy) try_create("busylock");
  std::vector<std::string> runnable;
  for (const auto& s : cfg.strategies) {
    if (s == kKernelStrategy || s == kFloorStrategy) {  // no TxQueue: nothing to check here
      runnable.push_back(s);
      continue;
    }
    try {
      try_create(s);
      runnable.push_back(s);
    } catch (const ConfigError&) {
      if (!every_strategy) throw;  // named by the user: say why it cannot run
    }
  }
  return runnable;
}

}  // namespace

const char* park_name(bool park) noexcept { return park ? "on" : "off"; }

XpsPolicy parse_xps(std::string_view text) {
  XpsPolicy xps;
  if (text == "auto") return xps;
  if (text == "off") {
    xps.mode = XpsPolicy::Mode::off;
    return xps;
  }
  xps.mode = XpsPolicy::Mode::map;
  const auto bad = [&](std::string_view why) {
    return ConfigError("--xps: " + txpath::quoted(text) + " " + std::string(why) +
                       " (auto, off, or CPU:QUEUE[+QUEUE...],... e.g. 0:0,1:1+2)");
  };
  const auto number = [&](std::string_view digits, uint32_t limit) {
    uint32_t v = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || v >= limit)
      throw bad("has " + txpath::quoted(digits) + ", not a number below " + std::to_string(limit));
    return v;
  };
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) throw bad("has " + txpath::quoted(item) + ", not CPU:QUEUE");
    const unsigned cpu = number(item.substr(0, colon), 4096);
    for (const auto& [seen, queues] : xps.cpus)
      if (seen == cpu) throw bad("names CPU " + std::to_string(cpu) + " twice");
    std::vector<uint32_t> queues;
    std::string_view rest = item.substr(colon + 1);
    while (true) {
      const std::size_t plus = rest.find('+');
      const uint32_t q = number(rest.substr(0, plus), kMaxTxQueues);
      if (std::find(queues.begin(), queues.end(), q) != queues.end())
        throw bad("names queue " + std::to_string(q) + " twice for CPU " + std::to_string(cpu));
      queues.push_back(q);
      if (plus == std::string_view::npos) break;
      rest = rest.substr(plus + 1);
    }
    xps.cpus.emplace_back(cpu, std::move(queues));
    if (comma == std::string_view::npos) return xps;
    start = comma + 1;
  }
}

std::string xps_text(const XpsPolicy& xps) {
  if (xps.mode == XpsPolicy::Mode::automatic) return "auto";
  if (xps.mode == XpsPolicy::Mode::off) return "off";
  std::string out;  // appended piecewise: GCC 12 warns (-Wrestrict) on "," + ...
  for (const auto& [cpu, queues] : xps.cpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    for (std::size_t i = 0; i < queues.size(); ++i) {
      out += i ? '+' : ':';
      out += std::to_string(queues[i]);
    }
  }
  return out;
}

bool conservation_holds(uint64_t submitted, uint64_t sent, uint64_t dropped, uint64_t queued) {
  return queued == 0 && submitted == sent + dropped;
}

std::vector<int> default_thread_counts() {
  const int cores = topology().cores;
  std::vector<int> counts{1, cores, 2 * cores, 8 * cores};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

BenchConfig resolve_bench_config(const BenchConfig& config) {
  BenchConfig cfg = config;
  // Every strategy by default; those that cannot run the qdisc (nolock: fifos only) are left out
  // below. A strategy named explicitly that cannot run it is an error.
  const bool every_strategy = cfg.strategies.empty();
  if (every_strategy) {
    cfg.strategies = {kFloorStrategy};
    for (auto& name : strategy_names()) cfg.strategies.push_back(std::move(name));
  }
  if (cfg.threads.empty()) cfg.threads = default_thread_counts();
  if (cfg.park.empty()) cfg.park = {true};
  if (cfg.seed == 0) {  // recorded, so that the order can be had again (--seed)
    std::random_device entropy;
    // Below 2^53, so that a JSON reader that holds numbers as doubles reads it exactly.
    while (cfg.seed == 0) cfg.seed = ((static_cast<uint64_t>(entropy()) << 32) | entropy()) >> 11;
  }
  check_ranges(cfg);
  check_traffic(cfg);
  if (!cfg.tc_config.empty()) resolve_tc_config(cfg);
  // Validate everything up front, so a typo fails before minutes of measuring.
  Probe probe(cfg.device);
  Device& device = probe.device();
  resolve_queues(cfg, probe.queues());
  const FrameSpec frames = frames_for(device, cfg.payload);
  if (!cfg.source.empty()) (void)load_source(cfg, device);  // a bad capture fails here
  else add_kernel_row(cfg, device, frames);
  bench_detail::resolve_sink(cfg.sink, device, frames);  // checks the --sink text
  cfg.strategies = runnable_strategies(cfg, device, every_strategy);
  const FrameTemplate tmpl(frames);
  if (tmpl.size() > device.max_frame_len())
    throw ConfigError("payload " + std::to_string(cfg.payload) + " makes a " +
                      std::to_string(tmpl.size()) + "-byte frame, over the device's maximum of " +
                      std::to_string(device.max_frame_len()));
  return cfg;
}

std::vector<BenchPoint> run_bench(const BenchConfig& config,
                                  const std::function<void(const std::string&)>& progress) {
  const BenchConfig cfg = resolve_bench_config(config);
  const SpinParkRestore restore_policy;
  Delivery delivery;
  // With a round runner the workers check arrivals and load the capture, each its own.
  std::optional<bench_detail::Capture> capture;
  const std::unique_ptr<Sink> sink = cfg.round_runner ? nullptr : start_delivery(cfg, delivery, capture);
  std::vector<BenchPoint> points;
  RoundProgress counter;
  counter.total = cfg.threads.size() * cfg.queues.size() * cfg.park.size() *
                  cfg.strategies.size() * static_cast<std::size_t>(cfg.repeat);
  for (int threads : cfg.threads) {
    if (stop_requested(cfg)) break;
    RunsByPoint runs;
    // Interleaved: round 1 runs every (queues, park, strategy) once, then round 2, ... (A B A B).
    for (int round = 0; round < cfg.repeat && !stop_requested(cfg); ++round) {
      if (cfg.round_runner) {
        const std::string text = cfg.round_runner(threads, round);
        if (text.empty() && stop_requested(cfg)) break;  // stopped before the round ran
        for (const RowKey& key : read_round(cfg, threads, round, text, runs))
          tell_live_note(runs[key].back(), progress, counter);
      } else {
        run_round(cfg, threads, round, delivery, progress, counter, runs);
      }
    }
    const std::size_t before = points.size();
    append_points(cfg, threads, runs, points);
    if (cfg.on_points && points.size() > before)
      cfg.on_points(std::span<const BenchPoint>(points).subspan(before));
  }
  return points;
}

std::string run_bench_round(const BenchConfig& config, int threads, int round,
                            const std::function<void(const std::string&)>& progress) {
  BenchConfig cfg = resolve_bench_config(config);
  cfg.round_runner = nullptr;  // this is where the round runs
  const auto at = std::find(cfg.threads.begin(), cfg.threads.end(), threads);
  if (at == cfg.threads.end() || round < 0 || round >= cfg.repeat)
    throw ConfigError("round " + std::to_string(round + 1) + " at " + std::to_string(threads) +
                      " threads is not in the configuration");
  const SpinParkRestore restore_policy;
  Delivery delivery;
  std::optional<bench_detail::Capture> capture;
  const std::unique_ptr<Sink> sink = start_delivery(cfg, delivery, capture);
  // The progress lines count as run_bench's do: the runs before this round come first.
  RoundProgress counter;
  const std::size_t per_round = cfg.queues.size() * cfg.park.size() * cfg.strategies.size();
  counter.total = cfg.threads.size() * per_round * static_cast<std::size_t>(cfg.repeat);
  counter.live_notes = false;  // its runs carry them to run_bench
  counter.done = (static_cast<std::size_t>(at - cfg.threads.begin()) * static_cast<std::size_t>(cfg.repeat) +
                  static_cast<std::size_t>(round)) * per_round;
  counter.done_elsewhere = counter.done;
  RunsByPoint runs;
  run_round(cfg, threads, round, delivery, progress, counter, runs);
  return round_text(runs);
}

}  // namespace txpath
