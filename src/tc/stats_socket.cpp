// SPDX-License-Identifier: MIT
// See stats_socket.hpp. Invariants: the server thread alone touches the client table and the
// listening socket after the constructor (a UnixEndpoint, unix_endpoint.hpp, whose destructor
// signals the eventfd, joins the thread, closes and removes the socket file; then the lock file
// goes). No function here raises a signal
// (MSG_NOSIGNAL) or throws out of the server thread.
#include "tc/stats_socket.hpp"

#include "tc/socket_io.hpp"
#include "tc/unix_endpoint.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "core/text.hpp"
#include "txpath/error.hpp"

namespace txpath::tc {

namespace wire {

// The filesystem address of `path`. Returns the address length, or 0 if the path does not fit.
socklen_t path_address(const std::string& path, sockaddr_un& addr) noexcept {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() > max_endpoint_path() || path.find('\0') != std::string::npos)
    return 0;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
}

std::string errno_text(int err) { return std::generic_category().message(err); }

int ms_until(Clock::time_point deadline) noexcept {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// The effective uid of the peer of a connected unix socket, if the kernel says.
std::optional<uid_t> peer_uid(int fd) noexcept {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  return cred.uid;
}

// Our own uid or root: the only peers either end deals with.
bool trusted_uid(std::optional<uid_t> uid) noexcept {
  return uid && (*uid == ::geteuid() || *uid == 0);
}

}  // namespace wire

using namespace wire;

namespace {

// A header longer than this is not ours: "<decimal length>\n".
constexpr std::size_t kMaxHeader = 24;
constexpr std::size_t kHashDigits = 32;

// "owner uid 1000, mode 0755" (or what the file is, if not a directory).
std::string describe(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "a symlink";
  if (!S_ISDIR(st.st_mode)) return "not a directory";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return "owner uid " + std::to_string(st.st_uid) + ", mode " + mode;
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

bool same_file(const struct stat& a, const struct stat& b) noexcept {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::string in_use(const std::string& path) {
  return "stats endpoint " + txpath::quoted(path) + " is in use by another process";
}

// One connection being answered.
struct Client {
  Fd fd;
  std::string out;  // header + document
  std::size_t sent = 0;
  Clock::time_point deadline;
};

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

// Accepts every connection waiting (up to the caps) and answers each with a fresh snapshot: what
// does not fit the socket at once is left in `clients`. Returns false after an accept error other
// than "nothing waiting" (EMFILE, ENOBUFS ...): the caller pauses accepting a moment.
bool accept_waiting(int listen_fd, const std::function<std::string()>& snapshot,
                    std::vector<Client>& clients, uint64_t& buffered) noexcept {
  while (static_cast<int>(clients.size()) < StatsServer::kMaxClients &&
         buffered < StatsServer::kMaxBuffered) {
    Fd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (fd.get() < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    // Another uid gets nothing, not even a snapshot taken (root may read anyone's).
    if (!trusted_uid(peer_uid(fd.get()))) continue;
    Client c;
    try {
      std::string doc = snapshot();
      if (doc.size() > kMaxDocument) continue;  // more than any client takes: closed
      c.out = std::to_string(doc.size()) + '\n';
      c.out += doc;
    } catch (...) {
      continue;  // snapshot failed (or out of memory): closed without a document
    }
    c.fd = std::move(fd);
    c.deadline = Clock::now() + StatsServer::kClientTimeout;
    if (!write_some(c)) continue;  // all sent at once (or the client is gone): close
    try {
      clients.push_back(std::move(c));
      buffered += clients.back().out.size();
    } catch (...) {
      // out of memory: this client is dropped
    }
  }
  return true;
}

// Takes the server lock `lock_path` (flock, held until the descriptor is closed). The file a
// holder removes on stop may have been opened by a second process meanwhile: the lock counts
// only on the inode still linked at the path, so that case is retried.
Fd take_server_lock(const std::string& lock_path, const std::string& sock_path) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    Fd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0)
      throw ConfigError("stats endpoint lock " + txpath::quoted(lock_path) + ": " + errno_text(errno));
    int rc;
    do {
      rc = ::flock(fd.get(), LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      if (errno == EWOULDBLOCK) throw ConfigError(in_use(sock_path));
      throw ConfigError("stats endpoint lock " + txpath::quoted(lock_path) + ": flock: " + errno_text(errno));
    }
    struct stat held{}, linked{};
    if (::fstat(fd.get(), &held) == 0 && ::lstat(lock_path.c_str(), &linked) == 0 &&
        same_file(held, linked))
      return fd;
  }
  throw ConfigError(in_use(sock_path));
}

// Is something listening on the socket file at `addr`? (A unix connect completes at once, or
// finds the backlog full: both are a live server. ECONNREFUSED: a file nobody listens on.)
bool listener_alive(const sockaddr_un& addr, socklen_t len) noexcept {
  Fd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (probe.get() < 0) return false;
  int rc;
  do {
    rc = ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), len);
  } while (rc != 0 && errno == EINTR);
  return rc == 0 || errno == EAGAIN || errno == EINPROGRESS;
}

// Binds `fd` at `path`, replacing a stale socket file (nothing listens on it). The caller holds
// the server lock, so no other server of this path binds meanwhile.
void bind_replacing_stale(int fd, const std::string& path, const sockaddr_un& addr, socklen_t len) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0) return;
    const int err = errno;
    if (err != EADDRINUSE)
      throw ConfigError("stats endpoint " + txpath::quoted(path) + ": bind: " + errno_text(err));
    if (listener_alive(addr, len)) throw ConfigError(in_use(path));
    struct stat st{};
    if (::lstat(path.c_str(), &st) != 0) continue;  // gone meanwhile: bind again
    if (!S_ISSOCK(st.st_mode))
      throw ConfigError("stats endpoint " + txpath::quoted(path) + " exists and is not a socket");
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      throw ConfigError("stats endpoint " + txpath::quoted(path) + ": cannot remove the stale socket: " +
                        errno_text(errno));
  }
  throw ConfigError(in_use(path));
}

