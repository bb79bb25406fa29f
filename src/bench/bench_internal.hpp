// SPDX-License-Identifier: MIT
// What the pieces of the bench engine share (private to src/bench): one run's numbers (Run,
// QueueRun), where its arrivals are counted (Delivery), a device made to check a spec (Probe),
// and each piece's entry points: device specs and XPS (device_spec.cpp), traffic (pacing.cpp),
// the rows (row_kernel.cpp, row_txpath.cpp, row_floor.cpp), rounds and aggregation (rounds.cpp),
// the worker wire format (worker_wire.cpp). How a row's senders are run and measured:
// bench/measure.hpp. The runner itself is bench.cpp, config resolution resolve.cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "bench/bench.hpp"
#include "bench/pcap_source.hpp"
#include "bench/real_path.hpp"
#include "net/sink.hpp"
#include "net/testbed.hpp"
#include "txpath/device.hpp"
#include "txpath/frame.hpp"
#include "txpath/histogram.hpp"
#include "txpath/netdev.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::bench_detail {

inline constexpr int kMaxBurst = 1024;  // BenchConfig::burst's upper bound

// One TX queue's counters in one run: totals after the drain, and the measured window's.
struct QueueRun {
  uint64_t submitted = 0, sent = 0, dropped = 0, doorbells = 0;
  uint64_t window_sent = 0, window_doorbells = 0;
  bool conserved = false;
};

// One run's numbers: figures over its measured window (a point reports their medians), counters
// (a point sums them) and what went wrong.
// The most a row's final tc -s document (Run::tc_stats) may take on the worker's wire; a larger
// one (htb trees of thousands of classes) is replaced by an error document, and the row stands.
inline constexpr std::size_t kMaxFinalTcStats = 1u << 20;

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
bool stop_requested(const BenchConfig& cfg);

// How long the sink may take to see the last frames of a run: until it has counted every sent
// frame, or nothing arrived for kSinkQuiet, or kSinkTimeout passed.
inline constexpr auto kSinkQuiet = std::chrono::milliseconds(300);
inline constexpr auto kSinkTimeout = std::chrono::milliseconds(5000);

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

// ---- pacing.cpp: a run's frames and offered load ---------------------------------------------

// The frames a device is sent: `payload` bytes each, addressed by the device and, on a
// testbed's host end, to the testbed's peer.
FrameSpec frames_for(const Device& device, std::size_t payload);

// What the pacers offer, all senders together, in Mpps (0: flat out, or a capture's own timing).
double offered_mpps(const BenchConfig& cfg, int threads);

// The capture of cfg.source ("pcap:FILE"), its frames checked against the device's largest.
bench_detail::Capture load_source(const BenchConfig& cfg, const Device& device);

// ---- device_spec.cpp: a device spec's TX queues, XPS maps ------------------------------------

// True when a --device spec names its own queue count (an option "queues=N" after the ':').
bool names_queues(std::string_view spec);

// The kinds that take queues=N (DeviceKind::takes_queues), listed: "null, nic, ...".
std::string kinds_with_queues();

// True when the kind of a --device spec takes queues=N (DeviceKind::takes_queues); false for an
// unknown kind.
bool kind_takes_queues(std::string_view spec);

// The --device spec of the run's device with `queues` TX queues.
std::string spec_with_queues(const std::string& spec, uint32_t queues);

// Sets the device's XPS map from cfg.xps (see XpsPolicy). Throws ConfigError for a CPU or queue
// the map names that the machine or the device does not have.
void apply_xps(NetDevice& device, const BenchConfig& cfg);

// The XPS map of a tc configuration's device (`link set dev D txqueue Q xps_cpus MASK`), when it
// has one: it replaces the bench's own (--xps). Throws ConfigError for a CPU the machine lacks.
void apply_tc_xps(NetDevice& device, const std::vector<std::vector<unsigned>>& xps);

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

// ---- the rows: row_kernel.cpp, row_txpath.cpp, row_floor.cpp ---------------------------------

// The kernel row: every sender sends the same frames' UDP payloads through its own UDP socket.
Run run_kernel_once(const BenchConfig& cfg, int threads, Delivery& delivery);

// The run's queue: the strategy, lock and qdisc of cfg, or the root tree of cfg.tc_config (its
// nodes left in *tc_tree once built).
TxQueueConfig queue_config(const BenchConfig& cfg, const std::string& strategy,
                           const std::shared_ptr<tc::Tree>& tc_tree);

