// SPDX-License-Identifier: MIT
// Output files that are complete or absent, never written through someone else's symlink.
//
// An OutputFile is written as a temporary file beside its target (".NAME.XXXXXX", created with
// O_EXCL, so it never follows a link) and renamed over the target by commit(), after an fsync of
// the data and before an fsync of the directory: a reader sees the old file or the whole new one,
// and a crash, a full disk or a signal at any point leaves the old file byte-for-byte intact (at
// worst a stray temporary file beside it). A replaced file keeps its mode (and, when the caller
// may, its owner); a new one gets 0666 less the umask, as a plain open() would.
//
// Targets that are not regular files (a character device such as /dev/null or /dev/full, a FIFO,
// a pipe from the shell) are written in place instead: they cannot be replaced, only written,
// and every write and the final close are still checked. They are opened without blocking: a
// FIFO that nobody has open for reading is refused at once ("a FIFO that nobody reads").
//
// Symlinks: a link that the caller owns is followed (to its final target). A link owned by
// another user is refused, unless it sits in a directory that is not sticky-and-world-writable or
// is owned by that directory's owner: the rule of the kernel's fs.protected_symlinks
// (Documentation/admin-guide/sysctl/fs.rst), applied whatever the sysctl says.
//
// Errors are FileError: one line naming the file (escaped) and the cause.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace txpath {

// A file could not be read, written, replaced or opened safely. what() is one line.
class FileError : public std::runtime_error {
 public:
  explicit FileError(const std::string& what) : std::runtime_error(what) {}
};

// Throws FileError if `path` is a symlink that fs.protected_symlinks would not let the caller
// follow (owned by another user, in a sticky world-writable directory not owned by the link's
// owner). `what` names the file's role in the message ("--json", "configuration").
void refuse_foreign_symlink(const std::string& path, std::string_view what);

class OutputFile {
 public:
  // Opens the temporary file (or the non-regular target). Throws FileError.
  OutputFile(std::string path, std::string_view what);
  // Not committed: the temporary file is removed; the target is untouched.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Appends bytes; throws FileError on a failed write (ENOSPC, EIO ...).
  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  // fsync, rename over the target, fsync the directory (regular files); close (others).
  // Throws FileError; after a failure the target is untouched and the temporary file is gone.
  void commit();

  const std::string& path() const noexcept { return path_; }

 private:
  [[noreturn]] void fail(std::string_view step, int err);
  void open_in_place();
  void discard() noexcept;

  std::string path_;    // the target as given (messages)
  std::string target_;  // the target after following an allowed symlink
  std::string temp_;    // empty: writing in place (not a regular file)
  std::string what_;
  int fd_ = -1;
  bool keep_mode_ = false;
  mode_t mode_ = 0;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

// The whole of `contents` as the new `path`, through an OutputFile.
void replace_file(const std::string& path, std::string_view contents, std::string_view what);

}  // namespace txpath