// The directory part of a path ("." if none).
std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::size_t max_endpoint_path() noexcept { return sizeof(sockaddr_un::sun_path) - 1; }

bool check_private_directory(const std::string& dir, bool create) {
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT)
      throw ConfigError("stats directory " + txpath::quoted(dir) + ": " + errno_text(errno));
    if (!create) return false;
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      throw ConfigError("stats directory " + txpath::quoted(dir) + ": cannot create it: " +
                        errno_text(errno));
    if (::lstat(dir.c_str(), &st) != 0)
      throw ConfigError("stats directory " + txpath::quoted(dir) + ": " + errno_text(errno));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    throw ConfigError("stats directory " + txpath::quoted(dir) + " is not private to uid " +
                      std::to_string(::geteuid()) + " (" + describe(st) +
                      "; wanted a directory of ours with mode 0700): refusing to use it");
  return true;
}

std::string stats_directory(bool create) {
  const uid_t euid = ::geteuid();
  if (euid == 0) {
    // /run/txpath is shared with other root-only state (the testbed's): root-owned and not
    // writable by anyone else is enough for it; the endpoints get their own 0700 directory.
    const std::string base = "/run/txpath";
    struct stat st{};
    if (::lstat(base.c_str(), &st) != 0) {
      if (errno != ENOENT) throw ConfigError("stats directory " + txpath::quoted(base) + ": " + errno_text(errno));
      if (!create) return base + "/stats";
      if (::mkdir(base.c_str(), 0755) != 0 && errno != EEXIST)
        throw ConfigError("stats directory " + txpath::quoted(base) + ": cannot create it: " + errno_text(errno));
      if (::lstat(base.c_str(), &st) != 0)
        throw ConfigError("stats directory " + txpath::quoted(base) + ": " + errno_text(errno));
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0)
      throw ConfigError("stats directory " + txpath::quoted(base) + " is not root's own (" + describe(st) +
                        "): refusing to use it");
    check_private_directory(base + "/stats", create);
    return base + "/stats";
  }
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg && *xdg) {
    const std::string runtime = xdg;
    struct stat st{};
    if (runtime[0] != '/' || ::lstat(runtime.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != euid || (st.st_mode & 077) != 0)
      throw ConfigError("XDG_RUNTIME_DIR " + txpath::quoted(runtime) + " is not a private directory of uid " +
                        std::to_string(euid) + ": refusing to put the stats endpoint there");
    check_private_directory(runtime + "/txpath", create);
    return runtime + "/txpath";
  }
  // /tmp is sticky: once we own /tmp/txpath-UID nobody else can rename or remove it; if another
  // user made it first, check_private_directory() refuses it.
  const std::string dir = "/tmp/txpath-" + std::to_string(euid);
  check_private_directory(dir, create);
  return dir;
}

std::string endpoint_config_path(const std::string& config_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // weakly_canonical: realpath() of an existing file; of a missing one, the canonical existing
  // prefix with the rest appended lexically. Either way absolute, without "." and "..".
  fs::path abs = fs::absolute(fs::path(config_path), ec);
  if (ec) abs = fs::path(config_path);
  const fs::path canon = fs::weakly_canonical(abs, ec);
  return ec ? abs.lexically_normal().string() : canon.string();
}

