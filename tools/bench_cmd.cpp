// SPDX-License-Identifier: MIT
// `txpath bench`: the seed experiment (netperf UDP_STREAM senders into one TX queue).
#include "bench_cmd.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "txpath/error.hpp"
#include "txpath/report.hpp"
#include "txpath/topology.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::cli {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t comma = s.find(',', start);
    const std::size_t end = comma == std::string::npos ? s.size() : comma;
    out.push_back(s.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<int> parse_threads(const std::string& s) {
  std::vector<int> out;
  for (const auto& item : split(s)) {
    int v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 1 || v > 4096)
      throw ConfigError("--threads: \"" + item + "\" is not a thread count in 1..4096");
    out.push_back(v);
  }
  return out;
}

std::vector<bool> parse_park(const std::string& s) {
  std::vector<bool> out;
  for (const auto& item : split(s)) {
    if (item != "on" && item != "off")
      throw ConfigError("--park: \"" + item + "\" is not on or off (e.g. --park on,off)");
    const bool park = item == "on";
    if (std::find(out.begin(), out.end(), park) != out.end())
      throw ConfigError("--park: \"" + item + "\" given twice");
    out.push_back(park);
  }
  return out;
}

std::vector<std::string> parse_strategies(const std::string& s) {
  if (s == "all") return {};  // the library: every strategy that can run the qdisc
  auto known = strategy_names();
  known.emplace_back(kKernelStrategy);  // the kernel's own path, with a real device
  std::vector<std::string> out;
  for (const auto& item : split(s)) {
    if (std::find(known.begin(), known.end(), item) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw ConfigError("--strategy: unknown strategy \"" + item + "\" (known: " + list + ", all)");
    }
    out.push_back(item);
  }
  return out;
}

nlohmann::json to_json(const BenchConfig& cfg, const std::vector<BenchPoint>& points) {
  const Topology& topo = topology();
  std::vector<std::string> park;
  for (const bool p : cfg.park) park.emplace_back(park_name(p));
  nlohmann::json j;
  j["config"] = {{"strategies", cfg.strategies}, {"threads", cfg.threads},
                 {"duration_s", cfg.duration_s}, {"lock", cfg.lock},
                 {"device", cfg.device},         {"qdisc", cfg.qdisc},
                 {"payload", cfg.payload},       {"txqueuelen", cfg.txqueuelen},
                 {"repeat", cfg.repeat},         {"pin", cfg.pin},
                 {"nodes", cfg.nodes},           {"park", park},
                 {"sink", cfg.sink},             {"kernel_row", cfg.kernel_row}};
  j["topology"] = {{"cores", topo.cores},
                   {"pus", topo.pus},
                   {"numa_nodes", topo.numa_nodes},
                   {"cpu_model", topo.cpu_model}};
  j["results"] = nlohmann::json::array();
  for (const auto& p : points) {
    j["results"].push_back({{"strategy", p.strategy},
                            {"lock", p.lock},
                            {"park", park_name(p.park)},
                            {"threads", p.threads},
                            {"mpps", p.mpps},
                            {"mpps_min", p.mpps_min},
                            {"mpps_max", p.mpps_max},
                            {"cpu_ns_per_pkt", p.cpu_ns_per_pkt},
                            {"submitted", p.submitted},
                            {"sent", p.sent},
                            {"dropped", p.dropped},
                            {"requeues", p.requeues},
                            {"fairness", p.fairness},
                            {"batch_mean", p.batch_mean},
                            {"lock_waits", p.lock_waits},
                            {"lock_wait_ns", p.lock_wait_ns},
                            {"send_p50_ns", p.send_p50_ns},
                            {"send_p99_ns", p.send_p99_ns},
                            {"vs_busylock_mpps", p.vs_busylock_mpps},
                            {"vs_busylock_cpu", p.vs_busylock_cpu},
                            {"conserved", p.conserved}});
    if (p.sink_checked) {
      j["results"].back()["sink"] = {{"received", p.sink_received},
                                     {"lost", p.sink_lost},
                                     {"duplicated", p.sink_duplicated},
                                     {"out_of_order", p.sink_out_of_order},
                                     {"socket_drops", p.sink_socket_drops},
                                     {"delivered", p.delivered}};
    }
    if (p.vs_kernel_mpps > 0) {
      j["results"].back()["vs_kernel_mpps"] = p.vs_kernel_mpps;
      j["results"].back()["vs_kernel_cpu"] = p.vs_kernel_cpu;
    }
  }
  return j;
}

}  // namespace

