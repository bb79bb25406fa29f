// SPDX-License-Identifier: MIT
// See stats_socket.hpp. Invariants: the server thread alone touches the client table and the
// listening socket after the constructor; the destructor signals the eventfd, joins the thread,
// then closes every descriptor. No function here raises a signal (MSG_NOSIGNAL) or throws out
// of the server thread.
#include "tc/stats_socket.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "txpath/error.hpp"

namespace txpath::tc {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kPrefix = "txpath-tc:";
// A header longer than this is not ours: "<decimal length>\n".
constexpr std::size_t kMaxHeader = 24;
// A document larger than this is refused by the client (a guard against a bogus length).
constexpr uint64_t kMaxDocument = uint64_t{1} << 30;

// The abstract address of `name`: sun_path[0] = '\0', then the name bytes (no terminator).
// Returns the address length, or 0 if the name does not fit.
socklen_t abstract_address(const std::string& name, sockaddr_un& addr) noexcept {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (name.empty() || name.size() > max_endpoint_name()) return 0;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

std::string errno_text(int err) { return std::generic_category().message(err); }

// A file descriptor closed on scope exit (unless released).
class Fd {
 public:
  explicit Fd(int fd = -1) noexcept : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

int ms_until(Clock::time_point deadline) noexcept {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// FNV-1a, 64 bits, from the given offset basis.
uint64_t fnv1a(std::string_view s, uint64_t basis) noexcept {
  uint64_t h = basis;
  for (const unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// One connection being answered.
struct Client {
  Fd fd;
  std::string out;  // header + document
  std::size_t sent = 0;
  Clock::time_point deadline;
};

// Peers of another uid get nothing (root may read anyone's).
bool peer_allowed(int fd) noexcept {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  return cred.uid == ::geteuid() || cred.uid == 0;
}

// Writes what it can without blocking. Returns false when the client is finished with (all sent,
// or gone: EPIPE, ECONNRESET ...), true while more remains to be written.
bool write_some(Client& c) noexcept {
  while (c.sent < c.out.size()) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // the client went away
  }
  return false;
}

}  // namespace

std::size_t max_endpoint_name() noexcept { return sizeof(sockaddr_un::sun_path) - 1; }

StatsServer::StatsServer(std::string name, std::function<std::string()> snapshot)
    : name_(std::move(name)), snapshot_(std::move(snapshot)) {
  sockaddr_un addr;
  const socklen_t len = abstract_address(name_, addr);
  if (len == 0)
    throw ConfigError("stats endpoint name of " + std::to_string(name_.size()) +
                      " bytes (1 to " + std::to_string(max_endpoint_name()) + " allowed)");
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) throw ConfigError("stats endpoint: socket: " + errno_text(errno));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    if (err == EADDRINUSE)
      throw ConfigError("stats endpoint \"" + name_ + "\" is in use by another process");
    throw ConfigError("stats endpoint \"" + name_ + "\": bind: " + errno_text(err));
  }
  if (::listen(fd.get(), SOMAXCONN) != 0)
    throw ConfigError("stats endpoint \"" + name_ + "\": listen: " + errno_text(errno));
  Fd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (stop.get() < 0) throw ConfigError("stats endpoint: eventfd: " + errno_text(errno));
  listen_fd_ = fd.release();
  stop_fd_ = stop.release();
  try {
    thread_ = std::thread([this] { serve(); });
  } catch (...) {
    ::close(listen_fd_);
    ::close(stop_fd_);
    throw;
  }
}

StatsServer::~StatsServer() {
  const uint64_t one = 1;
  // An eventfd write of 1 cannot block (the counter is far from its limit) or fail here.
  ssize_t n;
  do {
    n = ::write(stop_fd_, &one, sizeof one);
  } while (n < 0 && errno == EINTR);
  thread_.join();
  ::close(listen_fd_);
  ::close(stop_fd_);
}

void StatsServer::serve() noexcept {
  std::vector<Client> clients;
  std::vector<pollfd> fds;
  Clock::time_point accept_pause{};  // after an accept error (EMFILE ...): retry later
  for (;;) {
    const Clock::time_point now = Clock::now();
    // Drop clients that did not take their document in time.
    std::erase_if(clients, [now](const Client& c) { return c.deadline <= now; });
    const bool accepting =
        static_cast<int>(clients.size()) < kMaxClients && accept_pause <= now;
    fds.clear();
    fds.push_back({stop_fd_, POLLIN, 0});
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});  // fd -1: ignored by poll
    Clock::time_point wake = Clock::time_point::max();
    for (const Client& c : clients) {
      fds.push_back({c.fd.get(), POLLOUT, 0});
      wake = std::min(wake, c.deadline);
    }
    if (!accepting && accept_pause > now) wake = std::min(wake, accept_pause);
    const int timeout = wake == Clock::time_point::max() ? -1 : std::max(ms_until(wake), 1);
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return;  // cannot happen with valid descriptors; nothing sensible left to do
    }
    if (fds[0].revents != 0) return;  // stop: the destructor closes the rest

