// SPDX-License-Identifier: MIT
// Running a function inside a named network namespace (see netns.hpp).
//
// Origin: txpath issue 5, from setns(2) / ip-netns(8). No atomics: results cross threads through
// std::thread::join().
#include "net/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace txpath::net {

namespace {

bool valid_name(const std::string& name, std::size_t max_len) {
  if (name.empty() || name.size() > max_len || name == "." || name == "..") return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool valid_ifname(const std::string& name) { return valid_name(name, 15); }
bool valid_netns_name(const std::string& name) { return valid_name(name, 64); }

std::string netns_error_text(int errno_value) {
  switch (errno_value) {
    case ENOENT: return "no such netns";
    case EPERM:
    case EACCES: return "not permitted (needs root or CAP_SYS_ADMIN)";
    default: return std::string("cannot enter the netns: ") + std::strerror(errno_value);
  }
}

void in_netns(const std::string& netns, const std::function<void()>& fn,
              const std::function<void(int errno_value)>& on_error) {
  if (netns.empty()) {
    fn();
    return;
  }
  std::exception_ptr failure;
  std::thread worker([&] {
    try {
      const std::string path = "/run/netns/" + netns;
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        on_error(errno);  // throws; if it does not, fn() is not run
        return;
      }
      const int rc = ::setns(fd, CLONE_NEWNET);
      const int saved = errno;
      ::close(fd);
      if (rc != 0) {
        on_error(saved);
        return;
      }
      fn();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace txpath::net
