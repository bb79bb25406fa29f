// SPDX-License-Identifier: MIT
// See unix_endpoint.hpp.
#include "tc/unix_endpoint.hpp"

#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <exception>
#include <utility>

#include "core/text.hpp"
#include "txpath/error.hpp"

namespace txpath::tc::wire {

UnixEndpoint::UnixEndpoint(std::string path, std::string_view what, const sockaddr_un& addr,
                           socklen_t len, int backlog, const Bind& bind_at)
    : path_(std::move(path)), what_(what) {
  listen_ = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (listen_.get() < 0) throw ConfigError(what_ + ": socket: " + errno_text(errno));
  bind_at(listen_.get(), addr, len);
  // From here on the socket file is ours: removed again if the rest fails.
  struct stat st{};
  if (::lstat(path_.c_str(), &st) != 0)
    throw ConfigError(what_ + " " + txpath::quoted(path_) + ": lstat: " + errno_text(errno));
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  auto fail = [&](const std::string& why) {
    remove_socket_file();
    return ConfigError(why);
  };
  if (::listen(listen_.get(), backlog) != 0)
    throw fail(what_ + " " + txpath::quoted(path_) + ": listen: " + errno_text(errno));
  stop_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (stop_.get() < 0) throw fail(what_ + ": eventfd: " + errno_text(errno));
}

void UnixEndpoint::start(std::function<void()> serve) {
  try {
    thread_ = std::thread(std::move(serve));
  } catch (const std::exception& e) {
    remove_socket_file();
    ino_ = 0;  // removed: the destructor leaves whatever comes there later alone
    throw ConfigError(what_ + ": cannot start its thread: " + e.what());
  }
}

UnixEndpoint::~UnixEndpoint() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    // An eventfd write of 1 cannot block (the counter is far from its limit) or fail here.
    ssize_t n;
    do {
      n = ::write(stop_.get(), &one, sizeof one);
    } while (n < 0 && errno == EINTR);
    thread_.join();
  }
  listen_.reset();
  stop_.reset();
  remove_socket_file();
}

void UnixEndpoint::remove_socket_file() const noexcept {
  // Only if it is still ours (only our uid can write in the endpoint directory).
  struct stat st{};
  if (ino_ != 0 && ::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    ::unlink(path_.c_str());
}

}  // namespace txpath::tc::wire