    // Clients first (their pollfds follow the first two, in table order).
    std::size_t keep = 0;
    for (std::size_t i = 0; i < clients.size(); ++i) {
      const short ev = fds[i + 2].revents;
      bool more = true;
      if (ev & (POLLERR | POLLHUP | POLLNVAL)) {
        more = false;
      } else if (ev & POLLOUT) {
        more = write_some(clients[i]);
      }
      if (more) {
        if (keep != i) clients[keep] = std::move(clients[i]);
        ++keep;
      }
    }
    clients.resize(keep);

    if (!accepting || !(fds[1].revents & POLLIN)) continue;
    // Accept everything waiting (up to the client cap).
    while (static_cast<int>(clients.size()) < kMaxClients) {
      Fd fd(::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (fd.get() < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          accept_pause = Clock::now() + std::chrono::milliseconds(10);  // EMFILE, ENOBUFS ...
        break;
      }
      if (!peer_allowed(fd.get())) continue;  // closed without a document
      Client c;
      try {
        std::string doc = snapshot_();
        c.out = std::to_string(doc.size()) + '\n';
        c.out += doc;
      } catch (...) {
        continue;  // snapshot failed (or out of memory): closed without a document
      }
      c.fd = std::move(fd);
      c.deadline = Clock::now() + kClientTimeout;
      if (!write_some(c)) continue;  // all sent at once (or the client is gone): close
      try {
        clients.push_back(std::move(c));
      } catch (...) {
        // out of memory: this client is dropped
      }
    }
  }
}

std::optional<std::string> fetch_stats(const std::string& name,
                                       std::chrono::milliseconds timeout) {
  try {
    const Clock::time_point deadline = Clock::now() + timeout;
    sockaddr_un addr;
    const socklen_t len = abstract_address(name, addr);
    if (len == 0) return std::nullopt;
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (fd.get() < 0) return std::nullopt;
    // A unix connect either completes at once, is refused (nobody listens: ECONNREFUSED), or
    // finds the listen backlog full (EAGAIN): then retry until the deadline.
    for (;;) {
      if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) == 0) break;
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EINPROGRESS) {
        pollfd p{fd.get(), POLLOUT, 0};
        if (::poll(&p, 1, ms_until(deadline)) <= 0) return std::nullopt;
        int so_error = 0;
        socklen_t so_len = sizeof so_error;
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &so_len) != 0 || so_error != 0)
          return std::nullopt;
        break;
      }
      if (err != EAGAIN || Clock::now() >= deadline) return std::nullopt;
      ::usleep(1000);  // backlog full: the server is busy, try again
    }

    std::string data;
    char buf[65536];
    std::optional<uint64_t> expected;  // the document's length, once the header is in
    std::size_t body = 0;              // where the document starts in `data`
    for (;;) {
      const ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        data.append(buf, static_cast<std::size_t>(n));
        if (!expected) {
          const std::size_t nl = data.find('\n');
          if (nl == std::string::npos) {
            if (data.size() > kMaxHeader) return std::nullopt;
            continue;
          }
          if (nl == 0 || nl > kMaxHeader) return std::nullopt;
          uint64_t v = 0;
          for (std::size_t i = 0; i < nl; ++i) {
            if (data[i] < '0' || data[i] > '9') return std::nullopt;
            v = v * 10 + static_cast<uint64_t>(data[i] - '0');
            if (v > kMaxDocument) return std::nullopt;
          }
          expected = v;
          body = nl + 1;
          data.reserve(body + std::min<uint64_t>(v, uint64_t{16} << 20));  // grows beyond
        }
        if (data.size() - body > *expected) return std::nullopt;  // more than announced
        continue;
      }
      if (n == 0) break;  // EOF: the server closed after the document
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return std::nullopt;
      const int left = ms_until(deadline);
      if (left == 0) return std::nullopt;
      pollfd p{fd.get(), POLLIN, 0};
      if (::poll(&p, 1, left) < 0 && errno != EINTR) return std::nullopt;
    }
    if (!expected || data.size() - body != *expected) return std::nullopt;  // cut short
    return data.substr(body);
  } catch (...) {
    return std::nullopt;  // out of memory
  }
}

std::string stats_endpoint(const std::string& config_path, const std::string& dev) {
  namespace fs = std::filesystem;
  std::string path;
  std::error_code ec;
  // weakly_canonical: realpath() of an existing file; of a missing one, the canonical existing
  // prefix with the rest appended lexically. Either way absolute, without "." and "..".
  fs::path abs = fs::absolute(fs::path(config_path), ec);
  if (ec) abs = fs::path(config_path);
  fs::path canon = fs::weakly_canonical(abs, ec);
  path = ec ? abs.lexically_normal().string() : canon.string();

  std::string full = std::string(kPrefix) + path + ":" + dev;
  const std::size_t max = max_endpoint_name();
  if (full.size() <= max) return full;
  char hash[33];
  std::snprintf(hash, sizeof hash, "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(full, 0xcbf29ce484222325ULL)),
                static_cast<unsigned long long>(fnv1a(full, 0x84222325cbf29ce4ULL)));
  std::string out = std::string(kPrefix) + hash + ":";
  out += full.substr(full.size() - (max - out.size()));  // the tail: device and file name
  return out;
}

}  // namespace txpath::tc
