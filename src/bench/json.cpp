// SPDX-License-Identifier: MIT
// `txpath bench --json`: the document (its schema: src/bench/report.hpp, bench_json()).
// Not on any hot path: clarity over speed.
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <utility>
#include <nlohmann/json.hpp>

#include "base/topology.hpp"
#include "bench/report.hpp"
#include "txpath/histogram.hpp"
#include "txpath/version.hpp"

namespace txpath {

namespace {

using Json = nlohmann::json;

bool is_utf8(const std::string& text) {
  try {
    (void)Json(text).dump();  // strict: throws type_error 316 on a byte that is not UTF-8
    return true;
  } catch (const Json::type_error&) {
    return false;
  }
}

std::string hex_bytes(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// `text` as a JSON string: as is when it is UTF-8, else each bad byte as U+FFFD.
Json text_value(const std::string& text) {
  if (is_utf8(text)) return text;
  return Json::parse(Json(text).dump(-1, ' ', false, Json::error_handler_t::replace));
}

// j[key] = text. Names are bytes: one that is not UTF-8 is written with each bad byte as U+FFFD,
// and its exact bytes in hex as key + "_hex" (the documented form: src/bench/bench.hpp).
void put_text(Json& j, const std::string& key, const std::string& text) {
  j[key] = text_value(text);
  if (!is_utf8(text)) j[key + "_hex"] = hex_bytes(text);
}

// The same for a list of texts (the command line): key holds every text (U+FFFD for bad bytes);
// when any is not UTF-8, key + "_hex" holds every text's bytes in hex, index for index.
void put_texts(Json& j, const std::string& key, const std::vector<std::string>& texts) {
  Json values = Json::array();
  Json hex = Json::array();
  bool all_utf8 = true;
  for (const std::string& t : texts) {
    values.push_back(text_value(t));
    hex.push_back(hex_bytes(t));
    all_utf8 = all_utf8 && is_utf8(t);
  }
  j[key] = std::move(values);
  if (!all_utf8) j[key + "_hex"] = std::move(hex);
}

// j[key] = v, only when the ratio exists (the bench writes 0 for "no reference row").
void put_ratio(Json& j, const char* key, double v) {
  if (v > 0) j[key] = v;
}

// j[key] = [lo, hi], only when there is an interval (lo == hi == 0: none).
void put_interval(Json& j, const char* key, const Interval95& ci) {
  if (ci.lo != 0 || ci.hi != 0) j[key] = Json::array({ci.lo, ci.hi});
}

Json noise_json(const BenchNoise& n) {
  return {{"steal_pct", n.steal_pct}, {"other_cpu_pct", n.other_cpu_pct}};
}

// The CPUs this process may run on (its affinity mask), in ascending order.
std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  return out;
}

Json build_json() {
  const BuildInfo& b = build_info();
  Json j = {{"version", std::string(b.version)},
            {"project_version", std::string(b.project_version)},
            {"git_describe", std::string(b.git_describe)},
            {"compiler", std::string(b.compiler_id) + " " + std::string(b.compiler_version)},
            {"build_type", std::string(b.build_type)}};
  if (!b.sanitize.empty()) j["sanitize"] = std::string(b.sanitize);
  return j;
}

Json host_json() {
  const HostInfo host = host_info();
  Json j = Json::object();
  put_text(j, "hostname", host.hostname);
  put_text(j, "kernel", host.kernel_release);
  put_text(j, "kernel_version", host.kernel_version);
  put_text(j, "machine", host.machine);
  return j;
}

Json topology_json() {
  const Topology& topo = topology();
  Json j = {{"cores", topo.cores},
            {"pus", topo.pus},
            {"numa_nodes", topo.numa_nodes},
            {"cores_by_node", topo.cores_by_node},
            {"cpus", allowed_cpus()}};
  put_text(j, "cpu_model", topo.cpu_model);
  return j;
}

Json config_json(const BenchConfig& cfg, const std::vector<BenchPoint>& points) {
  std::vector<std::string> park;
  for (const bool p : cfg.park) park.emplace_back(park_name(p));
  const bool kernel_ran = std::any_of(points.begin(), points.end(), [](const BenchPoint& p) {
    return p.strategy == kKernelStrategy;
  });
  Json c = {{"threads", cfg.threads},
            {"queues", cfg.queues},         {"xps", xps_text(cfg.xps)},
            {"duration_s", cfg.duration_s}, {"payload", cfg.payload},
            {"txqueuelen", cfg.txqueuelen}, {"repeat", cfg.repeat},
            {"pin", cfg.pin},               {"nodes", cfg.nodes},
            {"park", park},                 {"kernel_row", kernel_ran},
            {"burst", cfg.burst},           {"seed", cfg.seed},
            {"sndbuf", cfg.sndbuf},
            {"rate_pps", cfg.rate_pps},     {"rate_per_sender_pps", cfg.rate_per_sender_pps},
            {"flows", cfg.flows},           {"replay_speed", cfg.replay_speed},
            {"rounds_in", cfg.round_runner ? "worker processes" : "one process"}};
  std::vector<std::string> strategies = cfg.strategies;
  // The limit row is measured, not run (not in cfg.strategies); listed where it can be had.
  if (cfg.limit_row && limit_measured(cfg)) strategies.emplace_back(kLimitStrategy);
  put_texts(c, "strategies", strategies);
  put_texts(c, "skipped", cfg.skipped);
  put_text(c, "lock", cfg.lock);
  put_text(c, "device", cfg.device);
  put_text(c, "qdisc", cfg.qdisc);
  put_text(c, "sink", cfg.sink);
  if (!cfg.source.empty()) put_text(c, "source", cfg.source);
  if (!cfg.tc_config.empty()) {
    put_text(c, "tc_config", cfg.tc_config);
    put_text(c, "tc_dev", cfg.tc_dev);
  }
  return c;
}

// Each TX queue's counts: [{"queue": 0, "submitted": ..., "sent": ..., "dropped": ...,
// "doorbells": ..., "batch": packets per doorbell, "conserved": ...}, ...].
Json per_queue_json(const BenchPoint& p) {
  Json out = Json::array();
  for (std::size_t i = 0; i < p.per_queue.size(); ++i) {
    const BenchQueuePoint& q = p.per_queue[i];
    out.push_back({{"queue", i},          {"submitted", q.submitted}, {"sent", q.sent},
                   {"dropped", q.dropped}, {"doorbells", q.doorbells}, {"batch", q.batch_mean},
                   {"conserved", q.conserved}});
  }
  return out;
}

// A latency histogram whole: {"unit": "ns", "count", "min", "max", "buckets": [[low, high,
// count], ...]} with only the buckets that counted something (bounds inclusive; see
// txpath/histogram.hpp).
Json histogram_json(const LatencyHistogram& h) {
  Json buckets = Json::array();
  const auto counts = h.counts();
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] != 0)
      buckets.push_back({LatencyHistogram::bucket_low(i), LatencyHistogram::bucket_high(i), counts[i]});
  return {{"unit", "ns"}, {"count", h.count()}, {"min", h.min()}, {"max", h.max()}, {"buckets", buckets}};
}