void add_bench_command(CLI::App& app, BenchOptions& o) {
  CLI::App* cmd = app.add_subcommand("bench", "N senders into one TX queue; Mpps and CPU per packet");
  cmd->add_option("--strategy", o.strategies, "Comma-separated strategies, or 'all'")
      ->capture_default_str();
  cmd->add_option("--threads", o.threads,
                  "Comma-separated sender counts (default: 1,cores,2*cores,8*cores)");
  cmd->add_option("--duration", o.duration, "Measured seconds per point")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  cmd->add_option("--lock", o.lock, "Spinlock kind: ticket, ttas, mcs, mutex, cna")->capture_default_str();
  cmd->add_option("--park", o.park,
                  "Spin-then-park policy of lock waits: on (park in the kernel), off (yield), "
                  "or on,off (both, interleaved)")
      ->capture_default_str();
  cmd->add_option("--device", o.device, "null | nic | nic:pkt=NS,doorbell=NS,ring=N")
      ->capture_default_str();
  cmd->add_option("--qdisc", o.qdisc, "Root qdisc, tc syntax (e.g. 'pfifo limit 1000')")
      ->capture_default_str();
  cmd->add_option("--tc-config", o.tc_config,
                  "Root qdisc tree from this txpath tc configuration file (instead of --qdisc); "
                  "txpath tc -s qdisc show reads its live counters while a row runs");
  cmd->add_option("--tc-dev", o.tc_dev, "Device of --tc-config to use (default: its only device)");
  cmd->add_option("--payload", o.payload, "UDP payload bytes")
      ->check(CLI::Range(16, 9000))
      ->capture_default_str();
  cmd->add_option("--repeat", o.repeat, "Rounds per point (interleaved); the median is reported")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--nodes", o.nodes, "Use only the first N NUMA nodes (default: all)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--json", o.json, "Write results as JSON to FILE");
  cmd->add_option("--csv", o.csv, "Write results as CSV to FILE");
  cmd->add_option("--plot", o.plot, "Write an SVG chart (Mpps vs threads) to FILE");
  auto* pin = cmd->add_flag("--pin", o.pin, "Pin senders round-robin over cores, spread over NUMA nodes (default)");
  auto* no_pin = cmd->add_flag("--no-pin", o.no_pin, "Do not pin sender threads");
  pin->excludes(no_pin);
  cmd->add_flag("--quiet", o.quiet, "No progress lines on stderr");
  cmd->add_option("--sink", o.sink,
                  "Where arrivals are counted: auto (the testbed peer of the device), none, "
                  "IFNAME or IFNAME@NETNS")
      ->capture_default_str();
  cmd->add_flag("--no-kernel-row", o.no_kernel_row,
                "With afpacket/udp devices, do not add the kernel's own path (strategy kernel)");
}

