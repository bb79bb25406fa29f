// SPDX-License-Identifier: MIT
// See control_socket.hpp. The listening socket, its thread and their teardown are a
// UnixEndpoint's (unix_endpoint.hpp).
#include "tc/control_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>

#include "core/text.hpp"
#include "tc/socket_io.hpp"
#include "tc/stats_socket.hpp"
#include "tc/unix_endpoint.hpp"
#include "txpath/error.hpp"

namespace txpath::tc {

using namespace wire;

namespace {

constexpr const char* kSuffix = ".ctl";
constexpr std::size_t kSuffixLen = 4;

// Writes all of `data` to the non-blocking socket `fd` before `deadline`. False if the peer went
// away or was too slow.
bool write_all(int fd, const std::string& data, Clock::time_point deadline) noexcept {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const int left = ms_until(deadline);
    if (left == 0) return false;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, left) < 0 && errno != EINTR) return false;
  }
  return true;
}

std::string framed(const std::string& doc) { return std::to_string(doc.size()) + '\n' + doc; }

}  // namespace

std::string control_endpoint(const std::string& config_path, const std::string& dev, bool create) {
  const std::string dir = stats_directory(create);
  // Room for the suffix is taken from the readable tail, as the stats endpoint's name is cut.
  return dir + "/" + stats_endpoint_name(config_path, dev, dir.size() + kSuffixLen) + kSuffix;
}

namespace {

sockaddr_un control_address(const std::string& path, socklen_t& len) {
  sockaddr_un addr;
  len = path_address(path, addr);
  if (len == 0) throw ConfigError("control endpoint path " + txpath::quoted(path) + " does not fit a unix socket address");
  return addr;
}

// The caller holds the endpoint's lock: a socket file here is a dead server's.
void bind_replacing_any(const std::string& path, int fd, const sockaddr_un& addr, socklen_t len) {
  struct stat old{};
  if (::lstat(path.c_str(), &old) == 0 && S_ISSOCK(old.st_mode)) ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0)
    throw ConfigError("control endpoint " + txpath::quoted(path) + ": bind: " + errno_text(errno));
}

UnixEndpoint control_listener(const std::string& path) {
  socklen_t len = 0;
  const sockaddr_un addr = control_address(path, len);
  return UnixEndpoint(path, "control endpoint", addr, len, 16,
                      [&](int fd, const sockaddr_un& a, socklen_t l) { bind_replacing_any(path, fd, a, l); });
}

}  // namespace

ControlServer::ControlServer(std::string path, std::function<std::string(const std::string&)> handle)
    : handle_(std::move(handle)), endpoint_(control_listener(path)) {
  endpoint_.start([this] { serve(); });
}

void ControlServer::serve() noexcept {
  for (;;) {
    pollfd fds[2] = {{endpoint_.stop_fd(), POLLIN, 0}, {endpoint_.listen_fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    if (!(fds[1].revents & POLLIN)) continue;
    Fd fd(::accept4(endpoint_.listen_fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (fd.get() < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) ::usleep(10000);
      continue;
    }
    answer(fd.get());
  }
}

void ControlServer::answer(int fd) noexcept {
  // Another uid is closed on before a byte of its request is read (root may change anyone's).
  if (!trusted_uid(peer_uid(fd))) return;
  try {
    const Clock::time_point deadline = Clock::now() + kRequestTimeout;
    std::optional<std::string> request;
    if (!read_document(fd, deadline, kRequestTimeout, request).empty() || !request) return;
    const std::string reply = handle_(*request);
    (void)write_all(fd, framed(reply), Clock::now() + kRequestTimeout);
  } catch (...) {
    // out of memory, or the handler failed without an answer: closed without one
  }
}

ControlReply control_request(const std::string& path, const std::string& request,
                             std::chrono::milliseconds timeout) {
  ControlReply r;
  try {
    const Clock::time_point deadline = Clock::now() + timeout;
    Fd fd;
    r.why_not = connect_trusted(path, deadline, fd, &r.no_server);  // nothing sent to another uid
    if (!r.why_not.empty()) return r;
    if (request.size() > kMaxDocument) {
      r.why_not = "the request takes " + std::to_string(request.size()) + " bytes, more than the limit of " +
                  std::to_string(kMaxDocument);
      return r;
    }
    if (!write_all(fd.get(), framed(request), deadline)) {
      r.why_not = "the running process did not take the request in time";
      return r;
    }
    ::shutdown(fd.get(), SHUT_WR);
    r.why_not = read_document(fd.get(), deadline, timeout, r.answer);
    if (!r.why_not.empty()) r.answer.reset();
  } catch (...) {
    r.answer.reset();
    r.why_not = "out of memory";
  }
  return r;
}

}  // namespace txpath::tc