// The statistics over the rounds (BenchPoint's samples, CVs, intervals, unstable, noise).
void put_round_statistics(Json& r, const BenchPoint& p) {
  r["mpps_samples"] = p.mpps_samples;
  r["cpu_samples"] = p.cpu_samples;
  Json noise = Json::array();
  for (const BenchNoise& n : p.noise_samples) noise.push_back(noise_json(n));
  r["noise_samples"] = std::move(noise);
  // A coefficient of variation needs two rounds.
  if (p.mpps_samples.size() >= 2) r["mpps_cv"] = p.mpps_cv;
  if (p.cpu_samples.size() >= 2) r["cpu_cv"] = p.cpu_cv;
  put_interval(r, "vs_busylock_mpps_ci95", p.vs_busylock_mpps_ci95);
  put_interval(r, "vs_busylock_cpu_ci95", p.vs_busylock_cpu_ci95);
  put_interval(r, "vs_floor_cpu_ci95", p.vs_floor_cpu_ci95);
  put_interval(r, "vs_kernel_mpps_ci95", p.vs_kernel_mpps_ci95);
  put_interval(r, "vs_kernel_cpu_ci95", p.vs_kernel_cpu_ci95);
  r["unstable"] = p.unstable;
  if (!p.unstable_reason.empty()) put_text(r, "unstable_reason", p.unstable_reason);
  if (!p.noise_samples.empty()) r["noise"] = noise_json(p.noise);
  if (p.advised_repeat > 0) r["advised_repeat"] = p.advised_repeat;
}