std::string stats_endpoint_name(const std::string& config_path, const std::string& dev,
                                std::size_t dir_len) {
  namespace fs = std::filesystem;
  const std::string path = endpoint_config_path(config_path);

  std::string identity = path;
  identity.push_back('\0');  // neither a path nor a device name holds a NUL
  identity += dev;
  char hash[kHashDigits + 1];
  std::snprintf(hash, sizeof hash, "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(identity, 0xcbf29ce484222325ULL)),
                static_cast<unsigned long long>(fnv1a(identity, 0x84222325cbf29ce4ULL)));
  const std::size_t max = max_endpoint_path();
  if (dir_len + 1 + kHashDigits > max)
    throw ConfigError("stats directory path of " + std::to_string(dir_len) +
                      " bytes leaves no room for a socket name (" + std::to_string(max) +
                      " bytes in all)");
  std::string tail = fs::path(path).filename().string() + "@" + dev;
  for (char& c : tail)
    if (c < 0x21 || c > 0x7e || c == '/') c = '_';
  const std::size_t room = max - dir_len - 1 - kHashDigits;  // bytes left for "-" + tail
  std::string name(hash);
  if (room > 1) {
    if (tail.size() > room - 1) tail = tail.substr(tail.size() - (room - 1));  // keep the device
    name += "-" + tail;
  }
  return name;
}

std::string stats_endpoint(const std::string& config_path, const std::string& dev, bool create) {
  const std::string dir = stats_directory(create);
  return dir + "/" + stats_endpoint_name(config_path, dev, dir.size());
}

namespace {

sockaddr_un stats_address(const std::string& path, socklen_t& len) {
  sockaddr_un addr;
  len = path_address(path, addr);
  if (len == 0)
    throw ConfigError("stats endpoint path of " + std::to_string(path.size()) + " bytes (1 to " +
                      std::to_string(max_endpoint_path()) + " allowed)");
  return addr;
}

// The endpoint's lock, taken once its path and directory are checked.
StatsServer::HeldLock lock_endpoint(const std::string& path) {
  socklen_t len = 0;
  (void)stats_address(path, len);
  check_private_directory(parent_of(path), /*create=*/true);
  const std::string lock_path = path + ".lock";
  return StatsServer::HeldLock{take_server_lock(lock_path, path), lock_path};
}

UnixEndpoint stats_listener(const std::string& path) {
  socklen_t len = 0;
  const sockaddr_un addr = stats_address(path, len);
  return UnixEndpoint(path, "stats endpoint", addr, len, SOMAXCONN,
                      [&](int fd, const sockaddr_un& a, socklen_t l) { bind_replacing_stale(fd, path, a, l); });
}

}  // namespace

StatsServer::HeldLock::~HeldLock() {
  // The lock file goes while we still hold it (see take_server_lock()); fd closes after.
  if (fd.get() >= 0) ::unlink(path.c_str());
}

StatsServer::StatsServer(std::string path, std::function<std::string()> snapshot)
    : snapshot_(std::move(snapshot)), lock_(lock_endpoint(path)), endpoint_(stats_listener(path)) {
  endpoint_.start([this] { serve(); });
}

void StatsServer::serve() noexcept {
  std::vector<Client> clients;
  std::vector<pollfd> fds;
  uint64_t buffered = 0;  // bytes of documents held in `clients`
  Clock::time_point accept_pause{};  // after an accept error (EMFILE ...): retry later
  auto forget = [&buffered](const Client& c) { buffered -= c.out.size(); };
  for (;;) {
    const Clock::time_point now = Clock::now();
    // Drop clients that did not take their document in time, however slowly they read.
    std::erase_if(clients, [&](const Client& c) {
      if (c.deadline > now) return false;
      forget(c);
      return true;
    });
    const bool accepting = static_cast<int>(clients.size()) < kMaxClients &&
                           buffered < kMaxBuffered && accept_pause <= now;
    fds.clear();
    fds.push_back({endpoint_.stop_fd(), POLLIN, 0});
    fds.push_back({accepting ? endpoint_.listen_fd() : -1, POLLIN, 0});  // fd -1: ignored by poll
    Clock::time_point wake = Clock::time_point::max();
    for (const Client& c : clients) {
      fds.push_back({c.fd.get(), POLLOUT, 0});
      wake = std::min(wake, c.deadline);
    }
    if (accept_pause > now) wake = std::min(wake, accept_pause);
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
      } else {
        forget(clients[i]);
      }
    }
    clients.resize(keep);

    if (!accepting || !(fds[1].revents & POLLIN)) continue;
    if (!accept_waiting(endpoint_.listen_fd(), snapshot_, clients, buffered))
      accept_pause = Clock::now() + std::chrono::milliseconds(10);  // EMFILE, ENOBUFS ...
  }
}

