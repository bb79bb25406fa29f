// SPDX-License-Identifier: MIT
// peer:testpmd (bench/dpdk_env.hpp): DPDK's own dpdk-testpmd, in txonly mode, on the same
// device through DPDK's driver for it (net_af_packet, net_af_xdp, net_null), with the bench's
// frame size and burst, one forwarding lcore per sender on the senders' CPUs. Its Mpps from
// testpmd's own count (the "TX-packets" it prints when it stops) over the time it forwarded; its
// CPU from /proc over the same time; its delivery from the device's counters (the interface's
// tx_packets, on a veth the peer end's rx_packets; on an ifb testbed its own counter).
// docs/bench.md, "The DPDK peers".
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/dpdk_env.hpp"
#include "bench/live.hpp"
#include "bench/measure.hpp"
#include "bench/real_path.hpp"
#include "net/mac.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"

extern char** environ;

namespace txpath::bench_detail {

namespace {

constexpr auto kStartTimeout = std::chrono::seconds(30);  // until testpmd forwards
constexpr auto kStopTimeout = std::chrono::seconds(10);   // from Enter to its exit

// A counter of a kernel interface (/sys/class/net/IF/statistics/NAME); 0 when unreadable.
uint64_t iface_counter(const std::string& iface, const char* name) {
  std::ifstream in("/sys/class/net/" + iface + "/statistics/" + name);
  uint64_t v = 0;
  return in >> v ? v : 0;
}

// utime + stime of process `pid`, ns (/proc/PID/stat, fields 14 and 15); 0 when unreadable.
uint64_t process_cpu_ns_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;
  uint64_t utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) * (1'000'000'000 / static_cast<uint64_t>(::sysconf(_SC_CLK_TCK)));
}

// dpdk-testpmd as a child with its stdin and stdout on pipes (stderr to /dev/null); killed and
// reaped if still running when this goes.
class Testpmd {
 public:
  explicit Testpmd(std::vector<std::string> args) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) throw ConfigError("peer:testpmd: pipe failed");
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]);
      ::close(in[1]);
      throw ConfigError("peer:testpmd: pipe failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    if (rc != 0) {
      pid_ = -1;
      throw ConfigError("peer:testpmd: cannot start dpdk-testpmd: " + std::string(std::strerror(rc)));
    }
  }
  ~Testpmd() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      reap();
    }
    if (stdin_ >= 0) ::close(stdin_);
    if (stdout_ >= 0) ::close(stdout_);
  }
  Testpmd(const Testpmd&) = delete;
  Testpmd& operator=(const Testpmd&) = delete;

  pid_t pid() const noexcept { return pid_; }

  // Reads its output until `marker` has appeared (true) or it ended or `timeout` passed (false).
  bool wait_for(std::string_view marker, std::chrono::steady_clock::duration timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (output_.find(marker) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !read_some(static_cast<int>(left.count()))) return false;
    }
    return true;
  }
  // Enter on its stdin (it stops forwarding and prints its statistics), then its output to the
  // end and its exit, within `timeout`; false if it had to be killed.
  bool stop(std::chrono::steady_clock::duration timeout) {
    (void)!::write(stdin_, "\n", 1);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      if (!read_some(static_cast<int>(left.count()))) break;
    }
    reap();
    return true;
  }
  const std::string& output() const noexcept { return output_; }

 private:
  bool read_some(int timeout_ms) {
    pollfd p{stdout_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(stdout_, buf, sizeof buf);
    if (n <= 0) return n < 0 && errno == EINTR;
    if (output_.size() < (1u << 20)) output_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  void reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1;
  std::string output_;
};

// The number after the last `key` in `text` (testpmd's accumulated statistics come last).
uint64_t last_count(const std::string& text, std::string_view key) {
  const std::size_t at = text.rfind(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + key.size(), nullptr, 10);
}

// The folder testpmd's EAL makes for its file prefix (under /var/run/dpdk as root, else
// $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk): removed when the run ends, however it ends.
std::string testpmd_prefix() { return "txpath-testpmd-" + std::to_string(::getpid()); }

class RuntimeDirScope {
 public:
  RuntimeDirScope() = default;
  ~RuntimeDirScope() {
    std::error_code ignored;
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    const std::string base = ::geteuid() == 0 ? "/var/run" : xdg != nullptr && *xdg != 0 ? xdg : "/tmp";
    std::filesystem::remove_all(base + "/dpdk/" + testpmd_prefix(), ignored);
  }
  RuntimeDirScope(const RuntimeDirScope&) = delete;
  RuntimeDirScope& operator=(const RuntimeDirScope&) = delete;
};

// testpmd's command line: EAL (no hugepages, no PCI, no shared files, `lanes` forwarding lcores,
// lcore t on sender t's CPU, the main lcore on the first sender's), the device with `lanes`
// queue pairs (one stream each, one per lcore), txonly with the bench's frame: its length and its
// addresses (MACs, IPs, UDP ports), so that the peer's stack takes testpmd's frames the way it
// takes the rows' (delivered to the sink's port, not dropped as another host's).
std::vector<std::string> testpmd_args(const BenchConfig& cfg, int lanes, const DpdkDevice& dev,
                                      const FrameSpec& spec, std::size_t frame_len) {
  std::string lcores = "0@" + std::to_string(std::max(0, cfg.pin ? cpu_for_sender(0, cfg.nodes) : 0));
  for (int t = 0; t < lanes; ++t)
    lcores += "," + std::to_string(t + 1) + "@" + std::to_string(std::max(0, cfg.pin ? cpu_for_sender(t, cfg.nodes) : t));
  const std::string prefix = testpmd_prefix();
  // stdbuf -oL: its stdout is a pipe, which it would fill before "Press enter to exit" came out.
  return {"stdbuf", "-oL", "dpdk-testpmd", "--no-huge", "-m", "512", "--no-shconf", "--no-pci", "--no-telemetry",
          "--log-level=3", "--file-prefix=" + prefix, "--lcores=" + lcores, "--vdev=" + dev.devargs, "--",
          "--forward-mode=txonly", "--txpkts=" + std::to_string(frame_len),
          "--eth-peer=0," + net::mac_text(spec.dst_mac),
          "--tx-ip=" + ipv4_text(spec.src_ip) + "," + ipv4_text(spec.dst_ip),
          "--tx-udp=" + std::to_string(spec.src_port) + "," + std::to_string(spec.dst_port),
          "--burst=" + std::to_string(std::min(cfg.burst, 512)), "--nb-cores=" + std::to_string(lanes),
          "--rxq=" + std::to_string(lanes), "--txq=" + std::to_string(lanes),
          "--total-num-mbufs=" + std::to_string(16384 + 2048 * lanes), "--auto-start"};
}

}  // namespace

