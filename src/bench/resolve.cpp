// SPDX-License-Identifier: MIT
// Config resolution (resolve_bench_config(), default_thread_counts(): bench.hpp): every number in
// its range, the traffic options, a tc configuration, the TX queue counts and their XPS maps, the
// kernel row, the strategies that can run, all checked before anything runs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/topology.hpp"
#include "bench/bench_internal.hpp"
#include "bench/dpdk_env.hpp"
#include "bench/real_path.hpp"
#include "bench/sender_pools.hpp"
#include "core/text.hpp"
#include "net/sink.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/netdev.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"
#include "txpath/traffic_classes.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::bench_detail {

namespace {

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

// The limit row is measured, not run (kLimitStrategy): in the default set, or named, when it
// leaves the strategy list and needs what it is measured with: 2+ pinned senders on two CPUs.
void take_limit_row(BenchConfig& cfg, bool every_strategy) {
  if (every_strategy) cfg.limit_row = true;  // kept when resolved again (run_bench after the CLI)
  const auto named = std::remove(cfg.strategies.begin(), cfg.strategies.end(), std::string(kLimitStrategy));
  if (named == cfg.strategies.end()) return;
  cfg.strategies.erase(named, cfg.strategies.end());
  cfg.limit_row = true;
  if (!limit_measured(cfg))
    throw ConfigError("strategy limit needs 2 or more senders pinned on two CPUs (--threads 2 or more, no --no-pin, "
                      "a machine with 2 or more cores)");
}

// The DPDK peers where they cannot run (no DPDK in this build or on this machine, no DPDK
// driver for the device, testpmd asked to replay or pace): out of the list, one line each.
void take_dpdk_peers(BenchConfig& cfg) {
  const auto why_not = [&](const std::string& s) -> std::optional<std::string> {
    if (s == kDpdkPeer) return dpdk_unavailable(cfg.device);
    if (s != kTestpmdPeer) return std::nullopt;
    if (!cfg.source.empty() || cfg.rate_pps > 0 || cfg.rate_per_sender_pps > 0 || cfg.flows > 1)
      return std::string("testpmd sends its own frames: no capture, rate or flows");
    return testpmd_unavailable(cfg.device);
  };
  std::vector<std::string> kept;
  for (std::string& s : cfg.strategies) {
    if (const auto why = why_not(s)) cfg.skipped.push_back(s + ": " + *why);
    else kept.push_back(std::move(s));
  }
  cfg.strategies = std::move(kept);
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
  const std::string options = tc::options_text(*tree.root);
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

// The most TX queues a bench run takes on this machine: 8 per hardware thread, at least 64 (a
// real NIC has about one per CPU; XPS maps each CPU to its own). Each queue of a run is a whole
// TxQueue with its own service thread, which wakes every millisecond while idle: past a few
// hundred on two cores those threads take every CPU, and the setup and teardown of the run's
// queues (linear) crawled behind them (600 queues: 23 s for a 0.1 s run; 800: not in 60 s).
uint32_t bench_queue_cap() {
  constexpr uint32_t kPerCpu = 8, kFloor = 64;
  const auto pus = static_cast<uint32_t>(std::max(1, topology().pus));
  return std::clamp(pus * kPerCpu, kFloor, kMaxTxQueues);
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
    if (const uint32_t cap = bench_queue_cap(); q > cap)
      throw ConfigError("queue count " + std::to_string(q) + " is over this machine's limit of " + std::to_string(cap) +
                        " TX queues for a bench run (8 per hardware thread, at least 64: each queue runs its "
                        "own service thread)");
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
    if (bench_own_row(s)) {  // no TxQueue: nothing to check here
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

}  // namespace txpath::bench_detail

namespace txpath {

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
  if (every_strategy) {  // the strawman peers only when named: they drop what they cannot take
    cfg.strategies = {kFloorStrategy};
    for (auto& name : strategy_names())
      if (!name.starts_with("peer:")) cfg.strategies.push_back(std::move(name));
    cfg.strategies.emplace_back(kDpdkPeer);     // where DPDK can run them (take_dpdk_peers)
    cfg.strategies.emplace_back(kTestpmdPeer);
  }
  if (cfg.threads.empty()) cfg.threads = default_thread_counts();
  if (cfg.park.empty()) cfg.park = {true};
  if (cfg.seed == 0) {  // recorded, so that the order can be had again (--seed)
    std::random_device entropy;
    // Below 2^53, so that a JSON reader that holds numbers as doubles reads it exactly.
    while (cfg.seed == 0) cfg.seed = ((static_cast<uint64_t>(entropy()) << 32) | entropy()) >> 11;
  }
  bench_detail::check_ranges(cfg);
  bench_detail::check_traffic(cfg);
  bench_detail::take_limit_row(cfg, every_strategy);
  bench_detail::take_dpdk_peers(cfg);
  if (!cfg.tc_config.empty()) bench_detail::resolve_tc_config(cfg);
  // Validate everything up front, so a typo fails before minutes of measuring.
  bench_detail::Probe probe(cfg.device);
  Device& device = probe.device();
  bench_detail::resolve_queues(cfg, probe.queues());
  const FrameSpec frames = bench_detail::frames_for(device, cfg.payload);
  if (!cfg.source.empty()) (void)bench_detail::load_source(cfg, device);  // a bad capture fails here
  else bench_detail::add_kernel_row(cfg, device, frames);
  bench_detail::resolve_sink(cfg.sink, device, frames);  // checks the --sink text
  cfg.strategies = bench_detail::runnable_strategies(cfg, device, every_strategy);
  const FrameTemplate tmpl(frames);
  if (tmpl.size() > device.max_frame_len())
    throw ConfigError("payload " + std::to_string(cfg.payload) + " makes a " +
                      std::to_string(tmpl.size()) + "-byte frame, over the device's maximum of " +
                      std::to_string(device.max_frame_len()));
  return cfg;
}

}  // namespace txpath
