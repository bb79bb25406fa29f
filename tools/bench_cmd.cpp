// SPDX-License-Identifier: MIT
// `txpath bench`: the seed experiment (netperf UDP_STREAM senders into one TX queue, or into a
// device's N TX queues with --queues).
#include "bench_cmd.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/file.hpp"
#include "txpath/netdev.hpp"
#include "txpath/report.hpp"
#include "txpath/text.hpp"
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
      throw ConfigError("--threads: " + txpath::quoted(item) + " is not a thread count in 1..4096");
    out.push_back(v);
  }
  return out;
}

std::vector<uint32_t> parse_queues(const std::string& s) {
  std::vector<uint32_t> out;
  for (const auto& item : split(s)) {
    uint32_t v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 1 || v > kMaxTxQueues)
      throw ConfigError("--queues: " + txpath::quoted(item) + " is not a TX queue count in 1.." +
                        std::to_string(kMaxTxQueues));
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw ConfigError("--queues: " + txpath::quoted(item) + " given twice");
    out.push_back(v);
  }
  return out;
}

std::vector<bool> parse_park(const std::string& s) {
  std::vector<bool> out;
  for (const auto& item : split(s)) {
    if (item != "on" && item != "off")
      throw ConfigError("--park: " + txpath::quoted(item) + " is not on or off (e.g. --park on,off)");
    const bool park = item == "on";
    if (std::find(out.begin(), out.end(), park) != out.end())
      throw ConfigError("--park: " + txpath::quoted(item) + " given twice");
    out.push_back(park);
  }
  return out;
}

std::vector<std::string> parse_strategies(const std::string& s) {
  if (s == "all") return {};  // the library: every strategy that can run the qdisc
  auto known = strategy_names();
  known.emplace_back(kKernelStrategy);  // the kernel's own path, with a real device
  known.emplace_back(kFloorStrategy);   // the harness's own limit: senders straight into the device
  std::vector<std::string> out;
  for (const auto& item : split(s)) {
    if (std::find(known.begin(), known.end(), item) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw ConfigError("--strategy: unknown strategy " + txpath::quoted(item) + " (known: " + list + ", all)");
    }
    out.push_back(item);
  }
  return out;
}

// ---- names in JSON ------------------------------------------------------------------------------

