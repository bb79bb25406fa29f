// SPDX-License-Identifier: MIT
// The unix-socket pieces the stats endpoint (stats_socket.cpp) and the control endpoint
// (control_socket.cpp) share: addresses, peer credentials, connecting, and the wire format
// "<decimal length>\n<document>" read to end of file. Private to src/tc/.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>

namespace txpath::tc::wire {

using Clock = std::chrono::steady_clock;

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

// The filesystem address of `path`. Returns the address length, or 0 if the path does not fit.
socklen_t path_address(const std::string& path, sockaddr_un& addr) noexcept;
std::string errno_text(int err);
// Milliseconds left until `deadline` (0 once past), for poll().
int ms_until(Clock::time_point deadline) noexcept;
// The effective uid of the peer of a connected unix socket, if the kernel says.
std::optional<uid_t> peer_uid(int fd) noexcept;
// Our own effective uid or root: the only peers either end deals with.
bool trusted_uid(std::optional<uid_t> uid) noexcept;
// Connects a new non-blocking unix socket `fd` to `path` before `deadline`, whoever serves it.
// Returns "" or why not; sets *no_server when nothing serves the path (no file, or nobody
// listens).
std::string connect_path(const std::string& path, Clock::time_point deadline, Fd& fd, bool* no_server);
// Connects a new non-blocking socket `fd` to the endpoint at `path` before `deadline` and checks
// that its server runs as our effective uid or root. Returns "" or why not (*no_server as
// connect_by()).
std::string connect_trusted(const std::string& path, Clock::time_point deadline, Fd& fd,
                            bool* no_server);
// Reads one "<length>\n<document>" from `fd` up to end of file, before `deadline`, into
// `document`. Returns "" or why not; refuses more than kMaxDocument (stats_socket.hpp).
std::string read_document(int fd, Clock::time_point deadline, std::chrono::milliseconds timeout,
                          std::optional<std::string>& document);

}  // namespace txpath::tc::wire
