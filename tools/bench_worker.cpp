// SPDX-License-Identifier: MIT
#include "bench_worker.hpp"

#include "txpath/error.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace txpath::cli {

namespace {

// The running worker's pid (0: none). Set before the parent waits on it and read by the stop
// signal's handler: relaxed on both sides (kill() needs the value only; a worker started just
// after a signal is told by the check after the store, see run_round_in_worker).
std::atomic<pid_t> g_worker{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "read from a signal handler");

constexpr std::size_t kMaxOutput = 16u << 20;  // run_bench refuses more anyway

std::string where(int threads, int round) {
  return "bench worker (threads " + std::to_string(threads) + ", round " + std::to_string(round + 1) + ")";
}

// Reads `fd` to its end, at most kMaxOutput + 1 bytes. False on a read error. Waits in poll()
// with a timeout, never in read(): a sanitizer that runs signal handlers only when a call
// returns (ThreadSanitizer) then still forwards a stop to the worker within 100 ms.
bool read_bounded(int fd, std::string& out) {
  char buf[65536];
  while (out.size() <= kMaxOutput) {
    pollfd ready{fd, POLLIN, 0};
    const int polled = ::poll(&ready, 1, 100);
    if (polled < 0 && errno != EINTR) return false;
    if (polled <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

void check_round_pipe() {
  struct stat st {};
  if (::fstat(kWorkerFd, &st) != 0 || !S_ISFIFO(st.st_mode))
    throw ConfigError("--worker: file descriptor 3 is not a pipe (--worker is for txpath bench's own use)");
}

void write_round_text(const std::string& text) {
  check_round_pipe();
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(kWorkerFd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("--worker: writing the round: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

void signal_worker(int sig) noexcept {
  const pid_t pid = g_worker.load(std::memory_order_relaxed);  // relaxed: see g_worker
  if (pid > 0) ::kill(pid, sig);
}

std::string run_round_in_worker(const std::vector<std::string>& args, uint64_t seed, int threads, int round,
                                const std::atomic<int>& stop_signal, int capture_fd) {
  std::vector<std::string> argv_text = {"txpath"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  for (const std::string& extra : {std::string("--seed"), std::to_string(seed), std::string("--worker"),
                                   std::to_string(threads) + ":" + std::to_string(round)})
    argv_text.push_back(extra);
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw WorkerFailed(where(threads, round) + ": pipe: " + std::strerror(errno), 1, false);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw WorkerFailed(where(threads, round) + ": fork: " + std::strerror(err), 1, false);
  }
  if (pid == 0) {  // async-signal-safe calls only until exec
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    // The round's text goes to fd 3; stdout stays the parent's (pcap:/dev/stdout writes there).
    if (fds[1] == kWorkerFd) {
      ::fcntl(kWorkerFd, F_SETFD, 0);
    } else {
      ::dup2(fds[1], kWorkerFd);  // the copy is not close-on-exec
    }
    // The capture's snapshot is at 10 or above (snapshot_pcap), never one of the two above.
    if (capture_fd >= 0) ::dup2(capture_fd, kCaptureFd);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  g_worker.store(pid, std::memory_order_relaxed);  // relaxed: see g_worker
  // relaxed: the handler set it before a store here could be seen; kill() orders nothing.
  if (const int sig = stop_signal.load(std::memory_order_relaxed); sig != 0) ::kill(pid, sig);
  std::string out;
  const bool read_ok = read_bounded(fds[0], out);
  ::close(fds[0]);
  if (out.size() > kMaxOutput) ::kill(pid, SIGKILL);
  const int status = wait_for(pid);
  g_worker.store(0, std::memory_order_relaxed);
  const std::string name = where(threads, round);
  if (!read_ok) throw WorkerFailed(name + ": reading its output: " + std::strerror(errno), 1, false);
  if (out.size() > kMaxOutput) throw WorkerFailed(name + ": malformed output: over 16 MiB", 1, false);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    // relaxed: see above. The stop we forwarded reached it before its handler was in place.
    if (sig == stop_signal.load(std::memory_order_relaxed) && out.empty()) return {};
    const char* sig_name = sigabbrev_np(sig);
    throw WorkerFailed(name + ": killed by signal " + std::to_string(sig) + (sig_name ? std::string(" (SIG") + sig_name + ")" : ""), 1,
                       false);
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  if (code == 0 || code == 128 + SIGINT || code == 128 + SIGTERM) return out;  // a stop: partial round
  if (code == 127) throw WorkerFailed(name + ": could not run /proc/self/exe", 1, false);
  throw WorkerFailed(name + ": exited with status " + std::to_string(code), code, code == 1 || code == 2);
}

}  // namespace txpath::cli