namespace wire {

std::string connect_path(const std::string& path, Clock::time_point deadline, Fd& socket_fd,
                         bool* no_server) {
  sockaddr_un addr;
  const socklen_t len = path_address(path, addr);
  if (len == 0) return "the endpoint path does not fit a unix socket address";
  socket_fd = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (socket_fd.get() < 0) return "socket: " + errno_text(errno);
  const int fd = socket_fd.get();
  // A unix connect either completes at once, is refused (ENOENT: no file; ECONNREFUSED: nobody
  // listens), or finds the listen backlog full (EAGAIN): then retry until the deadline.
  for (;;) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0) return "";
    const int err = errno;
    if (err == EINTR) continue;
    if (err == ENOENT || err == ECONNREFUSED) {
      *no_server = true;
      return "nothing serves it";
    }
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, ms_until(deadline)) <= 0) return "no connection in time";
      int so_error = 0;
      socklen_t so_len = sizeof so_error;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &so_len) != 0) return "connect failed";
      if (so_error != 0) return "connect: " + errno_text(so_error);
      return "";
    }
    if (err != EAGAIN) return "connect: " + errno_text(err);
    if (Clock::now() >= deadline) return "the server is busy: no connection in time";
    ::usleep(1000);  // backlog full: the server is busy, try again
  }
}

// Parses a complete header "<decimal>\n" at the start of `data` (nl: the newline's index).
std::optional<uint64_t> parse_length(const std::string& data, std::size_t nl) {
  if (nl == 0 || nl > kMaxHeader) return std::nullopt;
  uint64_t v = 0;
  for (std::size_t i = 0; i < nl; ++i) {
    if (data[i] < '0' || data[i] > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(data[i] - '0');
    if (v > (uint64_t{1} << 60)) return std::nullopt;
  }
  return v;
}

// Reads one answer "<length>\n<document>" from `fd` before `deadline` into `document`. Returns ""
// or why not. Holds no more than it has received, and refuses a header announcing more than
// kMaxDocument before reading on.
std::string read_document(int fd, Clock::time_point deadline, std::chrono::milliseconds timeout,
                          std::optional<std::string>& document) {
  std::string data;  // grows with what arrived only: never reserved from the header
  char buf[65536];
  std::optional<uint64_t> expected;  // the document's length, once the header is in
  std::size_t body = 0;              // where the document starts in `data`
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      data.append(buf, static_cast<std::size_t>(n));
      if (!expected) {
        const std::size_t nl = data.find('\n');
        if (nl == std::string::npos && data.size() <= kMaxHeader) continue;
        expected = nl == std::string::npos ? std::nullopt : parse_length(data, nl);
        if (!expected) return "the answer is not a txpath stats document";
        if (*expected > kMaxDocument)
          return "the answer announces " + std::to_string(*expected) +
                 " bytes, more than the limit of " + std::to_string(kMaxDocument);
        body = nl + 1;
      }
      if (data.size() - body > *expected) return "the answer is longer than it announced";
      continue;
    }
    if (n == 0) break;  // EOF: the server closed after the document
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return "recv: " + errno_text(errno);
    const int left = ms_until(deadline);
    if (left == 0) return "no complete answer within " + std::to_string(timeout.count()) + " ms";
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) < 0 && errno != EINTR) return "poll: " + errno_text(errno);
  }
  if (!expected || data.size() - body != *expected) return "the answer was cut short";
  document = data.substr(body);
  return "";
}

}  // namespace wire

namespace wire {

std::string connect_trusted(const std::string& path, Clock::time_point deadline, Fd& fd,
                            bool* no_server) {
  std::string why_not = connect_path(path, deadline, fd, no_server);
  if (!why_not.empty()) return why_not;
  // Whoever listens there must be us or root: nothing from anyone else is trusted.
  const std::optional<uid_t> server = peer_uid(fd.get());
  if (!trusted_uid(server))
    return "the endpoint is served by " +
           (server ? "uid " + std::to_string(*server) : std::string("an unknown user")) +
           ", neither uid " + std::to_string(::geteuid()) + " nor root: not trusted";
  return "";
}

}  // namespace wire

Fetched fetch_stats(const std::string& path, std::chrono::milliseconds timeout) {
  Fetched r;
  try {
    const Clock::time_point deadline = Clock::now() + timeout;  // connect and read together
    Fd fd;
    r.why_not = connect_trusted(path, deadline, fd, &r.no_server);
    if (!r.why_not.empty()) return r;
    r.why_not = read_document(fd.get(), deadline, timeout, r.document);
  } catch (...) {
    r.document.reset();
    r.why_not = "out of memory";
  }
  return r;
}

}  // namespace txpath::tc
