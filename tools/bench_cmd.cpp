// SPDX-License-Identifier: MIT
// `txpath bench`: the seed experiment (netperf UDP_STREAM senders into one TX queue).
#include "bench_cmd.hpp"

#include <fmt/core.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "txpath/error.hpp"
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

std::vector<std::string> parse_strategies(const std::string& s) {
  if (s == "all") return strategy_names();
  const auto known = strategy_names();
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
  nlohmann::json j;
  j["config"] = {{"strategies", cfg.strategies}, {"threads", cfg.threads},
                 {"duration_s", cfg.duration_s}, {"lock", cfg.lock},
                 {"device", cfg.device},         {"qdisc", cfg.qdisc},
                 {"payload", cfg.payload},       {"txqueuelen", cfg.txqueuelen},
                 {"pin", cfg.pin}};
  j["topology"] = {{"cores", topo.cores},
                   {"pus", topo.pus},
                   {"numa_nodes", topo.numa_nodes},
                   {"cpu_model", topo.cpu_model}};
  j["results"] = nlohmann::json::array();
  for (const auto& p : points) {
    j["results"].push_back({{"strategy", p.strategy},
                            {"lock", p.lock},
                            {"threads", p.threads},
                            {"mpps", p.mpps},
                            {"submitted", p.submitted},
                            {"sent", p.sent},
                            {"dropped", p.dropped},
                            {"requeues", p.requeues},
                            {"doorbells", p.doorbells},
                            {"cpu_ns_per_pkt", p.cpu_ns_per_pkt},
                            {"conserved", p.conserved}});
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
  cmd->add_option("--lock", o.lock, "Spinlock kind: ticket, ttas, mcs, mutex")->capture_default_str();
  cmd->add_option("--device", o.device, "null | nic | nic:pkt=NS,doorbell=NS,ring=N")
      ->capture_default_str();
  cmd->add_option("--qdisc", o.qdisc, "Root qdisc, tc syntax (e.g. 'pfifo limit 1000')")
      ->capture_default_str();
  cmd->add_option("--payload", o.payload, "UDP payload bytes")
      ->check(CLI::Range(16, 9000))
      ->capture_default_str();
  cmd->add_option("--json", o.json, "Write results as JSON to FILE");
  cmd->add_flag("--no-pin", o.no_pin, "Do not pin sender threads to cores");
  cmd->add_flag("--quiet", o.quiet, "No progress lines on stderr");
}

int run_bench_command(const BenchOptions& o) {
  BenchConfig cfg;
  std::vector<BenchPoint> points;
  try {
    cfg.strategies = parse_strategies(o.strategies);
    if (!o.threads.empty()) cfg.threads = parse_threads(o.threads);
    else cfg.threads = default_thread_counts();
    cfg.duration_s = o.duration;
    cfg.lock = o.lock;
    cfg.device = o.device;
    cfg.qdisc = o.qdisc;
    cfg.payload = o.payload;
    cfg.pin = !o.no_pin;
    if (!o.json.empty()) {
      std::ofstream probe(o.json, std::ios::app);
      if (!probe) throw ConfigError("--json: cannot write \"" + o.json + "\"");
    }
    cfg = resolve_bench_config(cfg);
    const Topology& topo = topology();
    fmt::print("topology: {} cores, {} hardware threads, {} NUMA node(s), {}\n", topo.cores,
               topo.pus, topo.numa_nodes, topo.cpu_model);
    fmt::print("config: device {}, qdisc {}, lock {}, payload {} B, {} s per point, {}\n\n",
               cfg.device, cfg.qdisc, cfg.lock, cfg.payload, cfg.duration_s,
               cfg.pin ? "pinned" : "unpinned");
    std::fflush(stdout);
    points = run_bench(cfg, [&](const std::string& line) {
      if (!o.quiet) fmt::print(stderr, "txpath bench: {}\n", line);
    });
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  }

  fmt::print("{:<10} {:<7} {:>7} {:>8} {:>10} {:>12} {:>12} {:>10} {:>9} {:>9}  {}\n", "strategy",
             "lock", "threads", "Mpps", "cpu_ns/pkt", "submitted", "sent", "dropped", "requeues",
             "pkt/bell", "check");
  bool all_ok = true;
  for (const auto& p : points) {
    all_ok = all_ok && p.conserved;
    const double per_bell =
        p.doorbells ? static_cast<double>(p.sent) / static_cast<double>(p.doorbells) : 0.0;
    fmt::print("{:<10} {:<7} {:>7} {:>8.3f} {:>10.1f} {:>12} {:>12} {:>10} {:>9} {:>9.1f}  {}\n",
               p.strategy, p.lock, p.threads, p.mpps, p.cpu_ns_per_pkt, p.submitted, p.sent,
               p.dropped, p.requeues, per_bell,
               p.conserved ? "ok (submitted = sent + dropped)"
                           : (p.drained ? "FAIL: submitted != sent + dropped"
                                        : "FAIL: packets still queued after drain"));
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json, std::ios::trunc);
    out << to_json(cfg, points).dump(2) << "\n";
    if (!out) {
      fmt::print(stderr, "txpath: error: --json: cannot write \"{}\"\n", o.json);
      return 2;
    }
  }
  if (!all_ok) {
    fmt::print(stderr, "txpath: error: conservation check failed\n");
    return 1;
  }
  return 0;
}

}  // namespace txpath::cli
