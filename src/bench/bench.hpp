// SPDX-License-Identifier: MIT
// The seed experiment as a library call: N sender threads push real Ethernet/IPv4/UDP frames
// through one TX queue (or a device's N TX queues, --queues) for a fixed time, per (strategy,
// thread count, TX queue count, spin-park policy) point.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "txpath/histogram.hpp"

namespace txpath {

// How a multi-queue run's senders are spread over the TX queues (NetDevice's XPS map).
struct XpsPolicy {
  enum class Mode : uint8_t {
    // Each CPU the senders are pinned to, at position i of the pinning order of C CPUs, sends on
    // the queues {q : q % C == i % Q}: its own queue when Q <= C (queues shared evenly when
    // Q < C), an even share of Q / C queues when Q > C. Other CPUs have no map.
    automatic,
    off,  // no XPS map: each sender is its own flow and the flow hash picks its queue
    map,  // `cpus`, as given (CPUs left out have no map)
  };
  Mode mode = Mode::automatic;
  std::vector<std::pair<unsigned, std::vector<uint32_t>>> cpus;  // Mode::map: CPU -> its queues
};

// Parses --xps: "auto", "off" or "CPU:Q[+Q...],..." (e.g. "0:0,1:1+2"). Throws ConfigError (one
// line, the text quoted) for anything else, a CPU given twice or a queue given twice for a CPU.
// CPUs and queues are checked against the machine and the device when the bench resolves.
XpsPolicy parse_xps(std::string_view text);
// The policy as --xps takes it ("auto", "off", "0:0,1:1+2").
std::string xps_text(const XpsPolicy& xps);

struct BenchInterval;
struct BenchPoint;

// Linux's default socket send buffer (net.core.wmem_default on x86-64: 256 packets of the
// kernel's truesize for a 256-byte payload, include/net/sock.h SK_WMEM_MAX): the bench's default
// send budget per sender (BenchConfig::sndbuf).
inline constexpr uint64_t kDefaultSndbuf = 212992;

struct BenchConfig {
  // Empty: the floor row (kFloorStrategy), then every strategy. Named, only those (the floor
  // row only when named: leave it out of a list to leave it out of the run).
  std::vector<std::string> strategies;
  std::vector<int> threads;              // empty: 1, cores, 2*cores, 8*cores
  double duration_s = 0.3;               // measured time per run (after a short warm-up)
  std::string lock = "ticket";
  std::string device = "nic";            // --device spec, see make_device()
  std::string qdisc = "pfifo_fast";      // tc-style spec, see make_qdisc()
  // --tc-config FILE: the root qdisc tree is device `tc_dev` of this tc configuration (tc.hpp)
  // instead of `qdisc`, and `txpath tc -s ... show` reads its live counters while a row runs.
  // tc_dev empty: the configuration's only device.
  std::string tc_config;
  std::string tc_dev;
  // TX queue counts to measure (--queues 1,2,4): a point per count. 1: one TxQueue on the device,
  // the seed experiment's path; N > 1: the device built with queues=N (make_net_device) and a
  // MultiQueueTx whose every queue runs the point's strategy, lock and qdisc; senders call its
  // send(), which picks the queue (xps). Empty: the device spec's own queues=N, else {1}; a
  // spec that names queues=N is refused together with any other list than {N}.
  std::vector<uint32_t> queues;
  XpsPolicy xps;                         // with more than one TX queue
  std::size_t payload = 32;              // UDP payload bytes
  // Packets per send call (--burst, 1..1024). 1: each sender calls TxQueue::send() per packet
  // (the seed experiment); N > 1: it takes N packets from its pool cache, writes them and hands
  // them over with one TxQueue::send_burst() (on several TX queues: one per run of consecutive
  // packets that picked the same queue). The floor row rings its doorbell every 64 packets
  // whatever the burst.
  int burst = 1;
  uint32_t txqueuelen = 1000;
  // Each sender's send budget in bytes (--sndbuf), as a socket's send buffer (sk_sndbuf): the
  // packets it has handed over and not yet seen freed (sent and completed, or dropped) may
  // charge at most this much, each its buffer plus its descriptor; a sender past it waits for
  // completions. Default: Linux's net.core.wmem_default. 0: no budget (one pool for every
  // sender; a sender that outruns the device fills the qdisc and the rest is dropped).
  // docs/bench.md, "Send budgets".
  uint64_t sndbuf = kDefaultSndbuf;
  int repeat = 3;                        // rounds; each point reports the median (and min/max)
  bool pin = true;                       // pin senders round-robin over cores, spread over nodes
  int nodes = 0;                         // use only the first N NUMA nodes (0: all)
  // Spin-then-park policies to measure (set_spin_park() before each run): true = waits park in
  // the kernel after their spin, false = they yield. Empty: {true} (the library default).
  std::vector<bool> park = {true};
  // Real devices (afpacket, afxdp, udp): also run strategy "kernel" — every sender sends the same
  // frames' UDP payloads through its own UDP socket into the kernel's own qdisc on the same
  // interface (with the kernel's own TX queue choice; in every queue count's group) — unless
  // the strategy list names it already or this is false.
  bool kernel_row = true;
  // The limit row (kLimitStrategy) at each thread count where the limit is measured: set by
  // resolve_bench_config() when the strategies are every strategy (empty) or name `limit`
  // (which then leaves the list: it is measured, not run). vs_limit is on every multi-sender
  // point either way.
  bool limit_row = false;
  // Rows left out by resolve_bench_config(), one line each ("peer:dpdk: this build has no DPDK
  // ..."): printed by the CLI after "skipped: ", kept in the JSON's config.skipped.
  std::vector<std::string> skipped;
  // Where arrivals are counted and checked: "auto" (for afpacket:IF, the peer of the testbed on
  // IF; for udp:HOST:PORT, the default testbed's peer when HOST is its address), "none", or
  // "IFNAME" / "IFNAME@NETNS".
  std::string sink = "auto";
  // A stop request (e.g. set by a SIGINT handler; lock-free, so a handler may store to it): once
  // it reads true, run_bench stops the running senders, drains the queue, checks conservation
  // of what ran, starts no further run and returns the points measured so far (see
  // BenchPoint::complete). Read with relaxed loads: it only steers loops, and the senders' joins
  // order their results. nullptr: never stops early.
  const std::atomic<bool>* stop = nullptr;
  // Each round runs every row once in an order shuffled from this seed, the thread count and the
  // round (the same seed gives the same order); 0: resolve_bench_config() picks one at random and
  // records it here.
  uint64_t seed = 0;
  // Where each round runs. Empty: in this process. Set (the CLI's default: a fresh process per
  // round, as pyperf runs its workers): run_bench calls it with the thread count and round index
  // (from 0), and it returns what run_bench_round() returned for them elsewhere; run_bench
  // checks that text as untrusted input and aggregates it as if the round had run here; an
  // empty text once `stop` reads true means the round was stopped before it ran. It
  // throws (std::runtime_error, one line) for a round that could not run; run_bench then throws
  // it on. The sink then belongs to the worker.
  std::function<std::string(int threads, int round)> round_runner;
  // Interval reports (--interval, as iperf3 -i): with interval_s > 0 and on_interval set, each
  // run's measured window is cut into slices of interval_s seconds (the last one shorter) and
  // on_interval is told each slice's figures as it ends, on the thread that called run_bench.
  double interval_s = 0;
  std::function<void(const BenchInterval&)> on_interval;
  // Told the points of one thread count once they are final (every round ran, ratios and
  // statistics filled in), in run_bench's order, on the thread that called run_bench: a caller
  // prints rows as they finish instead of all at the end. The span is valid during the call.
  std::function<void(std::span<const BenchPoint>)> on_points;
  // Offered load (docs/bench.md, "Offered load and traffic"). 0: flat out (the seed
  // experiment). rate_pps: packets per second offered by all senders together (each sender
  // rate_pps / threads); rate_per_sender_pps: by each sender. At most one of the two. Every row
  // is paced, the floor and kernel rows included; BenchPoint::offered_mpps says what was offered.
  double rate_pps = 0;
  double rate_per_sender_pps = 0;
  // Flows per sender (1..kMaxFlows; threads * flows at most kSinkMaxSenders): each sender sends
  // `flows` flows of its own (distinct UDP source ports, each its flow hash), round-robin. 1:
  // the seed experiment's frames.
  uint32_t flows = 1;
  // Where the frames come from: "" (generated, FrameTemplate) or "pcap:FILE" (a classic pcap
  // capture's Ethernet frames, replayed; sender t of T replays frames t, t+T, ... in a loop).
  // With a capture: no kernel row, no --flows, the sink does not count (the frames are not
  // numbered by this run); conservation is checked as for every row.
  std::string source;
  // With a capture: a file descriptor holding its bytes (a sealed snapshot, snapshot_pcap()),
  // read instead of the file when >= 0, so that every round of a bench replays the same
  // capture whatever happens to the file meanwhile. Not owned; -1: read the file.
  int source_fd = -1;
  // A capture's timing: 0 flat out; X > 0 its time stamps X times as fast (2: twice as fast).
  // Needs a capture; not with a rate.
  double replay_speed = 0;
};

// One slice of a run's measured window (BenchConfig::interval_s): which run, when, and what its
// queue(s) sent and dropped in the slice.
struct BenchInterval {
  std::string strategy;
  int threads = 0;
  uint32_t queues = 1;
  bool park = true;
  int round = 0;         // 0-based
  double begin_s = 0;    // seconds since the measured window opened
  double end_s = 0;
  uint64_t sent = 0;     // in this slice
  uint64_t dropped = 0;  // in this slice (the kernel row: its sockets' refusals are not sampled: 0)
  double mpps = 0;       // sent / (end_s - begin_s), millions per second
};
inline constexpr uint32_t kMaxFlows = 4096;
static_assert(std::atomic<bool>::is_always_lock_free, "BenchConfig::stop is set from signal handlers");

// One TX queue's share of a point, summed over its runs.
struct BenchQueuePoint {
  uint64_t submitted = 0;
  uint64_t sent = 0;
  uint64_t dropped = 0;
  uint64_t doorbells = 0;
  double batch_mean = 0;  // packets per doorbell in the measured windows
  bool conserved = false;  // submitted == sent + dropped, nothing left queued, every repeat
};

// A 95% confidence interval of a ratio or figure; lo == hi == 0 when there is none (fewer than
// two rounds, or no reference row).
struct Interval95 {
  double lo = 0;
  double hi = 0;
};

// The machine's noise during measured windows, read from /proc/stat and the process's own CPU
// time: what the hypervisor took (steal) and what other processes used, each as a percentage of
// the whole machine's CPU time over the window (100 = every CPU, the whole window).
struct BenchNoise {
  double steal_pct = 0;
  double other_cpu_pct = 0;
};

struct BenchPoint {
  std::string strategy;       // a strategy name, "peer:ck_ring" / "peer:mutex_deque", or the
                              // rows that are not txpath's: floor, kernel, limit, peer:dpdk,
                              // peer:testpmd
  std::string lock;           // lock kind ("-" for strategies and peers that take no lock)
  int threads = 0;
  uint32_t queues = 1;        // the device's TX queues (BenchConfig::queues)
  // Each TX queue's counts (they sum to the point's); empty for the kernel row, whose queue
  // choice is the kernel's.
  std::vector<BenchQueuePoint> per_queue;
  bool park = true;           // the set_spin_park() policy during the point's runs
  double mpps = 0;            // median over the repeats of sent packets per second (millions)
  double mpps_min = 0;
  double mpps_max = 0;
  double cpu_ns_per_pkt = 0;  // process CPU time / packets sent, in the measured windows
  uint64_t submitted = 0;     // summed over repeats, whole point including warm-up and drain
  uint64_t sent = 0;
  uint64_t dropped = 0;
  uint64_t requeues = 0;
  uint64_t doorbells = 0;
  double fairness = 0;        // Jain index over per-sender accepted-and-not-dropped counts
  double batch_mean = 0;      // packets per doorbell
  uint64_t lock_waits = 0;    // lock acquisitions that had to wait (root lock and busylock)
  uint64_t lock_wait_ns = 0;  // time spent waiting for them
  // Sampled latency over all the point's rounds (one packet in 64 in the measured windows), from
  // log-linear histograms (txpath/histogram.hpp: within 1.6%). send_*: the send() call (or the
  // floor's xmit, the kernel row's sendto); queue_*: from handing the packet to send() to the
  // device's xmit() taking it (0 for the kernel row: its queue is the kernel's).
  double send_p50_ns = 0;
  double send_p90_ns = 0;
  double send_p99_ns = 0;
  double send_p999_ns = 0;
  double queue_p50_ns = 0;
  double queue_p90_ns = 0;
  double queue_p99_ns = 0;
  double queue_p999_ns = 0;
  LatencyHistogram send_latency;  // ns, every round's samples
  LatencyHistogram queue_delay;   // ns
  double offered_mpps = 0;    // the pacers' rate, all senders (0: flat out, or a capture's timing)
  uint32_t flows = 1;         // flows per sender (BenchConfig::flows)
  double vs_busylock_mpps = 0;  // mpps / busylock's mpps at the same thread count, queue count
                                // and park policy (0 if none)
  double vs_busylock_cpu = 0;   // cpu_ns_per_pkt / busylock's at the same threads, queues, park
  bool drained = false;       // every accepted packet left the queue after senders stopped
  bool conserved = false;     // submitted == sent + dropped, nothing left queued, every repeat,
                              // on every TX queue and in total
  // Sink counts, summed over repeats (sink_checked: a sink counted this point's runs).
  bool sink_checked = false;
  uint64_t sink_received = 0;      // distinct frames that arrived
  uint64_t sink_lost = 0;          // sent - received: sent, but never arrived
  uint64_t sink_duplicated = 0;    // arrived more than once
  uint64_t sink_out_of_order = 0;  // arrived after a later frame of the same sender
  uint64_t sink_socket_drops = 0;  // of the lost: dropped at the sink's own socket
  bool delivered = true;           // no duplicate, no reordering (loss is reported, not failed;
                                   // the kernel row's reordering is reported, not failed)
  // cpu_ns_per_pkt / the floor row's at the same threads, queues and park: the median over the
  // rounds of each round's ratio (both rows ran in the same round; rounds where either sent
  // nothing in its measured window are left out); 0 without a floor row or such a round.
  double vs_floor_cpu = 0;
  double vs_kernel_mpps = 0;       // mpps / the kernel row's at the same threads, queues, park
  double vs_kernel_cpu = 0;        // cpu_ns_per_pkt / the kernel row's
  double vs_dpdk_mpps = 0;         // mpps / the peer:dpdk row's at the same threads, queues, park
  double vs_dpdk_cpu = 0;          // cpu_ns_per_pkt / the peer:dpdk row's
  // The machine's limit at this thread count (docs/bench.md, "The limit row"): ns per hand-off
  // of one test-and-set lock, and of one cache line, between the first two senders' CPUs,
  // measured once a round before the round's rows, median of the rounds; 0 when not measured
  // (1 thread, senders not pinned, or both senders on one CPU). vs_limit: cpu_ns_per_pkt over
  // limit_line_ns (the hand-off every shared queue pays at least once a packet), on
  // multi-sender rows.
  double limit_lock_ns = 0;
  double limit_line_ns = 0;
  double vs_limit = 0;
  // Statistics over the rounds (each round is one run of every row, so round i of two rows ran
  // side by side): every round's figure in round order, the coefficient of variation
  // (stddev / mean) of Mpps and of CPU per packet, and 95% confidence intervals of each ratio
  // taken round by round (paired: round i's figure over the reference's round i).
  std::vector<double> mpps_samples;
  std::vector<double> cpu_samples;         // CPU ns per packet
  std::vector<BenchNoise> noise_samples;   // the machine's noise in each round's window
  double mpps_cv = 0;
  double cpu_cv = 0;
  Interval95 vs_busylock_mpps_ci95;
  Interval95 vs_busylock_cpu_ci95;
  Interval95 vs_floor_cpu_ci95;
  Interval95 vs_kernel_mpps_ci95;
  Interval95 vs_kernel_cpu_ci95;
  // The rounds disagree: bimodal, or a coefficient of variation above the threshold. The reason
  // is one short phrase ("bimodal: 1.4 vs 9.1 Mpps", "cv 23%"); empty when stable.
  bool unstable = false;
  std::string unstable_reason;
  BenchNoise noise;         // the worst of noise_samples (each field's maximum)
  int advised_repeat = 0;   // rounds that would bring the Mpps CI within +-5% at the observed CV
  // Runs aggregated (BenchConfig::repeat unless the bench was stopped) and whether the point is
  // whole: every round ran its full duration. A stop leaves the point it interrupted with
  // complete == false (fewer runs, or a last run cut short; its counts and conservation check
  // cover exactly what ran) and points not started at all out of the result.
  int runs = 0;
  bool complete = true;
  // The final `tc -s` statistics of the row's qdisc tree, as JSON text:
  // {"qdiscs": [...], "classes": [...]}, each list in the form `txpath tc -s -j qdisc show` /
  // `class show` prints (kind, handle, parent, options, bytes, packets, drops, ..., the xstats
  // as keys), taken when the row's last round ended (after its drain, before its tree went):
  // the counters of that round's tree alone, since every round builds a fresh tree. With several
  // TX queues: mq's root (the sum) and each queue's tree. Empty for rows without a txpath qdisc
  // (floor, kernel, peer:*), and when the tc device has another TX queue count than the row.
  std::string tc_stats;
  // A device output that could not be written during this point's runs (pcap:FILE: a failed
  // write, fsync or rename), one line naming the file; empty if none. The measurement stands;
  // the file is left as it was before the run (see PcapDevice).
  std::string output_error;
};

// The strategy name of the kernel's own path in a bench with a real device.
inline constexpr const char* kKernelStrategy = "kernel";

// The strategy name of the harness's own limit, on every device: each sender writes its frames
// (as every row does) and hands them straight to the device — no strategy, no qdisc, no lock
// but the device's tx lock, taken once per doorbell — ringing the doorbell (xmit with more =
// false) every kFloorBatch packets and reaping completions (poll()) when the device says they
// are due. On several TX queues sender t uses queue t % queues (senders beyond the queue count
// share theirs, serialised by its tx lock). Every other row's vs_floor_cpu is relative to it.
// Its counts: submitted = packets its senders wrote and handed over; sent = what the device
// counted as accepted (DeviceStats::tx_packets, not the senders' own count); dropped = packets
// the device still refused when the run stopped (freed); conserved when submitted == sent +
// dropped on every TX queue and every device completed what it accepted (in_flight() 0).
inline constexpr const char* kFloorStrategy = "floor";
inline constexpr std::size_t kFloorBatch = 64;

// The row of the machine's own limit at a thread count of 2 or more with pinned senders
// (docs/bench.md, "The limit row"): not a queue, but two threads on the first two senders' CPUs
// handing one cache line back and forth, measured before each round. Its cpu_ns_per_pkt is
// limit_line_ns (ns per hand-off), its Mpps the hand-offs per microsecond (a queue shared by the
// two CPUs passes at most one packet a hand-off unless it batches), lock "tas" and nothing
// submitted. In the default set; named alone, only it is measured (BenchConfig::limit_row).
inline constexpr const char* kLimitStrategy = "limit";

// Where the limit is measured: at `threads` 2 or more with senders pinned and the first two on
// two CPUs (limit_measured_at); somewhere in the configuration (limit_measured).
bool limit_measured_at(const BenchConfig& cfg, int threads);
bool limit_measured(const BenchConfig& cfg);

// DPDK as a peer (docs/bench.md, "The DPDK peers"; bench/dpdk_env.hpp): peer:dpdk runs DPDK's
// many-producers-one-queue pattern in this process (rte_ring, one TX thread per queue,
// rte_eth_tx_burst on DPDK's driver for the same device); peer:testpmd runs dpdk-testpmd in
// txonly mode on the same interface. Where DPDK is missing, or has no driver for the device,
// each is skipped with one line (BenchConfig::skipped), never failing the run.
inline constexpr const char* kDpdkPeer = "peer:dpdk";
inline constexpr const char* kTestpmdPeer = "peer:testpmd";

// Rows the bench runs itself, not through a TxQueue strategy: floor, kernel and the DPDK peers.
bool bench_own_row(std::string_view strategy) noexcept;
// Rows without per-queue counts: the kernel row (the kernel's queue choice) and peer:testpmd
// (testpmd's own count). peer:dpdk counts each of its rings and TX threads, as the floor row
// each TX queue.
bool without_queue_counts(std::string_view strategy) noexcept;

// submitted == sent + dropped and nothing queued: the conservation check every point must pass.
bool conservation_holds(uint64_t submitted, uint64_t sent, uint64_t dropped, uint64_t queued);

// Thread counts used when BenchConfig::threads is empty.
std::vector<int> default_thread_counts();

// "on" / "off": how park values are written (table, CSV, JSON) and read (--park).
const char* park_name(bool park) noexcept;

// Fills in defaults (every strategy, default thread counts, park {true}, queues) and checks the
// whole configuration (strategies, lock, device at every queue count, XPS map, qdisc, payload vs
// the device's MTU, no park value or queue count twice) without running anything.
// Throws ConfigError with one line on the first problem.
BenchConfig resolve_bench_config(const BenchConfig& config);

// Runs every point (after resolve_bench_config()); `progress` (may be empty) is told before each
// run starts ("[3/8] busylock threads=4 park=on round 2", with " ETA 0:42" when the whole bench is
// planned to take 3 s or more); BenchConfig::on_points and on_interval are told as described
// there. Points come grouped by thread count, then TX queue count, then park policy (in config
// order), then strategy; runs at one thread count are interleaved over all three, in rounds (each
// runs every row once, in the order BenchConfig::seed shuffles; each round in
// config.round_runner when set). The process-wide spin-park policy is restored afterwards.
// Throws ConfigError for a bad strategy, lock, device or qdisc, before anything runs.
// When config.stop is set, returns early with the points that ran (see BenchConfig::stop).
//
// Names are bytes: a device spec, a tc configuration path or a sink name may hold bytes that are
// not UTF-8 (a pcap file named "\xff.pcap"). `txpath bench --json` writes every text value that
// is well-formed UTF-8 as is; one that is not is written with each such byte replaced by U+FFFD
// (for people) plus a sibling field NAME_hex holding the exact bytes in lowercase hex (for
// programs): {"device": "pcap:/tmp/\ufffd.pcap", "device_hex": "706361703a2f746d702fff2e70636170"}. The
// sibling is present only when needed; a reader that wants the bytes takes NAME_hex when
// present, else NAME.
//
// A round that fails (its worker, or one of its runs, throws) after some run had finished throws
// BenchRoundFailed: the finished runs are not discarded.
std::vector<BenchPoint> run_bench(const BenchConfig& config,
                                  const std::function<void(const std::string&)>& progress = {});

// What run_bench throws when a round fails after other runs finished (a tc file changed between
// rounds so that it no longer builds, a worker killed): `points` are those of every run that
// finished (the failing thread count's marked incomplete, BenchPoint::complete; on_points was told
// them), `cause` what the round threw; what() names the round and says why, in one line.
struct BenchRoundFailed : std::runtime_error {
  BenchRoundFailed(const std::string& what, std::vector<BenchPoint> finished, std::exception_ptr why)
      : std::runtime_error(what), points(std::move(finished)), cause(std::move(why)) {}
  std::vector<BenchPoint> points;
  std::exception_ptr cause;
};

// One round of a resolved configuration in this process (a worker's job: BenchConfig::round_runner
// runs it elsewhere): every row at `threads` once, in the seed's order, with the sink if any.
// `progress` is told the same lines run_bench would tell for this round. Returns the round's
// results as text for run_bench to read back (a private format: one binary on both sides).
// Honours config.stop as run_bench does (the text then holds the runs that ran).
std::string run_bench_round(const BenchConfig& config, int threads, int round,
                            const std::function<void(const std::string&)>& progress = {});

// Lines to print after the table (each without "warning: " and newline): the machine was busy
// during some rows' windows (other processes' CPU above 10% of the machine, or steal above 5%),
// each unstable row and why, the --repeat that would bring every row's Mpps 95% CI within +-5%,
// and a single round (no spread known). Empty when there is nothing to say.
std::vector<std::string> bench_warnings(const std::vector<BenchPoint>& points);

}  // namespace txpath
