// SPDX-License-Identifier: MIT
// `txpath bench`: the seed experiment (netperf UDP_STREAM senders into one TX queue, or into a
// device's N TX queues with --queues).
#include "bench_cmd.hpp"

#include <iostream>
#include "bench_worker.hpp"
#include "cli_numbers.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <sstream>
#include <utility>

#include "base/topology.hpp"
#include "bench/pcap_source.hpp"
#include "bench/report.hpp"
#include "bench/table.hpp"
#include "core/file.hpp"
#include "core/text.hpp"
#include "exporter/http_server.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/metrics.hpp"
#include "txpath/netdev.hpp"
#include "txpath/txqueue.hpp"
#include "txpath/version.hpp"

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
  known.emplace_back(kLimitStrategy);   // the machine's: one cache line handed between two CPUs
  known.emplace_back(kDpdkPeer);        // DPDK's rte_ring + one TX thread, in this process
  known.emplace_back(kTestpmdPeer);     // dpdk-testpmd txonly on the same interface
  std::vector<std::string> out;
  for (const auto& item : split(s)) {
    if (std::find(known.begin(), known.end(), item) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      // The name cut to 60 bytes: the line stays one short line beside the list of names.
      throw ConfigError("--strategy: unknown strategy " + txpath::quoted(std::string_view(item).substr(0, 60)) +
                        (item.size() > 60 ? "..." : "") + " (known: " + list + ", all)");
    }
    out.push_back(item);
  }
  return out;
}

// ---- signals ----------------------------------------------------------------------------------

// Set by the first SIGINT/SIGTERM; read by run_bench as BenchConfig::stop (relaxed on both
// sides: a flag that only steers loops, nothing is published with it).
std::atomic<bool> g_stop{false};
// The number of that first signal (0: none); a second signal finds it set and exits at once.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");
// Who sent the first signal (its pid; 0: the kernel, a terminal's ^C) and when (CLOCK_MONOTONIC
// ns). Stored before g_signal's exchange and read after it (acq_rel there): the pair is the
// first request's whenever g_signal is seen set.
std::atomic<pid_t> g_first_sender{0};
std::atomic<int64_t> g_first_ns{0};
static_assert(std::atomic<int64_t>::is_always_lock_free, "used from a signal handler");

// A repeat of the same request within this long is not a second one (see same_request).
constexpr int64_t kRepeatWindowNs = 1'000'000'000;

int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The first request again: the same signal from the same process within kRepeatWindowNs.
// timeout(1) sends its signal to its child and then to the child's whole process group, so the
// bench gets it twice (the second often after the handler ran for the first); that is one stop,
// not "a second signal, exit at once". A terminal's ^C (the kernel's: no pid) always counts.
bool same_request(int sig, int first, pid_t sender, int64_t now) noexcept {
  return sig == first && sender > 0 && sender == g_first_sender.load(std::memory_order_relaxed) &&
         now - g_first_ns.load(std::memory_order_relaxed) < kRepeatWindowNs;
}

extern "C" void on_stop_signal(int sig, siginfo_t* info, void*) {
  // Async-signal-safe only: lock-free atomics, clock_gettime, kill and _exit.
  const bool from_process = info && (info->si_code == SI_USER || info->si_code == SI_QUEUE || info->si_code == SI_TKILL);
  const pid_t sender = from_process ? info->si_pid : 0;
  const int64_t now = monotonic_ns();
  if (g_signal.load(std::memory_order_acquire) == 0) {  // pairs with the exchange below
    g_first_sender.store(sender, std::memory_order_relaxed);
    g_first_ns.store(now, std::memory_order_relaxed);
  }
  // acq_rel: publishes the sender and time above; a handler that finds a signal set reads them.
  if (const int first = g_signal.exchange(sig, std::memory_order_acq_rel); first != 0) {
    if (same_request(sig, first, sender, now)) {
      g_signal.store(first, std::memory_order_relaxed);  // it was the same request
      return;
    }
    signal_worker(SIGKILL);  // never left behind
    ::_exit(128 + sig);
  }
  g_stop.store(true, std::memory_order_relaxed);
  signal_worker(sig);  // it stops its run and reports what ran, as run_bench does here
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
    sa.sa_sigaction = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);  // one handler at a time in a thread
    sigaddset(&sa.sa_mask, SIGTERM);
    sa.sa_flags = SA_RESTART | SA_SIGINFO;  // stdout writes and sleeps go on; the loops poll the flag
    ::sigaction(sig, &sa, nullptr);
  }

  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// ---- options ----------------------------------------------------------------------------------