bool is_utf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();  // strict: throws type_error 316 on a byte that is not UTF-8
    return true;
  } catch (const nlohmann::json::type_error&) {
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

// j[key] = text. Names are bytes: one that is not UTF-8 is written with each bad byte as U+FFFD,
// and its exact bytes in hex as key + "_hex" (the documented form: include/txpath/bench.hpp).
void put_text(nlohmann::json& j, const std::string& key, const std::string& text) {
  if (is_utf8(text)) {
    j[key] = text;
    return;
  }
  const auto replaced =
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  j[key] = nlohmann::json::parse(replaced);
  j[key + "_hex"] = hex_bytes(text);
}

nlohmann::json config_json(const BenchConfig& cfg) {
  std::vector<std::string> park;
  for (const bool p : cfg.park) park.emplace_back(park_name(p));
  nlohmann::json c = {{"strategies", cfg.strategies}, {"threads", cfg.threads},
                      {"queues", cfg.queues},         {"xps", xps_text(cfg.xps)},
                      {"duration_s", cfg.duration_s}, {"payload", cfg.payload},
                      {"txqueuelen", cfg.txqueuelen}, {"repeat", cfg.repeat},
                      {"pin", cfg.pin},               {"nodes", cfg.nodes},
                      {"park", park},                 {"kernel_row", cfg.kernel_row},
                      {"burst", cfg.burst},
                      {"rate_pps", cfg.rate_pps},
                      {"rate_per_sender_pps", cfg.rate_per_sender_pps},
                      {"flows", cfg.flows},
                      {"replay_speed", cfg.replay_speed}};
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
nlohmann::json per_queue_json(const BenchPoint& p) {
  nlohmann::json out = nlohmann::json::array();
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
nlohmann::json histogram_json(const LatencyHistogram& h) {
  nlohmann::json buckets = nlohmann::json::array();
  const auto counts = h.counts();
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] != 0)
      buckets.push_back({LatencyHistogram::bucket_low(i), LatencyHistogram::bucket_high(i), counts[i]});
  return {{"unit", "ns"}, {"count", h.count()}, {"min", h.min()}, {"max", h.max()}, {"buckets", buckets}};
}

nlohmann::json point_json(const BenchPoint& p) {
  nlohmann::json r = {{"park", park_name(p.park)},
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
                      {"fairness", p.fairness},
                      {"batch_mean", p.batch_mean},
                      {"lock_waits", p.lock_waits},
                      {"lock_wait_ns", p.lock_wait_ns},
                      {"send_p50_ns", p.send_p50_ns},
                      {"send_p90_ns", p.send_p90_ns},
                      {"send_p99_ns", p.send_p99_ns},
                      {"send_p999_ns", p.send_p999_ns},
                      {"queue_p50_ns", p.queue_p50_ns},
                      {"queue_p90_ns", p.queue_p90_ns},
                      {"queue_p99_ns", p.queue_p99_ns},
                      {"queue_p999_ns", p.queue_p999_ns},
                      {"send_latency_histogram", histogram_json(p.send_latency)},
                      {"queue_delay_histogram", histogram_json(p.queue_delay)},
                      {"offered_mpps", p.offered_mpps},
                      {"flows", p.flows},
                      {"vs_busylock_mpps", p.vs_busylock_mpps},
                      {"vs_busylock_cpu", p.vs_busylock_cpu},
                      {"vs_floor_cpu", p.vs_floor_cpu},
                      {"conserved", p.conserved},
                      {"runs", p.runs},
                      {"complete", p.complete}};
  put_text(r, "strategy", p.strategy);
  put_text(r, "lock", p.lock);
  if (!p.output_error.empty()) put_text(r, "output_error", p.output_error);
  if (p.sink_checked) {
    r["sink"] = {{"received", p.sink_received},         {"lost", p.sink_lost},
                 {"duplicated", p.sink_duplicated},     {"out_of_order", p.sink_out_of_order},
                 {"socket_drops", p.sink_socket_drops}, {"delivered", p.delivered}};
  }
  if (p.vs_kernel_mpps > 0) {
    r["vs_kernel_mpps"] = p.vs_kernel_mpps;
    r["vs_kernel_cpu"] = p.vs_kernel_cpu;
  }
  return r;
}

// The --json document. "partial": true when a signal stopped the bench (results then holds the
// points that ran; see BenchPoint::complete). Never throws on odd bytes: see put_text.
std::string json_document(const BenchConfig& cfg, const std::vector<BenchPoint>& points,
                          bool partial) {
  const Topology& topo = topology();
  nlohmann::json j;
  j["partial"] = partial;
  j["config"] = config_json(cfg);
  j["topology"] = {{"cores", topo.cores}, {"pus", topo.pus}, {"numa_nodes", topo.numa_nodes}};
  put_text(j["topology"], "cpu_model", topo.cpu_model);
  j["results"] = nlohmann::json::array();
  for (const auto& p : points) j["results"].push_back(point_json(p));
  // replace: put_text left no invalid UTF-8, but an output must never abort the run.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// ---- signals ----------------------------------------------------------------------------------

// Set by the first SIGINT/SIGTERM; read by run_bench as BenchConfig::stop (relaxed on both
// sides: a flag that only steers loops, nothing is published with it).
std::atomic<bool> g_stop{false};
// The number of that first signal (0: none); a second signal finds it set and exits at once.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

extern "C" void on_stop_signal(int sig) {
  // Async-signal-safe only: lock-free atomics and _exit.
  if (g_signal.exchange(sig, std::memory_order_relaxed) != 0) ::_exit(128 + sig);
  g_stop.store(true, std::memory_order_relaxed);
}

// SIGINT and SIGTERM stop the bench while this lives; the previous handlers come back after.
// A signal ignored when txpath started (a shell's background job, nohup) stays ignored.
class StopOnSignals {
 public:
  StopOnSignals() {
    catch_unless_ignored(SIGINT, old_int_);
    catch_unless_ignored(SIGTERM, old_term_);
  }
  ~StopOnSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  static void catch_unless_ignored(int sig, struct sigaction& old) {
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) return;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // stdout writes and sleeps go on; the loops poll the flag
    ::sigaction(sig, &sa, nullptr);
  }

  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// ---- options ----------------------------------------------------------------------------------

// CLI11 reads numbers with strtoll/strtod, so "0x10" is 16 and "010" is 8: numbers are decimal
// here. Digits only; leading zeros are dropped before CLI11 converts.
std::string decimal_integer(std::string& s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return txpath::quoted(s) + " is not a decimal integer";
  const std::size_t first = std::min(s.find_first_not_of('0'), s.size() - 1);
  s.erase(0, first);
  return {};
}

// Digits with an optional fraction and exponent ("0.5", ".5", "2e-1"); no hex, inf or nan.
std::string decimal_number(const std::string& s) {
  std::size_t i = 0, digits = 0;
  const auto run = [&] {
    std::size_t n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++n;
    return n;
  };
  digits += run();
  if (i < s.size() && s[i] == '.') {
    ++i;
    digits += run();
  }
  bool ok = digits > 0;
  if (ok && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    ok = run() > 0;
  }
  return ok && i == s.size() ? std::string() : txpath::quoted(s) + " is not a decimal number";
}

std::string not_empty(const std::string& s) { return s.empty() ? "must not be empty" : ""; }

// The directory part of `file` ("." for a bare name).
std::string dir_of(const std::string& file) {
  const std::size_t slash = file.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : file.substr(0, slash);
}

// Checks, before anything runs and without creating or touching anything, that `file` can be
// written: not a directory, and a regular file's directory exists and may be written. The write
// itself (OutputFile, after the table) checks everything again, symlinks included.
void check_output_path(std::string_view flag, const std::string& file) {
  const std::string name = std::string(flag) + " " + txpath::quoted(file);
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return;  // checked when written
  if (::stat(file.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw ConfigError(name + ": is a directory");
    if (!S_ISREG(st.st_mode)) return;  // a device, FIFO or pipe: written in place
  }
  const std::string dir = dir_of(file);
  if (::stat(dir.c_str(), &st) != 0)
    throw ConfigError(name + ": directory " + txpath::quoted(dir) + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw ConfigError(name + ": " + txpath::quoted(dir) + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(name + ": cannot create a file in " + txpath::quoted(dir) + ": " + std::strerror(errno));
}

// ---- the table --------------------------------------------------------------------------------

std::string check_text(const BenchPoint& p, int repeat) {
  std::string text =
      p.conserved ? fmt::format("ok: {} = {} sent + {} dropped", p.submitted, p.sent, p.dropped)
      : p.drained ? fmt::format("FAIL: {} != {} sent + {} dropped", p.submitted, p.sent, p.dropped)
                  : std::string("FAIL: packets still queued after drain");
  if (!p.complete) text += fmt::format(" (partial: {} of {} round(s), stopped)", p.runs, repeat);
  return text;
}

// True when some point ran on more than one TX queue: the table then has a queues column.
bool multi_queue(const std::vector<BenchPoint>& points) {
  return std::any_of(points.begin(), points.end(), [](const BenchPoint& p) { return p.queues != 1; });
}

void print_results(const std::vector<BenchPoint>& points, int repeat) {
  const bool kernel = std::any_of(points.begin(), points.end(),
                                  [](const BenchPoint& p) { return p.vs_kernel_mpps > 0; });
  const bool queues = multi_queue(points);
  const auto ratio = [](double v) { return v > 0 ? fmt::format("{:.2f}", v) : std::string("-"); };
  fmt::print("{:<17} {:<6} {:<4} {:>4} ", "strategy", "lock", "park", "thr");
  if (queues) fmt::print("{:>4} ", "txq");
  fmt::print("{:>7} {:>13} {:>7} {:>6} {:>5} {:>6} ", "Mpps", "(min..max)", "ns/pkt", "x_bl", "cpu_x", "cpu_xf");
  if (kernel) fmt::print("{:>6} {:>6} ", "x_kern", "cpu_xk");
  fmt::print("{:>6} {:>9} {:>8} {:>7} {:>7} {:>6} {:>6}  {}\n", "fair", "batch", "drop%", "waits/k",
             "p50ns", "p99us", "requ", "check");
  for (const auto& p : points) {
    const double drop_pct =
        p.submitted ? 100.0 * static_cast<double>(p.dropped) / static_cast<double>(p.submitted) : 0;
    const double waits_per_k =
        p.sent ? 1000.0 * static_cast<double>(p.lock_waits) / static_cast<double>(p.sent) : 0;
    fmt::print("{:<17} {:<6} {:<4} {:>4} ", p.strategy, p.lock, park_name(p.park), p.threads);
    if (queues) fmt::print("{:>4} ", p.queues);
    fmt::print("{:>7.3f} {:>13} {:>7.0f} {:>6} {:>5} {:>6} ", p.mpps,
               fmt::format("{:.2f}..{:.2f}", p.mpps_min, p.mpps_max), p.cpu_ns_per_pkt,
               ratio(p.vs_busylock_mpps), ratio(p.vs_busylock_cpu), ratio(p.vs_floor_cpu));
    if (kernel) fmt::print("{:>6} {:>6} ", ratio(p.vs_kernel_mpps), ratio(p.vs_kernel_cpu));
    fmt::print("{:>6.3f} {:>9.1f} {:>8.2f} {:>7.1f} {:>7.0f} {:>6.1f} {:>6}  {}\n", p.fairness,
               p.batch_mean, drop_pct, waits_per_k, p.send_p50_ns, p.send_p99_ns / 1000.0,
               p.requeues, check_text(p, repeat));
  }
}

// Each TX queue's share of the points that ran on several (summed over rounds).
void print_queue_results(const std::vector<BenchPoint>& points) {
  if (!multi_queue(points)) return;
  fmt::print("\nPer TX queue (summed over rounds; batch: packets per doorbell):\n{:<17} {:<4} {:>4} {:>4} {:>4} {:>11} {:>9} {:>7}  {}\n",
             "strategy", "park", "thr", "txq", "q", "sent", "dropped", "batch", "check");
  for (const auto& p : points) {
    if (p.queues == 1) continue;
    for (std::size_t i = 0; i < p.per_queue.size(); ++i) {
      const BenchQueuePoint& q = p.per_queue[i];
      fmt::print("{:<17} {:<4} {:>4} {:>4} {:>4} {:>11} {:>9} {:>7.1f}  {}\n", p.strategy,
                 park_name(p.park), p.threads, p.queues, i, q.sent, q.dropped, q.batch_mean,
                 q.conserved ? fmt::format("ok: {} = {} sent + {} dropped", q.submitted, q.sent, q.dropped)
                             : fmt::format("FAIL: {} != {} sent + {} dropped, or left queued",
                                           q.submitted, q.sent, q.dropped));
    }
  }
}

void print_sink_results(const std::vector<BenchPoint>& points) {
  if (std::none_of(points.begin(), points.end(), [](const BenchPoint& p) { return p.sink_checked; }))
    return;
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

void print_legend(bool queues) {
  fmt::print("\npark: lock waits park in the kernel (on) or yield (off) after spinning; {}"
             "x_bl, cpu_x: Mpps and CPU ns/packet relative to busylock at the same thread count{} and park; "
             "cpu_xf: CPU ns/packet relative to the floor row (senders straight into the device, a "
             "doorbell every 64 packets: the harness's own limit), median of the rounds' ratios; "
             "x_kern, cpu_xk: the same relative to the kernel's own path (strategy kernel: one UDP "
             "socket per sender into the interface's own qdisc); lost: sent but not received at the sink "
             "(sock_drop: of those, dropped at the sink's socket); "
             "fair: Jain index over senders; batch: packets per doorbell; waits/k: contended lock "
             "acquisitions per 1000 packets; p50ns/p99us: sampled send() latency.\n",
             queues ? "txq: the device's TX queues (--queues); " : "", queues ? ", TX queues" : "");
}

// ---- outputs ----------------------------------------------------------------------------------

// "1,2,4": the TX queue counts; empty for the seed experiment's one TX queue.
std::string queue_counts(const BenchConfig& cfg) {
  if (cfg.queues.size() == 1 && cfg.queues.front() == 1) return {};
  return fmt::format("{}", fmt::join(cfg.queues, ","));
}

// Writes --json, --csv and --plot (each complete or not there: OutputFile) and reports every
// failure in one line naming the file. False if any failed.
bool write_outputs(const BenchOptions& o, const BenchConfig& cfg,
                   const std::vector<BenchPoint>& points, bool partial) {
  bool ok = true;
  const auto write = [&](std::string_view flag, const std::string& file, const auto& contents) {
    if (file.empty()) return;
    try {
      replace_file(file, contents(), flag);
    } catch (const std::exception& e) {  // FileError; anything else must not lose the rest
      fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
      ok = false;
    }
  };
  write("--json", o.json, [&] { return json_document(cfg, points, partial); });
  write("--csv", o.csv, [&] {
    std::ostringstream out;
    write_csv(out, points, partial);
    return out.str();
  });
  write("--plot", o.plot, [&] {
    std::string park_list;
    for (const bool p : cfg.park) park_list += (park_list.empty() ? "" : ",") + std::string(park_name(p));
    // one_line(): a name that is not UTF-8 would make the document ill-formed XML.
    const std::string counts = queue_counts(cfg);
    const std::string into = counts.empty() ? "one TX queue" : counts + " TX queues";
    return render_svg(points, fmt::format("txpath bench: senders into {} (device {}, qdisc {}, lock {}, park {}){}",
                                          into, one_line(cfg.device), one_line(cfg.qdisc), one_line(cfg.lock), park_list,
                                          partial ? " [partial: stopped by a signal]" : ""));
  });
  // A device's own output (pcap:FILE), once per file.
  std::vector<std::string> seen;
  for (const auto& p : points) {
    if (p.output_error.empty() ||
        std::find(seen.begin(), seen.end(), p.output_error) != seen.end())
      continue;
    seen.push_back(p.output_error);
    fmt::print(stderr, "txpath: error: {}\n", one_line(p.output_error));
    ok = false;
  }
  return ok;
}

BenchConfig config_from(const BenchOptions& o) {
  BenchConfig cfg;
  cfg.strategies = parse_strategies(o.strategies);
  cfg.threads = o.threads.empty() ? default_thread_counts() : parse_threads(o.threads);
  if (!o.queues.empty()) cfg.queues = parse_queues(o.queues);
  cfg.xps = parse_xps(o.xps);
  cfg.duration_s = o.duration;
  cfg.lock = o.lock;
  cfg.park = parse_park(o.park);
  cfg.device = o.device;
  cfg.qdisc = o.qdisc;
  cfg.tc_config = o.tc_config;
  cfg.tc_dev = o.tc_dev;
  cfg.payload = o.payload;
  cfg.burst = o.burst;
  cfg.pin = !o.no_pin;
  cfg.repeat = o.repeat;
  cfg.nodes = o.nodes;
  cfg.sink = o.sink;
  cfg.kernel_row = !o.no_kernel_row;
  cfg.rate_pps = o.rate;
  cfg.rate_per_sender_pps = o.rate_per_sender;
  cfg.flows = o.flows;
  cfg.source = o.source;
  cfg.replay_speed = o.replay_speed;
  for (const auto& [flag, file] : {std::pair{"--json", o.json}, std::pair{"--csv", o.csv},
                                   std::pair{"--plot", o.plot}})
    if (!file.empty()) check_output_path(flag, file);
  return resolve_bench_config(cfg);
}

// What the senders offer when it is not the seed experiment's flat-out single flow: "offered
// 20000 pps in total, 16 flows per sender, capture "x.pcap" at 2x"; empty otherwise.
std::string traffic_line(const BenchConfig& cfg) {
  std::vector<std::string> parts;
  if (cfg.rate_pps > 0) parts.push_back(fmt::format("offered {} pps in total", cfg.rate_pps));
  if (cfg.rate_per_sender_pps > 0) parts.push_back(fmt::format("offered {} pps per sender", cfg.rate_per_sender_pps));
  if (cfg.flows > 1) parts.push_back(fmt::format("{} flows per sender", cfg.flows));
  if (!cfg.source.empty())
    parts.push_back(fmt::format("replaying {} {}", one_line(cfg.source),
                                cfg.replay_speed > 0 ? fmt::format("at {}x its timing", cfg.replay_speed) : "flat out"));
  std::string line;
  for (const auto& part : parts) line += (line.empty() ? "" : ", ") + part;
  return line;
}

void print_config(const BenchConfig& cfg) {
  const Topology& topo = topology();
  std::string park_list;
  for (const bool p : cfg.park) park_list += (park_list.empty() ? "" : ",") + std::string(park_name(p));
  fmt::print("topology: {} cores, {} hardware threads, {} NUMA node(s), {}\n", topo.cores,
             topo.pus, topo.numa_nodes, one_line(topo.cpu_model));
  std::string queues = queue_counts(cfg);
  if (!queues.empty()) queues = fmt::format(" on {} TX queues (xps {})", queues, xps_text(cfg.xps));
  fmt::print("config: device {}{}, qdisc {}, lock {}, park {}, payload {} B, burst {}, {} s per point x {} round(s), {}\n\n",
             one_line(cfg.device), queues, one_line(cfg.qdisc), one_line(cfg.lock), park_list, cfg.payload,
             cfg.burst, cfg.duration_s, cfg.repeat,
             cfg.pin ? (cfg.nodes ? fmt::format("pinned to {} node(s)", cfg.nodes) : "pinned")
                     : "unpinned");
  if (const std::string traffic = traffic_line(cfg); !traffic.empty()) fmt::print("traffic: {}\n\n", traffic);
  std::fflush(stdout);
}

// --device's help: every kind the library builds, with the form of its spec.
std::string device_help() {
  std::string text = "The device the queue transmits into, one of:";
  for (const DeviceKind& k : device_kinds()) text += fmt::format("\n  {}  {}", k.spec, k.what);
  return text;
}

}  // namespace

std::string one_line(std::string_view message) {
  constexpr std::size_t kMaxPlain = 400;  // longer: echoed user text, cut below
  const bool plain = message.size() <= kMaxPlain &&
                     std::all_of(message.begin(), message.end(), [](char c) {
                       return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
                     });
  return plain ? std::string(message) : escape_user_text(message);
}

namespace {

// --rate, --rate-per-sender, --flows, --source, --replay-speed (docs/architecture.md, "Offered
// load and traffic").
void add_traffic_options(CLI::App* cmd, BenchOptions& o) {
  const CLI::Validator integer(decimal_integer, "");
  const CLI::Validator number(decimal_number, "");
  const CLI::Validator non_empty(not_empty, "");
  auto* rate = cmd->add_option("--rate", o.rate,
                               "Offered load: packets per second of all senders together, paced "
                               "(default: flat out); every row, the floor and kernel rows too")
                   ->check(number)
                   ->check(CLI::Range(1.0, 1e10));
  cmd->add_option("--rate-per-sender", o.rate_per_sender, "Offered load: packets per second of each sender, paced")
      ->check(number)
      ->check(CLI::Range(1.0, 1e10))
      ->excludes(rate);
  cmd->add_option("--flows", o.flows,
                  "Flows per sender (distinct UDP source ports, each its flow hash), round-robin; "
                  "senders x flows at most 4096")
      ->transform(integer)
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  auto* source = cmd->add_option("--source", o.source,
                                 "pcap:FILE: replay a classic pcap capture's Ethernet frames "
                                 "(sender t of T sends frames t, t+T, ..., looping) instead of generated frames")
                     ->check(non_empty);
  cmd->add_option("--replay-speed", o.replay_speed,
                  "Replay the capture at its own timing, X times as fast (default: flat out)")
      ->check(number)
      ->check(CLI::Range(1e-6, 1e6))
      ->needs(source);
}

}  // namespace

void add_bench_command(CLI::App& app, BenchOptions& o) {
  CLI::App* cmd = app.add_subcommand("bench", "N senders into one TX queue; Mpps and CPU per packet");
  const CLI::Validator integer(decimal_integer, "");  // no name: the help shows the type
  const CLI::Validator number(decimal_number, "");
  const CLI::Validator non_empty(not_empty, "");
  cmd->add_option("--strategy", o.strategies,
                  "Comma-separated strategies, or 'all' (the floor row, then every strategy). 'floor': "
                  "senders straight into the device, the harness's own limit; name the strategies "
                  "without it to leave it out")
      ->capture_default_str();
  cmd->add_option("--threads", o.threads,
                  "Comma-separated sender counts (default: 1,cores,2*cores,8*cores)")
      ->check(non_empty);
  cmd->add_option("--queues", o.queues,
                  "Comma-separated TX queue counts of the device (default: 1, or the device's queues=N); "
                  "with N > 1 senders go through a multi-queue device whose queues each run the strategy")
      ->check(non_empty);
  cmd->add_option("--xps", o.xps,
                  "How senders spread over TX queues: auto (each pinned CPU its own queue(s)), off "
                  "(the flow hash: one flow per sender), or CPU:Q[+Q...],... (an explicit map)")
      ->capture_default_str();
  cmd->add_option("--duration", o.duration, "Measured seconds per point")
      ->check(number)
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  cmd->add_option("--lock", o.lock, "Spinlock kind: ticket, ttas, mcs, mutex, cna")->capture_default_str();
  cmd->add_option("--park", o.park,
                  "Spin-then-park policy of lock waits: on (park in the kernel), off (yield), "
                  "or on,off (both, interleaved)")
      ->capture_default_str();
  cmd->add_option("--device", o.device, device_help())->capture_default_str();
  cmd->add_option("--qdisc", o.qdisc, "Root qdisc, tc syntax (e.g. 'pfifo limit 1000')")
      ->capture_default_str();
  CLI::Option* tc_config =
      cmd->add_option("--tc-config", o.tc_config,
                      "Root qdisc tree from this txpath tc configuration file (instead of --qdisc); "
                      "txpath tc -s qdisc show reads its live counters while a row runs")
          ->check(non_empty);
  cmd->add_option("--tc-dev", o.tc_dev, "Device of --tc-config to use (default: its only device)")
      ->check(non_empty)
      ->needs(tc_config);
  cmd->add_option("--payload", o.payload, "UDP payload bytes")
      ->transform(integer)
      ->check(CLI::Range(16, 9000))
      ->capture_default_str();
  cmd->add_option("--burst", o.burst,
                  "Packets per send call: 1, send() per packet; N > 1, send_burst() of N packets "
                  "(the floor row rings its doorbell every 64 packets whatever N)")
      ->transform(integer)
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--repeat", o.repeat, "Rounds per point (interleaved); the median is reported")
      ->transform(integer)
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--nodes", o.nodes, "Use only the first N NUMA nodes (default: all)")
      ->transform(integer)
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--json", o.json, "Write results as JSON to FILE")->check(non_empty);
  cmd->add_option("--csv", o.csv, "Write results as CSV to FILE")->check(non_empty);
  cmd->add_option("--plot", o.plot, "Write an SVG chart (Mpps vs threads) to FILE")->check(non_empty);
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
  add_traffic_options(cmd, o);
}

// Order: check the whole configuration (exit 2, nothing run); measure (a first SIGINT/SIGTERM
// stops it early); print the table, always; then write the outputs, each failure one line
// (exit 1). A stopped bench exits 128 + the signal, its outputs marked partial.
int run_bench_command(const BenchOptions& o) {
  const StopOnSignals stop_on_signals;  // until the outputs are written: a second signal exits
  BenchConfig cfg;
  std::vector<BenchPoint> points;
  try {
    cfg = config_from(o);
    print_config(cfg);
    cfg.stop = &g_stop;
    points = run_bench(cfg, [&](const std::string& line) {
      if (!o.quiet) fmt::print(stderr, "txpath bench: {}\n", line);
    });
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
    return 2;
  } catch (const std::exception& e) {  // a run that failed outright (threads, memory)
    fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
    return 1;
  }
  // relaxed: see g_signal. A signal seen now stopped the bench (or came after its last run).
  const bool partial = g_signal.load(std::memory_order_relaxed) != 0;

  print_results(points, cfg.repeat);
  print_queue_results(points);
  print_sink_results(points);
  print_legend(multi_queue(points));
  std::fflush(stdout);
  if (partial)
    fmt::print(stderr, "txpath: stopped by {}: the rows above are those that ran; outputs are marked partial\n",
               g_signal.load(std::memory_order_relaxed) == SIGINT ? "SIGINT" : "SIGTERM");
  const bool written = write_outputs(o, cfg, points, partial);
  const bool all_ok = std::all_of(points.begin(), points.end(),
                                  [](const BenchPoint& p) { return p.conserved && p.delivered; });
  if (!all_ok) fmt::print(stderr, "txpath: error: conservation or delivery check failed\n");
  if (const int signal = g_signal.load(std::memory_order_relaxed); signal != 0) return 128 + signal;
  return written && all_ok ? 0 : 1;
}

}  // namespace txpath::cli
