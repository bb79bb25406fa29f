// SPDX-License-Identifier: MIT
// A listening unix socket at a path, the eventfd that stops it and the thread that serves both:
// what the stats endpoint (stats_socket.cpp) and the control endpoint (control_socket.cpp) share.
// Private to src/tc/.
//
// The constructor binds (through the caller's `bind_at`, which decides what to do with a file
// already at the path) and listens; start() runs the serving function on the endpoint's own
// thread, which alone touches the listening socket from then on. The serving function polls
// stop_fd() beside listen_fd() and returns once stop_fd() is readable. The destructor signals the
// eventfd, joins the thread, closes both descriptors and removes the socket file if it is still
// the one bound (someone may have replaced it meanwhile). A constructor or start() that throws
// leaves no socket file behind.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "tc/socket_io.hpp"

namespace txpath::tc::wire {

class UnixEndpoint {
 public:
  // Binds fd at the address; throws ConfigError (one line) if it cannot.
  using Bind = std::function<void(int fd, const sockaddr_un& addr, socklen_t len)>;

  // `what` names the endpoint in errors ("stats endpoint"); `addr`/`len`: `path`'s address
  // (path_address()). Throws ConfigError.
  UnixEndpoint(std::string path, std::string_view what, const sockaddr_un& addr, socklen_t len,
               int backlog, const Bind& bind_at);
  ~UnixEndpoint();
  UnixEndpoint(const UnixEndpoint&) = delete;
  UnixEndpoint& operator=(const UnixEndpoint&) = delete;

  // Runs `serve` on the endpoint's thread (once). Throws ConfigError if the thread cannot start.
  void start(std::function<void()> serve);

  const std::string& path() const noexcept { return path_; }
  int listen_fd() const noexcept { return listen_.get(); }
  int stop_fd() const noexcept { return stop_.get(); }

 private:
  // Removes the socket file if it is still the one we bound.
  void remove_socket_file() const noexcept;

  const std::string path_;
  const std::string what_;
  Fd listen_;
  Fd stop_;  // eventfd: written once by the destructor
  dev_t dev_ = 0;
  ino_t ino_ = 0;  // the socket file we bound
  std::thread thread_;
};

}  // namespace txpath::tc::wire
