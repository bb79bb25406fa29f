// SPDX-License-Identifier: MIT
// Running a function inside a named network namespace (see netns.hpp).
//
// Origin: txpath issue 5, from setns(2) / ip-netns(8); named namespaces made and removed here
// (issue 30) from ip-netns(8), unshare(2), mount(2), mount_namespaces(7) and umount(2). No atomics:
// results cross threads through std::thread::join().
#include "net/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
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

constexpr const char* kNetnsRunDir = "/run/netns";

std::string failure_text(const std::string& what, int errno_value) {
  return what + ": " + std::strerror(errno_value);
}

// /run/netns made (0755) and a shared mount point, so that the names mounted under it propagate
// to mount namespaces that share it (ip-netns(8)). Not yet a mount point (EINVAL): bind it onto
// itself first. Making an already shared mount shared again changes nothing.
std::string share_netns_run_dir() {
  if (::mkdir(kNetnsRunDir, 0755) != 0 && errno != EEXIST)
    return failure_text(std::string("cannot create ") + kNetnsRunDir, errno);
  if (::mount("", kNetnsRunDir, "none", MS_SHARED | MS_REC, nullptr) == 0) return {};
  if (errno != EINVAL)
    return failure_text(std::string("cannot make ") + kNetnsRunDir + " a shared mount", errno);
  if (::mount(kNetnsRunDir, kNetnsRunDir, "none", MS_BIND | MS_REC, nullptr) != 0)
    return failure_text(std::string("cannot bind-mount ") + kNetnsRunDir + " onto itself", errno);
  if (::mount("", kNetnsRunDir, "none", MS_SHARED | MS_REC, nullptr) != 0)
    return failure_text(std::string("cannot make ") + kNetnsRunDir + " a shared mount", errno);
  return {};
}

}  // namespace

std::string create_named_netns(const std::string& netns) {
  if (std::string why = share_netns_run_dir(); !why.empty()) return why;
  const std::string path = std::string(kNetnsRunDir) + "/" + netns;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (fd < 0) return failure_text("cannot create " + path, errno);
  ::close(fd);
  // unshare(CLONE_NEWNET) moves only the calling thread: a thread of its own makes the namespace
  // and pins it by bind-mounting its own /proc/thread-self/ns/net (not /proc/self: that is the
  // main thread's) onto the file; the namespace outlives the thread through that mount.
  std::string why;
  std::thread maker([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      why = failure_text("cannot make a network namespace (unshare)", errno);
      return;
    }
    if (::mount("/proc/thread-self/ns/net", path.c_str(), "none", MS_BIND, nullptr) != 0)
      why = failure_text("cannot bind-mount the new namespace onto " + path, errno);
  });
  maker.join();
  if (!why.empty()) ::unlink(path.c_str());
  return why;
}

std::string delete_named_netns(const std::string& netns) {
  const std::string path = std::string(kNetnsRunDir) + "/" + netns;
  // EINVAL: not a mount point (a bare file a failed make left): still unlinked below. ENOENT:
  // no such name, which the unlink reports.
  if (::umount2(path.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
    return failure_text("cannot unmount " + path, errno);
  if (::unlink(path.c_str()) != 0) return failure_text("cannot remove " + path, errno);
  return {};
}

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