Run run_testpmd_once(const BenchConfig& cfg, int threads, uint32_t queues, Delivery& delivery) {
  if (const auto why = testpmd_unavailable(cfg.device)) throw ConfigError("peer:testpmd: " + *why);
  std::optional<Probe> probe(std::in_place, cfg.device);
  const FrameSpec spec = frames_for(probe->device(), cfg.payload);
  const FrameTemplate tmpl(spec);
  probe.reset();  // testpmd opens the interface itself
  // The TX queues the rows' senders use: sender t sends on queue t % queues, so min(threads,
  // queues) of them. testpmd runs one lcore and one queue pair for each (a stream is one queue:
  // more lcores than queues would only idle), each sending as fast as its queue takes.
  const int lanes = std::max(1, std::min(threads, static_cast<int>(queues)));
  const DpdkDevice dev = *dpdk_device(cfg.device, 0, static_cast<uint32_t>(lanes));
  delivery.reset();
  const uint64_t iface0 = dev.iface.empty() ? 0 : iface_counter(dev.iface, "tx_packets");
  const RuntimeDirScope runtime_dir;  // declared first: goes after testpmd has exited
  Testpmd pmd(testpmd_args(cfg, lanes, dev, spec, tmpl.size()));
  if (!pmd.wait_for("Press enter to exit", kStartTimeout))
    throw ConfigError("peer:testpmd: dpdk-testpmd did not start forwarding on " + dev.devargs);
  const uint64_t cpu0 = process_cpu_ns_of(pmd.pid());
  const MachineSample machine0 = sample_machine();
  const auto t0 = std::chrono::steady_clock::now();
  const bool whole = sleep_unless_stopped(cfg, std::chrono::duration<double>(planned_run_seconds(cfg)));
  const uint64_t cpu1 = process_cpu_ns_of(pmd.pid());
  const MachineSample machine1 = sample_machine();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!pmd.stop(kStopTimeout)) throw ConfigError("peer:testpmd: dpdk-testpmd did not stop");

  Run r;
  r.lock = "-";
  r.interrupted = !whole;
  r.sent = last_count(pmd.output(), "TX-packets:");
  r.dropped = last_count(pmd.output(), "TX-dropped:");
  r.submitted = r.sent + r.dropped;
  r.window_sent = r.sent;
  r.mpps = secs > 0 ? static_cast<double>(r.sent) / secs / 1e6 : 0;
  r.cpu_ns_per_pkt = r.sent > 0 ? static_cast<double>(cpu1 - cpu0) / static_cast<double>(r.sent) : 0;
  r.fairness = 1;
  r.noise = noise_between(machine0, machine1);
  r.drained = r.conserved = true;  // testpmd's own count: what it sent and what it dropped
  if (!delivery.null_nic.empty()) {
    delivery.check(r.sent, r);  // the ifb's counter counts any frame
  } else if (!dev.iface.empty()) {
    const uint64_t arrived = iface_counter(dev.iface, "tx_packets") - iface0;
    r.sink_checked = true;
    r.sink_received = std::min(arrived, r.sent);
    r.sink_lost = r.sent - r.sink_received;
  }
  return r;
}

}  // namespace txpath::bench_detail