// One TX queue: a TxQueue on the device, the seed experiment's path.
Run run_single_queue_once(const BenchConfig& cfg, const std::string& strategy, int threads,
                          Delivery& delivery);

// Several TX queues: the device built with queues=N, its XPS map set from cfg.xps, and a
// MultiQueueTx with the run's strategy, lock and qdisc on every queue (or cfg.tc_config's
// per-queue trees: mq's children).
Run run_multi_queue_once(const BenchConfig& cfg, const std::string& strategy, int threads,
                         uint32_t queues, Delivery& delivery);

// The floor row: the device (with `queues` TX queues) and nothing between it and the senders.
Run run_floor_once(const BenchConfig& cfg, int threads, uint32_t queues, Delivery& delivery);

// ---- rounds.cpp: round order, progress lines and ETA, aggregation into points ----------------

// One thread count's runs, by (queues, park, strategy).
using RunsByPoint = std::map<std::tuple<uint32_t, bool, std::string>, std::vector<Run>>;

using RowKey = RunsByPoint::key_type;  // (queues, park, strategy)

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

// "[3/8] busylock threads=4 park=on round 2" (" queues=2" after the threads when --queues is not
// just 1): the line run_bench's progress is told.
std::string progress_line(const BenchConfig& cfg, std::size_t done, std::size_t total,
                          const std::string& strategy, int threads, uint32_t queues, bool park,
                          int round);

// " ETA 0:42" before run number counter.done starts: the mean time of the runs this process
// finished (a worker knows only its own) times the runs left in the whole bench.
std::string eta_note(const BenchConfig& cfg, const RoundProgress& counter);

// Says a run's "no live counters" note unless it is the one said last.
void tell_live_note(const Run& run, const std::function<void(const std::string&)>& progress,
                    RoundProgress& counter);

// The rows of one round at `threads`, in the order it runs them: every (queues, park, strategy)
// once, shuffled from the seed, the thread count and the round. Fisher-Yates over mt19937_64
// (both fully specified, unlike std::shuffle), so a seed gives the same order on every build.
std::vector<RowKey> round_order(const BenchConfig& cfg, int threads, int round);

// The median of `v` (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> v);

// Aggregates one thread count's runs into points (config order: queues, park, then strategy),
// with their ratios to busylock and to the kernel row at the same queue count and park policy.
// After a stop, a (queues, park, strategy) triple that never ran is left out and one that ran
// fewer rounds is not complete.
void append_points(const BenchConfig& cfg, int threads, RunsByPoint& runs,
                   std::vector<BenchPoint>& points);

// ---- limit.cpp: the machine's limit at a thread count (docs/bench.md, "The limit row") -------

// One thread count's samples of measure_handoff(): ns per lock and per line hand-off.
struct LimitSamples {
  std::vector<double> lock_ns, line_ns;
};

// Measures the hand-off between the first two senders' CPUs (kLimitSample each, lock and line)
// and adds it to `samples`; nothing with fewer than 2 threads, unpinned senders, or both
// senders on one CPU. Run between rounds, so that nothing of the bench runs beside it.
inline constexpr std::chrono::milliseconds kLimitSample{20};
void sample_limit(const BenchConfig& cfg, int threads, LimitSamples& samples);

// Sets limit_lock_ns, limit_line_ns (the samples' medians) and vs_limit on points[from..], then
// appends the `limit` row of `threads` (kLimitStrategy) when there were samples and
// cfg.limit_row.
void apply_limit(const BenchConfig& cfg, const LimitSamples& samples, int threads,
                 std::vector<BenchPoint>& points, std::size_t from);

// ---- worker_wire.cpp: a round's runs as text, between a worker and run_bench -----------------

// A round's runs as the text a worker hands back (run_bench_round()); read_round() reads it.
std::string round_text(const RunsByPoint& runs);

// Adds a worker's round to `runs`: every row of the round at most once, each a row of the
// configuration with its TX queues; anything else throws a one-line runtime_error and adds
// nothing (a malformed round is no finished run). Returns the rows it added.
std::vector<RowKey> read_round(const BenchConfig& cfg, int threads, int round, const std::string& text,
                               RunsByPoint& runs);

}  // namespace txpath::bench_detail