Json point_json(const BenchPoint& p) {
  Json r = {{"park", park_name(p.park)},
            {"threads", p.threads},
            {"queues", p.queues},
            {"per_queue", per_queue_json(p)},
            {"mpps", p.mpps},
            {"mpps_min", p.mpps_min},
            {"mpps_max", p.mpps_max},
            {"cpu_ns_per_pkt", p.cpu_ns_per_pkt},
            {"submitted", p.submitted},
            {"sent", p.sent},
            {"dropped", p.dropped},
            {"requeues", p.requeues},
            {"doorbells", p.doorbells},
            {"fairness", p.fairness},
            {"batch_mean", p.batch_mean},
            {"lock_waits", p.lock_waits},
            {"lock_wait_ns", p.lock_wait_ns},
            {"send_p50_ns", p.send_p50_ns},
            {"send_p90_ns", p.send_p90_ns},
            {"send_p99_ns", p.send_p99_ns},
            {"send_p999_ns", p.send_p999_ns},
            {"send_latency_histogram", histogram_json(p.send_latency)},
            {"queue_delay_histogram", histogram_json(p.queue_delay)},
            {"flows", p.flows},
            {"drained", p.drained},
            {"conserved", p.conserved},
            {"runs", p.runs},
            {"complete", p.complete}};
  put_text(r, "strategy", p.strategy);
  put_text(r, "lock", p.lock);
  for (const auto& [key, ratio] : {std::pair{"vs_busylock_mpps", p.vs_busylock_mpps},
                                   std::pair{"vs_busylock_cpu", p.vs_busylock_cpu},
                                   std::pair{"vs_floor_cpu", p.vs_floor_cpu},
                                   std::pair{"vs_kernel_mpps", p.vs_kernel_mpps},
                                   std::pair{"vs_kernel_cpu", p.vs_kernel_cpu},
                                   std::pair{"limit_lock_ns", p.limit_lock_ns},
                                   std::pair{"limit_line_ns", p.limit_line_ns},
                                   std::pair{"vs_limit", p.vs_limit},
                                   std::pair{"vs_dpdk_mpps", p.vs_dpdk_mpps},
                                   std::pair{"vs_dpdk_cpu", p.vs_dpdk_cpu}})
    put_ratio(r, key, ratio);
  if (!p.output_error.empty()) put_text(r, "output_error", p.output_error);
  if (p.sink_checked) {
    r["sink"] = {{"received", p.sink_received},         {"lost", p.sink_lost},
                 {"duplicated", p.sink_duplicated},     {"out_of_order", p.sink_out_of_order},
                 {"socket_drops", p.sink_socket_drops}, {"delivered", p.delivered}};
  }
  if (p.queue_delay.count() > 0) {  // none for the kernel row: its queue is the kernel's
    r["queue_p50_ns"] = p.queue_p50_ns;
    r["queue_p90_ns"] = p.queue_p90_ns;
    r["queue_p99_ns"] = p.queue_p99_ns;
    r["queue_p999_ns"] = p.queue_p999_ns;
  }
  if (p.offered_mpps > 0) r["offered_mpps"] = p.offered_mpps;  // paced (--rate): what was offered
  put_round_statistics(r, p);
  if (!p.tc_stats.empty()) {
    Json tc = Json::parse(p.tc_stats, nullptr, /*allow_exceptions=*/false);
    r["tc"] = tc.is_discarded() ? Json{{"error", "the tc statistics were not valid JSON"}} : std::move(tc);
  }
  return r;
}

}  // namespace

HostInfo host_info() {
  HostInfo host;
  struct utsname u {};
  if (::uname(&u) == 0) {
    host.kernel_release = u.release;
    host.kernel_version = u.version;
    host.machine = u.machine;
  }
  std::array<char, 256> name{};  // zeroed: the last byte stays a terminator
  if (::gethostname(name.data(), name.size() - 1) == 0) host.hostname = name.data();
  return host;
}

std::string utc_iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  std::array<char, 32> buf{};
  const std::size_t n = std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf.data(), n);
}

std::string bench_json(const BenchConfig& config, const std::vector<BenchPoint>& points,
                       const BenchProvenance& provenance, bool partial) {
  Json j;
  j["partial"] = partial;
  j["txpath"] = build_json();
  j["date"] = utc_iso8601(provenance.started);
  put_texts(j, "command_line", provenance.command_line);
  j["host"] = host_json();
  j["topology"] = topology_json();
  j["config"] = config_json(config, points);
  j["results"] = Json::array();
  for (const auto& p : points) j["results"].push_back(point_json(p));
  // replace: put_text left no invalid UTF-8, but an output must never abort the run.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace txpath
