// SPDX-License-Identifier: MIT
// See core/file.hpp.
#include "core/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/text.hpp"

namespace txpath {

namespace {

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string message(std::string_view what, const std::string& path, std::string_view step, int err) {
  std::string m(what);
  m += ' ';
  m += quoted(path);
  m += ": ";
  if (!step.empty()) {
    m += step;
    m += ": ";
  }
  m += std::strerror(err);
  return m;
}

// The process umask, read without changing it (umask(2) would race with other threads).
mode_t current_umask() {
  FILE* f = std::fopen("/proc/self/status", "re");
  mode_t mask = 022;
  if (!f) return mask;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    unsigned int v = 0;
    if (std::sscanf(line, "Umask: %o", &v) == 1) {
      mask = static_cast<mode_t>(v & 0777);
      break;
    }
  }
  std::fclose(f);
  return mask;
}

// Follows `path` through symlinks (at most 40, as the kernel), checking each link against
// refuse_foreign_symlink; returns the last name that is not a symlink, or the last link whose
// target cannot be named (a /proc magic link such as "pipe:[123]", a dangling link).
std::string follow_links(const std::string& path, std::string_view what) {
  std::string cur = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(cur.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
    refuse_foreign_symlink(cur, what);
    std::vector<char> buf(PATH_MAX + 1);
    const ssize_t n = ::readlink(cur.c_str(), buf.data(), buf.size() - 1);
    if (n <= 0) return cur;
    std::string next(buf.data(), static_cast<std::size_t>(n));
    if (next[0] != '/') next = dir_of(cur) + "/" + next;
    struct stat nst;
    if (::lstat(next.c_str(), &nst) != 0) return cur;  // dangling, or not a path at all
    cur = std::move(next);
  }
  throw FileError(message(what, path, "", ELOOP));
}

}  // namespace

void refuse_foreign_symlink(const std::string& path, std::string_view what) {
  struct stat link;
  if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return;
  if (link.st_uid == ::geteuid()) return;
  struct stat dir;
  if (::stat(dir_of(path).c_str(), &dir) != 0) return;  // then the open fails on its own
  const bool sticky_world_writable = (dir.st_mode & S_ISVTX) && (dir.st_mode & S_IWOTH);
  if (!sticky_world_writable || link.st_uid == dir.st_uid) return;
  throw FileError(std::string(what) + " " + quoted(path) + ": a symlink owned by another user (uid " +
                  std::to_string(link.st_uid) +
                  ") in a sticky world-writable directory: not followed");
}

OutputFile::OutputFile(std::string path, std::string_view what)
    : path_(std::move(path)), what_(what) {
  if (path_.empty()) throw FileError(std::string(what) + ": the file name is empty");
  target_ = follow_links(path_, what_);
  struct stat st;
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail("", EISDIR);
  if (exists && !S_ISREG(st.st_mode)) {
    open_in_place();
    return;
  }
  if (exists) {
    keep_mode_ = true;
    mode_ = st.st_mode & 07777;
    uid_ = st.st_uid;
    gid_ = st.st_gid;
  }
  // ".NAME.XXXXXX" beside the target; NAME cut so the whole stays within NAME_MAX.
  std::string base = base_of(target_);
  if (base.size() > 200) base.resize(200);
  std::string tmpl = dir_of(target_) + "/." + base + ".XXXXXX";
  fd_ = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd_ < 0) fail("create a temporary file beside it", errno);
  temp_ = std::move(tmpl);
}

// A device, FIFO or pipe: written in place (O_NOCTTY: a terminal never becomes ours). Opened
// O_NONBLOCK, so that a FIFO nobody reads is refused at once (ENXIO) instead of blocking in
// open() for ever (signals included: the bench's handlers restart calls); the writes then block
// as on any pipe. Whatever the name is by now must not be a regular file or a directory: a
// target replaced since the stat() above is refused rather than written in place.
void OutputFile::open_in_place() {
  fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd_ < 0 && errno == ENXIO) {
    discard();
    throw FileError(what_ + " " + quoted(path_) + ": a FIFO that nobody reads");
  }
  if (fd_ < 0) fail("open", errno);
  struct stat st;
  if (::fstat(fd_, &st) != 0) fail("fstat", errno);
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) fail("open", EEXIST);
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) fail("fcntl", errno);
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

void OutputFile::fail(std::string_view step, int err) {
  discard();
  throw FileError(message(what_, path_, step, err));
}

void OutputFile::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) throw FileError(message(what_, path_, "write", EBADF));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write", errno);
    if (n == 0) fail("write", EIO);
    done += static_cast<std::size_t>(n);
  }
}

void OutputFile::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void OutputFile::commit() {
  if (fd_ < 0) throw FileError(message(what_, path_, "commit", EBADF));
  if (temp_.empty()) {  // written in place
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0 && errno != EINTR) fail("close", errno);
    return;
  }
  const mode_t mode = keep_mode_ ? mode_ : (0666 & ~current_umask());
  if (::fchmod(fd_, mode) != 0) fail("chmod", errno);
  // The old owner is kept where the caller may give it (root); otherwise the file is the caller's.
  if (keep_mode_ && ::geteuid() == 0) (void)::fchown(fd_, uid_, gid_);
  if (::fsync(fd_) != 0) fail("fsync", errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && errno != EINTR) fail("close", errno);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail("rename", errno);
  temp_.clear();  // it is the target now
  // The rename is durable once the directory is synced; a directory that cannot be synced
  // (EINVAL on some filesystems) does not make the new file less complete.
  const int dir = ::open(dir_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    const int rc = ::fsync(dir);
    const int err = errno;
    ::close(dir);
    if (rc != 0 && err != EINVAL) throw FileError(message(what_, path_, "fsync of its directory", err));
  }
}

void replace_file(const std::string& path, std::string_view contents, std::string_view what) {
  OutputFile out(path, what);
  out.write(contents);
  out.commit();
}

}  // namespace txpath