std::string not_empty(const std::string& s) { return s.empty() ? "must not be empty" : ""; }

// The directory part of `file` ("." for a bare name).
std::string dir_of(const std::string& file) {
  const std::size_t slash = file.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : file.substr(0, slash);
}

// What the parent holds open until the outputs are written: outputs that are FIFOs (or pipes:
// /dev/stdout), opened when checked, so that a reader that is there sees no end of file before
// they come; the capture's snapshot (capture_snapshot).
class HeldFiles {
 public:
  HeldFiles() = default;
  ~HeldFiles() {
    for (const int fd : fds_) ::close(fd);
  }
  HeldFiles(const HeldFiles&) = delete;
  HeldFiles& operator=(const HeldFiles&) = delete;
  void hold(int fd) { fds_.push_back(fd); }

 private:
  std::vector<int> fds_;
};

// A FIFO output: opened without blocking, so that one that nobody reads is refused now (exit 2)
// instead of hanging in open() after the table. `held` null (a worker): its parent holds it.
void hold_fifo(std::string_view flag, const std::string& file, HeldFiles* held) {
  if (!held) return;
  try {
    refuse_foreign_symlink(file, flag);
  } catch (const FileError& e) {
    throw ConfigError(e.what());
  }
  const int fd = ::open(file.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  const std::string name = std::string(flag) + " " + txpath::quoted(file);
  if (fd < 0 && errno == ENXIO) throw ConfigError(name + ": a FIFO that nobody reads");
  if (fd < 0) throw ConfigError(name + ": " + std::strerror(errno));
  held->hold(fd);
}

// Checks, before anything runs and without creating anything, that `file` can be written: not
// a directory, a FIFO that someone reads (hold_fifo), and a regular file's directory exists and
// may be written. The write itself (OutputFile, after the table) checks everything again,
// symlinks included.
void check_output_path(std::string_view flag, const std::string& file, HeldFiles* held) {
  const std::string name = std::string(flag) + " " + txpath::quoted(file);
  struct stat st {};
  const bool link = ::lstat(file.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  if (::stat(file.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) return hold_fifo(flag, file, held);
  if (link) return;  // checked when written
  if (::stat(file.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw ConfigError(name + ": is a directory");
    if (!S_ISREG(st.st_mode)) return;  // a device: written in place
  }
  const std::string dir = dir_of(file);
  if (::stat(dir.c_str(), &st) != 0)
    throw ConfigError(name + ": directory " + txpath::quoted(dir) + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw ConfigError(name + ": " + txpath::quoted(dir) + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(name + ": cannot create a file in " + txpath::quoted(dir) + ": " + std::strerror(errno));
}

// ---- outputs ----------------------------------------------------------------------------------

// "1,2,4": the TX queue counts; empty for the seed experiment's one TX queue.
std::string queue_counts(const BenchConfig& cfg) {
  if (cfg.queues.size() == 1 && cfg.queues.front() == 1) return {};
  return fmt::format("{}", fmt::join(cfg.queues, ","));
}

// The SVG's provenance line: "txpath 0.1.0+g1234abc · 2026-12-03T21:04:05Z · host NAME", the
// same version, date form and host name as the JSON's.
std::string provenance_line() {
  return "txpath " + std::string(build_info().version) + " \u00b7 " +
         utc_iso8601(std::chrono::system_clock::now()) + " \u00b7 host " + one_line(host_info().hostname);
}

// Writes --json, --csv and --plot (each complete or not there: OutputFile) and reports every
// failure in one line naming the file. False if any failed.
bool write_outputs(const BenchOptions& o, const BenchConfig& cfg,
                   const std::vector<BenchPoint>& points, const BenchProvenance& provenance,
                   bool partial) {
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
  write("--json", o.json, [&] { return bench_json(cfg, points, provenance, partial); });
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
                                          partial ? " [partial: stopped early]" : ""),
                      provenance_line());
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

// --source pcap:FILE: the capture is read once, into a snapshot that the parent holds and every
// round's worker gets as kCaptureFd (bench/pcap_source.hpp); -1 for another source (refused
// later). `held` null: a worker, whose snapshot must be there.
int capture_snapshot(const std::string& source, HeldFiles* held) {
  if (!source.starts_with("pcap:") || source.size() == 5) return -1;
  if (held) {
    const int fd = bench_detail::snapshot_pcap(source.substr(5));
    held->hold(fd);
    return fd;
  }
  if (!bench_detail::is_pcap_snapshot(kCaptureFd))
    throw ConfigError("--worker: file descriptor 4 is not the capture's snapshot (--worker is for txpath bench's own use)");
  return kCaptureFd;
}

// `held`: what the parent holds open (FIFO outputs, the capture's snapshot); null in a worker.
BenchConfig config_from(const BenchOptions& o, HeldFiles* held) {
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
  cfg.sndbuf = o.sndbuf;
  cfg.pin = !o.no_pin;
  cfg.repeat = o.repeat;
  cfg.nodes = o.nodes;
  cfg.sink = o.sink;
  cfg.kernel_row = !o.no_kernel_row;
  cfg.seed = o.seed;
  cfg.rate_pps = o.rate, cfg.rate_per_sender_pps = o.rate_per_sender;  // offered load and traffic
  cfg.flows = o.flows, cfg.source = o.source, cfg.replay_speed = o.replay_speed;
  if (!cfg.source.empty()) cfg.source_fd = capture_snapshot(cfg.source, held);
  for (const auto& [flag, file] : {std::pair{"--json", o.json}, std::pair{"--csv", o.csv},
                                   std::pair{"--plot", o.plot}})
    if (!file.empty()) check_output_path(flag, file, held);
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
  fmt::print("config: device {}{}, qdisc {}, lock {}, park {}, payload {} B, burst {}, {} s per point x {} round(s), {}\n",
             one_line(cfg.device), queues, one_line(cfg.qdisc), one_line(cfg.lock), park_list, cfg.payload,
             cfg.burst, cfg.duration_s, cfg.repeat,
             cfg.pin ? (cfg.nodes ? fmt::format("pinned to {} node(s)", cfg.nodes) : "pinned")
                     : "unpinned");
  if (const std::string traffic = traffic_line(cfg); !traffic.empty()) fmt::print("traffic: {}\n", traffic);
  for (const std::string& line : cfg.skipped) fmt::print("skipped: {}\n", one_line(line));
  fmt::print("rounds: {}, rows in random order (--seed {})\n\n",
             cfg.round_runner ? "each in a fresh process" : "all in this process (--in-process)", cfg.seed);
  std::fflush(stdout);
}

// --device's help: every kind the library builds, with the form of its spec.
std::string device_help() {
  std::string text = "The device the queue transmits into, one of:";
  for (const DeviceKind& k : device_kinds()) text += fmt::format("\n  {}  {}", k.spec, k.what);
  return text;
}

// Where and in what order rounds run: --seed, --in-process, and the workers' hidden --worker.
void add_round_options(CLI::App* cmd, BenchOptions& o) {
  cmd->add_option("--seed", o.seed,
                  "Seed of the random order of rows in each round (default: a new one, printed and "
                  "in the JSON; give it again to run the same order)")
      ->transform(decimal_integer<decltype(o.seed)>())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_flag("--in-process", o.in_process,
                "Run every round in this process (default: each round in a fresh process, so that "
                "no process-wide state decides a whole row)");
  cmd->add_option("--worker", o.worker)->group("");  // hidden: one round, for the parent process
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

int write_json_document(const std::string& json_option, OutputFile* file, const std::string& text) {
  if (json_option == "-") {
    std::cout << text;
    std::cout.flush();
    return std::cout ? 0 : 1;
  }
  if (!file) return 0;
  try {
    file->write(text);
    file->commit();
  } catch (const FileError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 1;
  }
  return 0;
}

namespace {

// --rate, --rate-per-sender, --flows, --source, --replay-speed (docs/bench.md, "Offered load
// and traffic").
void add_traffic_options(CLI::App* cmd, BenchOptions& o) {
  const CLI::Validator number = decimal_number();
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
      ->transform(decimal_integer<decltype(o.flows)>())
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

// What the bench writes and prints: --json, --csv, --plot, --quiet, --wide, --interval.
void add_output_options(CLI::App* cmd, BenchOptions& o, const CLI::Validator& number,
                        const CLI::Validator& non_empty) {
  cmd->add_option("--json", o.json, "Write results as JSON to FILE")->check(non_empty);
  cmd->add_option("--csv", o.csv, "Write results as CSV to FILE")->check(non_empty);
  cmd->add_option("--plot", o.plot, "Write an SVG chart (Mpps and CPU ns/pkt vs threads, 95% CI bars, drops marked) to FILE")->check(non_empty);
  cmd->add_flag("--quiet", o.quiet, "No progress lines on stderr (--interval lines are still printed)");
  cmd->add_flag("--wide", o.wide,
                "Every column of the table (min..max, CV, CI, fairness, batch, lock waits, p50, requeues) "
                "and the full check text; the default table fits 120 columns");
  cmd->add_option("--interval", o.interval,
                  "Print a line on stderr every S seconds of each run's measured window: Mpps and drops "
                  "in that slice (as iperf3 -i)")
      ->check(number)
      ->check(CLI::Range(0.01, 3600.0));
}

// What each sender sends and may hold: --payload, --burst, --sndbuf.
void add_sender_options(CLI::App* cmd, BenchOptions& o) {
  cmd->add_option("--payload", o.payload, "UDP payload bytes")
      ->transform(decimal_integer<decltype(o.payload)>())
      ->check(CLI::Range(16, 9000))
      ->capture_default_str();
  cmd->add_option("--burst", o.burst,
                  "Packets per send call: 1, send() per packet; N > 1, send_burst() of N packets "
                  "(the floor row rings its doorbell every 64 packets whatever N)")
      ->transform(decimal_integer<decltype(o.burst)>())
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--sndbuf", o.sndbuf,
                  "Each sender's send budget in bytes, as a socket's send buffer: packets handed over "
                  "and not yet freed charge their buffer and descriptor; past it the sender waits for "
                  "completions (default: Linux's wmem_default). 0: no budget")
      ->transform(decimal_integer<decltype(o.sndbuf)>())
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 32))
      ->capture_default_str();
}

void add_bench_command(CLI::App& app, BenchOptions& o) {
  CLI::App* cmd = app.add_subcommand("bench", "N senders into one TX queue; Mpps and CPU per packet");
  const CLI::Validator number = decimal_number();  // no name: the help shows the type
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
  cmd->add_option("--metrics", o.metrics,
                  "Serve this user's live queues (--tc-config's among them) as OpenMetrics text on "
                  "HOST:PORT (GET /metrics) while the bench runs, as `txpath exporter` does");
  cmd->add_option("--tc-dev", o.tc_dev, "Device of --tc-config to use (default: its only device)")
      ->check(non_empty)
      ->needs(tc_config);
  add_sender_options(cmd, o);
  cmd->add_option("--repeat", o.repeat, "Rounds per point (interleaved); the median is reported")
      ->transform(decimal_integer<decltype(o.repeat)>())
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--nodes", o.nodes, "Use only the first N NUMA nodes (default: all)")
      ->transform(decimal_integer<decltype(o.nodes)>())
      ->check(CLI::Range(1, 1024));
  auto* pin = cmd->add_flag("--pin", o.pin, "Pin senders round-robin over cores, spread over NUMA nodes (default)");
  auto* no_pin = cmd->add_flag("--no-pin", o.no_pin, "Do not pin sender threads");
  pin->excludes(no_pin);
  add_output_options(cmd, o, number, non_empty);
  cmd->add_option("--sink", o.sink,
                  "Where arrivals are counted: auto (the testbed peer of the device), none, "
                  "IFNAME or IFNAME@NETNS")
      ->capture_default_str();
  cmd->add_flag("--no-kernel-row", o.no_kernel_row,
                "With afpacket/udp devices, do not add the kernel's own path (strategy kernel)");
  add_round_options(cmd, o);
  add_traffic_options(cmd, o);
}

namespace {

// --interval S: each slice of each run as one line on stderr (in a worker too: its runs are
// where the slices happen, and it shares the parent's stderr).
void report_intervals(BenchConfig& cfg, const BenchOptions& o) {
  if (o.interval <= 0) return;
  cfg.interval_s = o.interval;
  cfg.on_interval = [](const BenchInterval& slice) {
    fmt::print(stderr, "txpath bench: {}\n", one_line(interval_line(slice)));
  };
}

// --worker THREADS:ROUND: runs that round of the configuration and writes its text on stdout
// for the parent (bench_worker.hpp). Exits as the bench does: 2 bad configuration, 1 a failed
// run, 128 + the signal when a stop cut the round short (its text still written).
int run_worker(const BenchOptions& o) {
  const StopOnSignals stop_on_signals;
  try {
    int threads = 0, round = 0;
    const std::size_t colon = o.worker.find(':');
    const std::string t = o.worker.substr(0, colon), r = colon == std::string::npos ? "" : o.worker.substr(colon + 1);
    const auto [tp, te] = std::from_chars(t.data(), t.data() + t.size(), threads);
    const auto [rp, re] = std::from_chars(r.data(), r.data() + r.size(), round);
    if (t.empty() || r.empty() || te != std::errc() || re != std::errc() || tp != t.data() + t.size() ||
        rp != r.data() + r.size())
      throw ConfigError("--worker: " + txpath::quoted(o.worker) + " is not THREADS:ROUND");
    check_round_pipe();
    BenchConfig cfg = config_from(o, nullptr);
    cfg.stop = &g_stop;
    report_intervals(cfg, o);  // a worker's runs are where the slices happen
    const std::string text = run_bench_round(cfg, threads, round, [&](const std::string& line) {
      if (!o.quiet) fmt::print(stderr, "txpath bench: {}\n", line);
    });
    write_round_text(text);
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
    return 1;
  }
  const int signal = g_signal.load(std::memory_order_relaxed);  // relaxed: see g_signal
  return signal != 0 ? 128 + signal : 0;
}

void print_warnings(const std::vector<BenchPoint>& points) {
  for (const std::string& line : bench_warnings(points)) fmt::print(stderr, "txpath: warning: {}\n", line);
}

// After the measurement: the table's notes, the warnings and what stopped the run, then the
// outputs. Returns the command's exit status.
int finish_bench(const BenchOptions& o, const BenchConfig& cfg, const std::vector<BenchPoint>& points,
                 const TableLayout& layout, bool header_printed, const BenchProvenance& provenance,
                 const std::string& round_failed, bool round_failed_reported) {
  // relaxed: see g_signal. A signal seen now stopped the bench (or came after its last run).
  const bool partial = g_signal.load(std::memory_order_relaxed) != 0 || !round_failed.empty();

  if (!header_printed) fmt::print("{}", table_header(layout));  // even when no row ran
  fmt::print("{}{}{}{}", table_notes(layout, points), queue_table(layout, points),
             sink_table(layout, points), table_legend(layout));
  std::fflush(stdout);
  print_warnings(points);
  if (g_signal.load(std::memory_order_relaxed) != 0)
    fmt::print(stderr, "txpath: stopped by {}: the rows above are those that ran; outputs are marked partial\n",
               g_signal.load(std::memory_order_relaxed) == SIGINT ? "SIGINT" : "SIGTERM");
  if (!round_failed.empty())
    fmt::print(stderr, "txpath: error: {}{}: the rows above are the rounds that ran; outputs are marked partial\n",
               one_line(round_failed), round_failed_reported ? " (its error above)" : "");
  const bool written = write_outputs(o, cfg, points, provenance, partial);
  const bool all_ok = std::all_of(points.begin(), points.end(),
                                  [](const BenchPoint& p) { return p.conserved && p.delivered; });
  if (!all_ok) fmt::print(stderr, "txpath: error: conservation or delivery check failed\n");
  if (const int signal = g_signal.load(std::memory_order_relaxed); signal != 0) return 128 + signal;
  return written && all_ok && round_failed.empty() ? 0 : 1;
}

}  // namespace

// Order: check the whole configuration (exit 2, nothing run); measure (a first SIGINT/SIGTERM
// stops it early), each round in a fresh process unless --in-process; print the table, always;
// then the warnings; then write the outputs, each failure one line (exit 1). A stopped bench
// exits 128 + the signal, its outputs marked partial.
int run_bench_command(const BenchOptions& o) {
  if (!o.worker.empty()) return run_worker(o);
  const StopOnSignals stop_on_signals;  // until the outputs are written: a second signal exits
  HeldFiles held_files;                 // FIFO outputs and the capture, until the outputs are written
  const BenchProvenance provenance{.command_line = o.command_line,
                                   .started = std::chrono::system_clock::now()};
  BenchConfig cfg;
  std::vector<BenchPoint> points;
  TableLayout layout;
  bool header_printed = false;
  const auto print_header = [&] {
    if (!std::exchange(header_printed, true)) fmt::print("{}", table_header(layout));
  };
  std::optional<metrics::BackgroundExporter> exporter;  // stops after the last round
  std::string round_failed;             // a round that failed after others finished (exit 1)
  bool round_failed_reported = false;   // its worker printed its own error line
  try {
    cfg = config_from(o, &held_files);
    if (!o.metrics.empty()) {
      exporter.emplace(metrics::parse_listen(o.metrics, "--metrics"));
      if (!o.quiet) fmt::print(stderr, "txpath bench: metrics on http://{}/metrics\n", exporter->bound());
    }
    if (!o.in_process) {
      cfg.round_runner = [&o, seed = cfg.seed, capture = cfg.source_fd](int threads, int round) {
        return run_round_in_worker(o.args, seed, threads, round, g_signal, capture);
      };
    }
    print_config(cfg);
    cfg.stop = &g_stop;
    layout = table_layout(cfg, o.wide);
    // Rows print as each thread count's points are final; the header once, before the first.
    cfg.on_points = [&](std::span<const BenchPoint> finished) {
      print_header();
      fmt::print("{}", table_rows(layout, finished));
      std::fflush(stdout);
    };
    report_intervals(cfg, o);
    points = run_bench(cfg, [&](const std::string& line) {
      if (!o.quiet) fmt::print(stderr, "txpath bench: {}\n", line);
    });
  } catch (const BenchRoundFailed& e) {
    // Rounds had finished: they are shown and written (marked partial), the failure said after.
    points = e.points;
    round_failed = e.what();
    try {
      std::rethrow_exception(e.cause);
    } catch (const WorkerFailed& w) {
      round_failed_reported = w.reported;  // the worker printed its own line
    } catch (...) {
    }
  } catch (const WorkerFailed& e) {
    if (!e.reported) fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
    return e.status;
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
    return 2;
  } catch (const metrics::BadListen& e) {
    fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
    return 2;
  } catch (const std::exception& e) {  // a run that failed outright (threads, memory)
    fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
    return 1;
  }
  return finish_bench(o, cfg, points, layout, header_printed, provenance, round_failed,
                      round_failed_reported);
}

}  // namespace txpath::cli