int run_bench_command(const BenchOptions& o) {
  BenchConfig cfg;
  std::vector<BenchPoint> points;
  std::string park_list;  // "on", "off" or "on,off", as resolved
  try {
    cfg.strategies = parse_strategies(o.strategies);
    if (!o.threads.empty()) cfg.threads = parse_threads(o.threads);
    else cfg.threads = default_thread_counts();
    cfg.duration_s = o.duration;
    cfg.lock = o.lock;
    cfg.park = parse_park(o.park);
    cfg.device = o.device;
    cfg.qdisc = o.qdisc;
    cfg.tc_config = o.tc_config;
    cfg.tc_dev = o.tc_dev;
    cfg.payload = o.payload;
    cfg.pin = !o.no_pin;
    cfg.repeat = o.repeat;
    cfg.nodes = o.nodes;
    cfg.sink = o.sink;
    cfg.kernel_row = !o.no_kernel_row;
    for (const auto& [flag, file] : {std::pair{"--json", o.json}, std::pair{"--csv", o.csv},
                                     std::pair{"--plot", o.plot}}) {
      if (file.empty()) continue;
      std::ofstream probe(file, std::ios::app);
      if (!probe) throw ConfigError(std::string(flag) + ": cannot write \"" + file + "\"");
    }
    cfg = resolve_bench_config(cfg);
    const Topology& topo = topology();
    fmt::print("topology: {} cores, {} hardware threads, {} NUMA node(s), {}\n", topo.cores,
               topo.pus, topo.numa_nodes, topo.cpu_model);
    for (const bool p : cfg.park) park_list += (park_list.empty() ? "" : ",") + std::string(park_name(p));
    fmt::print("config: device {}, qdisc {}, lock {}, park {}, payload {} B, {} s per point x {} round(s), {}\n\n",
               cfg.device, cfg.qdisc, cfg.lock, park_list, cfg.payload, cfg.duration_s, cfg.repeat,
               cfg.pin ? (cfg.nodes ? fmt::format("pinned to {} node(s)", cfg.nodes) : "pinned")
                       : "unpinned");
    std::fflush(stdout);
    points = run_bench(cfg, [&](const std::string& line) {
      if (!o.quiet) fmt::print(stderr, "txpath bench: {}\n", line);
    });
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  }

  const bool kernel = std::any_of(points.begin(), points.end(),
                                  [](const BenchPoint& p) { return p.vs_kernel_mpps > 0; });
  const bool sink = std::any_of(points.begin(), points.end(),
                                [](const BenchPoint& p) { return p.sink_checked; });
  const auto ratio = [](double v) { return v > 0 ? fmt::format("{:.2f}", v) : std::string("-"); };
  fmt::print("{:<17} {:<6} {:<4} {:>4} {:>7} {:>13} {:>7} {:>6} {:>5} ", "strategy", "lock", "park",
             "thr", "Mpps", "(min..max)", "ns/pkt", "x_bl", "cpu_x");
  if (kernel) fmt::print("{:>6} {:>6} ", "x_kern", "cpu_xk");
  fmt::print("{:>6} {:>9} {:>8} {:>7} {:>7} {:>6} {:>6}  {}\n", "fair", "batch", "drop%", "waits/k",
             "p50ns", "p99us", "requ", "check");
  bool all_ok = true;
  for (const auto& p : points) {
    all_ok = all_ok && p.conserved && p.delivered;
    const double drop_pct =
        p.submitted ? 100.0 * static_cast<double>(p.dropped) / static_cast<double>(p.submitted) : 0;
    const double waits_per_k =
        p.sent ? 1000.0 * static_cast<double>(p.lock_waits) / static_cast<double>(p.sent) : 0;
    fmt::print("{:<17} {:<6} {:<4} {:>4} {:>7.3f} {:>13} {:>7.0f} {:>6} {:>5} ", p.strategy, p.lock,
               park_name(p.park), p.threads, p.mpps,
               fmt::format("{:.2f}..{:.2f}", p.mpps_min, p.mpps_max), p.cpu_ns_per_pkt,
               ratio(p.vs_busylock_mpps), ratio(p.vs_busylock_cpu));
    if (kernel) fmt::print("{:>6} {:>6} ", ratio(p.vs_kernel_mpps), ratio(p.vs_kernel_cpu));
    fmt::print("{:>6.3f} {:>9.1f} {:>8.2f} {:>7.1f} {:>7.0f} {:>6.1f} {:>6}  {}\n",
               p.fairness, p.batch_mean, drop_pct, waits_per_k, p.send_p50_ns,
               p.send_p99_ns / 1000.0, p.requeues,
               p.conserved ? fmt::format("ok: {} = {} sent + {} dropped", p.submitted, p.sent, p.dropped)
                           : (p.drained ? fmt::format("FAIL: {} != {} sent + {} dropped", p.submitted, p.sent, p.dropped)
                                        : "FAIL: packets still queued after drain"));
  }
  if (sink) {
    fmt::print("\nArrivals at the sink (summed over rounds):\n{:<17} {:<4} {:>4} {:>11} {:>11} {:>9} {:>7} {:>9} {:>6} {:>6}  {}\n",
               "strategy", "park", "thr", "sent", "received", "lost", "lost%", "sock_drop", "dup",
               "ooo", "check");
    for (const auto& p : points) {
      if (!p.sink_checked) continue;
      const double lost_pct =
          p.sent ? 100.0 * static_cast<double>(p.sink_lost) / static_cast<double>(p.sent) : 0;
      fmt::print("{:<17} {:<4} {:>4} {:>11} {:>11} {:>9} {:>7.2f} {:>9} {:>6} {:>6}  {}\n",
                 p.strategy, park_name(p.park), p.threads, p.sent, p.sink_received, p.sink_lost,
                 lost_pct, p.sink_socket_drops, p.sink_duplicated, p.sink_out_of_order,
                 !p.delivered ? "FAIL: duplicated or reordered frames"
                 : p.sink_out_of_order ? "ok: no duplicate; the kernel path reordered some (reported)"
                                       : "ok: no duplicate, in order per sender");
    }
  }
  fmt::print("\npark: lock waits park in the kernel (on) or yield (off) after spinning; "
             "x_bl, cpu_x: Mpps and CPU ns/packet relative to busylock at the same thread count and park; "
             "x_kern, cpu_xk: the same relative to the kernel's own path (strategy kernel: one UDP "
             "socket per sender into the interface's own qdisc); lost: sent but not received at the sink "
             "(sock_drop: of those, dropped at the sink's socket); "
             "fair: Jain index over senders; batch: packets per doorbell; waits/k: contended lock "
             "acquisitions per 1000 packets; p50ns/p99us: sampled send() latency.\n");
  const auto write_file = [](const std::string& flag, const std::string& file,
                             const auto& writer) {
    std::ofstream out(file, std::ios::trunc);
    writer(out);
    if (!out) {
      fmt::print(stderr, "txpath: error: {}: cannot write \"{}\"\n", flag, file);
      return false;
    }
    return true;
  };
  if (!o.csv.empty() &&
      !write_file("--csv", o.csv, [&](std::ostream& out) { write_csv(out, points); }))
    return 2;
  if (!o.plot.empty() && !write_file("--plot", o.plot, [&](std::ostream& out) {
        out << render_svg(points, fmt::format("txpath bench: senders into one TX queue (device {}, qdisc {}, lock {}, park {})",
                                              cfg.device, cfg.qdisc, cfg.lock, park_list));
      }))
    return 2;
  if (!o.json.empty()) {
    std::ofstream out(o.json, std::ios::trunc);
    out << to_json(cfg, points).dump(2) << "\n";
    if (!out) {
      fmt::print(stderr, "txpath: error: --json: cannot write \"{}\"\n", o.json);
      return 2;
    }
  }
  if (!all_ok) {
    fmt::print(stderr, "txpath: error: conservation or delivery check failed\n");
    return 1;
  }
  return 0;
}

}  // namespace txpath::cli
