// SPDX-License-Identifier: MIT
// `txpath tc`: tc's command line over a configuration file.
//
//   txpath tc [--config FILE] [-s] [-d] [-j] [-p] [-force] { -batch FILE | OBJECT COMMAND ... }
//
// The file (--config, else $TXPATH_TC, else ./txpath.tc) is read, the command applied and, if it
// changed anything, replaced by a new file renamed over it — all under an exclusive flock() on
// the file, so concurrent invocations serialise (LockedConfig). Show commands read without a lock.
// A configuration that is not a regular file, a foreign symlink (fs.protected_symlinks' rule) or
// a file over 64 MiB is refused with one line; a failed write of the file exits 1 and leaves the
// old file as it was. -batch runs one command per line and stops at the first failure (with
// -force it goes on); the changes of the lines that succeeded are kept, as tc's are.
// Errors print one line, tc's (its own line, or "Error: " and the kernel's message), and give tc's
// exit status (1 parse, 2 rejected, 255 args; 1 for a failing -batch line, as tc's batch mode).
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/file.hpp"
#include "core/text.hpp"
#include "tc/apply.hpp"
#include "tc/internal.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/stats_socket.hpp"
#include "tc/tc_error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

namespace {

[[noreturn]] void fail(const std::string& path, std::string_view step, int err) {
  std::string m = "configuration " + quoted(path) + ": ";
  if (!step.empty()) m.append(step).append(": ");
  throw ConfigError(m + std::strerror(err));
}

// Refuses every symlink on the way to the file that fs.protected_symlinks would not follow
// (txpath::refuse_foreign_symlink, whatever the sysctl says), as a ConfigError.
void refuse_foreign_links(const std::string& path) {
  std::string cur = path;
  try {
    for (int hop = 0; hop < 40; ++hop) {  // the kernel's limit; past it open() says ELOOP
      refuse_foreign_symlink(cur, "configuration");
      struct stat st;
      if (::lstat(cur.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return;
      std::vector<char> buf(PATH_MAX + 1);
      const ssize_t n = ::readlink(cur.c_str(), buf.data(), buf.size() - 1);
      if (n <= 0) return;
      std::string next(buf.data(), static_cast<std::size_t>(n));
      if (next[0] != '/') {
        const std::size_t slash = cur.rfind('/');
        if (slash != std::string::npos) next = cur.substr(0, slash + 1) + next;
      }
      cur = std::move(next);
    }
  } catch (const FileError& e) {
    throw ConfigError(e.what());
  }
}

// Refuses what is not a regular file (a FIFO, /dev/zero, a directory), and a file over
// kMaxConfigBytes.
void check_config_file(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) fail(path, "fstat", errno);
  if (!S_ISREG(st.st_mode)) throw ConfigError("configuration " + quoted(path) + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes)
    throw ConfigRejected("configuration " + quoted(path) + ": " + std::to_string(st.st_size) +
                         " bytes, larger than the limit of 64 MiB");
}

// Reads an open configuration file (checked by check_config_file): at most kMaxConfigBytes.
std::string read_config(int fd, const std::string& path) {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "read", errno);
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxConfigBytes)  // grew after the fstat
      throw ConfigRejected("configuration " + quoted(path) + ": larger than the limit of 64 MiB");
  }
  return text;
}

// Opens a configuration file for reading: never blocks (O_NONBLOCK: a FIFO opens at once and is
// then refused) and never becomes the controlling terminal. -1 if there is no such file.
int open_config(const std::string& path) {
  refuse_foreign_links(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT) fail(path, "", errno);
  return fd;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.release();
    }
    return *this;
  }
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// The configuration file, locked for a read-modify-write by `txpath tc`.
//
// Writers never change the file in place: replace() writes a new file beside it and renames it
// over the old one (OutputFile: fsync, rename, directory fsync), so a reader's open() sees one
// complete version, old or new, and readers take no lock; a full disk, a failed write or a kill
// at any point leaves the old file as it was. Writers serialise on an exclusive flock() of the
// file itself. Since a rename replaces the inode, a writer that waited for the lock may hold it
// on a file that is no longer there: after flock() the open file is compared (device and inode)
// with what the path names now, and if it was replaced meanwhile the lock is dropped and taken
// again on the new file. Only the holder of the lock on the current file replaces it, and it
// keeps the lock until the new file is in place. (A separate lock file would have done as well,
// but would leave a second file beside every configuration.)
class LockedConfig {
 public:
  explicit LockedConfig(std::string path) : path_(std::move(path)) {
    for (int attempt = 0;; ++attempt) {
      if (attempt == 10000) throw ConfigError("configuration " + quoted(path_) + ": it keeps being replaced");
      if (lock_current()) return;
    }
  }
  ~LockedConfig() {
    struct stat now;
    // A file made only to hold the lock, by a command that then changed nothing, goes again.
    if (created_ && !replaced_ && ::stat(path_.c_str(), &now) == 0 && now.st_ino == ino_ &&
        now.st_dev == dev_ && now.st_size == 0)
      ::unlink(path_.c_str());
    ::close(fd_);
  }
  LockedConfig(const LockedConfig&) = delete;
  LockedConfig& operator=(const LockedConfig&) = delete;

  std::string read() const { return read_config(fd_, path_); }
  uid_t owner() const noexcept { return owner_; }

  // The new contents, through an OutputFile; the lock is held until destruction.
  void replace(std::string_view text) {
    replace_file(path_, text, "configuration");  // FileError: one line, exit status 1
    replaced_ = true;
  }

 private:
  // Opens (or creates, never through a symlink) and locks the file the path names; false if it
  // was replaced before the lock was granted.
  bool lock_current() {
    refuse_foreign_links(path_);
    // O_RDWR: a file the caller may not write is refused as before; O_NONBLOCK: a FIFO does not
    // block the open, and is refused below.
    Fd fd(::open(path_.c_str(), O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    bool created = false;
    if (fd.get() < 0 && errno == ENOENT) {
      Fd made(::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
      struct stat link;
      if (made.get() < 0 && errno == EEXIST && ::lstat(path_.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
        throw ConfigError("configuration " + quoted(path_) + ": a symlink to a missing file: not followed");
      if (made.get() < 0 && errno == EEXIST) return false;  // another writer made it meanwhile
      if (made.get() < 0) fail(path_, "create", errno);
      created = true;
      fd = Fd(made.release());
    }
    if (fd.get() < 0) fail(path_, "", errno);
    check_config_file(fd.get(), path_);
    while (::flock(fd.get(), LOCK_EX) != 0)
      if (errno != EINTR) fail(path_, "flock", errno);
    struct stat mine, now;
    if (::fstat(fd.get(), &mine) != 0) fail(path_, "fstat", errno);
    if (::stat(path_.c_str(), &now) != 0 || now.st_ino != mine.st_ino || now.st_dev != mine.st_dev)
      return false;  // replaced (or removed) while we waited: lock the file there now
    fd_ = fd.release();
    owner_ = mine.st_uid;
    created_ = created;
    ino_ = mine.st_ino;
    dev_ = mine.st_dev;
    return true;
  }

  std::string path_;
  int fd_ = -1;
  bool created_ = false;
  bool replaced_ = false;
  ino_t ino_ = 0;
  dev_t dev_ = 0;
  uid_t owner_ = 0;
};

// SIGINT, SIGTERM, SIGHUP and SIGQUIT held back while a running process is told a change and the
// file is written after it: a ^C then ends the command once the file says what the process runs
// (at most the process's bound later, control_socket.hpp), never between the two.
class DeferStopSignals {
 public:
  DeferStopSignals() {
    sigset_t stop;
    sigemptyset(&stop);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&stop, sig);
    ::pthread_sigmask(SIG_BLOCK, &stop, &old_);
  }
  ~DeferStopSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  DeferStopSignals(const DeferStopSignals&) = delete;
  DeferStopSignals& operator=(const DeferStopSignals&) = delete;

 private:
  sigset_t old_;
};

// Tells the running processes (apply_live) and then writes the file: exactly what they took.
void change_live_and_file(const std::string& config_path, LockedConfig& file, const Config& before,
                          const Config& after) {
  const DeferStopSignals hold;
  apply_live(config_path, before, after, file.owner(),
             [&file](const Config& applied) { file.replace(applied.serialize()); });
  file.replace(after.serialize());
}

// The text of a -batch file ("-": standard input), at most kMaxConfigBytes.
std::string read_batch(const std::string& name) {
  std::ifstream file;
  if (name != "-") {
    file.open(name);
    if (!file) throw ConfigError("Cannot open file " + quoted(name) + " for reading: " + std::strerror(errno));
  }
  std::istream& in = name == "-" ? std::cin : file;
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes)
      throw ConfigRejected("batch file " + quoted(name) + ": larger than the limit of 64 MiB");
  }
  return text;
}

const char* kUsage =
    "Usage: txpath tc [--config FILE] [-s] [-d] [-j] [-p] [-force] OBJECT COMMAND [ARGS]\n"
    "       txpath tc [--config FILE] [-force] -batch FILE\n"
    "where  OBJECT := { qdisc | class | link }\n"
    "       qdisc { add | change | replace | del } dev NAME { root | parent CLASSID } [ handle ID ] KIND [ OPTIONS ]\n"
    "       qdisc show [ dev NAME ]\n"
    "       class { add | change | replace | del } dev NAME parent ID classid ID KIND [ OPTIONS ]\n"
    "       class show dev NAME\n"
    "       link { add | set | del } dev NAME [ txqueuelen N ] [ mtu N ] [ numtxqueues N ];  link show [ dev NAME ]\n"
    "       KIND := { pfifo_fast | pfifo | bfifo | pfifo_head_drop | prio | tbf | fq_codel | codel | red | htb | fq | mq | mqprio }\n"
    "The configuration file is --config FILE, else $TXPATH_TC, else ./txpath.tc.\n";

}  // namespace

Config Config::load(const std::string& path) {
  if (path.empty()) throw ConfigError("the configuration file name is empty");
  const Fd fd(open_config(path));
  if (fd.get() < 0) return Config{};  // no file: an empty configuration
  check_config_file(fd.get(), path);
  return Config::parse(read_config(fd.get(), path), path);
}

ConfigReadLock::ConfigReadLock(const std::string& path) {
  const auto give_up = std::chrono::steady_clock::now() + kReadLockWait;
  for (int attempt = 0; attempt < 10000; ++attempt) {
    Fd fd(open_config(path));
    if (fd.get() < 0) return;  // no file: nothing to hold (the tree is the empty configuration's)
    check_config_file(fd.get(), path);
    int rc;
    while ((rc = ::flock(fd.get(), LOCK_SH | LOCK_NB)) != 0 && (errno == EINTR || errno == EWOULDBLOCK)) {
      if (std::chrono::steady_clock::now() >= give_up) return;  // a writer that never lets go
      ::usleep(1000);
    }
    if (rc != 0) fail(path, "flock", errno);
    struct stat mine, now;
    if (::fstat(fd.get(), &mine) == 0 && ::stat(path.c_str(), &now) == 0 && now.st_ino == mine.st_ino &&
        now.st_dev == mine.st_dev) {
      fd_ = fd.release();
      return;
    }
    // replaced while we waited (a writer renamed its new file over it): lock the file there now
  }
}

ConfigReadLock::~ConfigReadLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string default_config_path() {
  const char* env = std::getenv("TXPATH_TC");
  return env && *env ? env : "txpath.tc";
}

int run(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  Config::ShowOptions show;
  std::string config_path = default_config_path();
  std::optional<std::string> batch;
  bool force = false;
  std::size_t i = 0;
  try {
    for (; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a.empty() || a[0] != '-') break;
      if (a == "-s" || a == "-stats" || a == "-statistics") show.stats = true;
      else if (a == "-d" || a == "-details") show.details = true;
      else if (a == "-j" || a == "-json") show.json = true;
      else if (a == "-p" || a == "-pretty") show.pretty = true;
      else if (a == "-force" || a == "-f") force = true;
      else if (a == "-b" || a == "-batch") {
        if (i + 1 >= args.size()) throw TcArgError("-batch needs a file name");
        batch = args[++i];
      } else if (a == "--config" || a == "-config" || a == "-c") {
        if (i + 1 >= args.size()) throw TcArgError("--config needs a file name");
        config_path = args[++i];
      } else if (a.rfind("--config=", 0) == 0) {
        config_path = a.substr(9);
      } else if (a == "-h" || a == "-help" || a == "--help") {
        out << kUsage;
        return 0;
      } else {
        throw TcArgLine("Option " + quoted(a) + " is unknown, try \"tc -help\".");  // tc's line
      }
    }
    if (config_path.empty()) throw TcArgError("the configuration file name is empty");
    const std::span<const std::string> command = args.subspan(i);
    if (!batch && command.empty()) {
      err << kUsage;
      return 255;
    }
    if (!batch && command[0] == "help") {
      out << kUsage;
      return 0;
    }
    show.fetch_live = [&config_path](const std::string& dev) { return fetch_live(config_path, dev); };
    show.note = [&err](const std::string& line) { err << "txpath tc: " << line << "\n"; };
    show.warn = [&err](const std::string& line) { err << line << "\n"; };

    const bool is_show = !batch && is_read_only_command(command);
    if (is_show) {
      Config cfg = Config::load(config_path);
      cfg.execute(command, out, show);
      return 0;
    }
    // The batch is read before the lock is taken: a slow pipe does not hold other writers up.
    const std::string text = batch ? read_batch(*batch) : std::string();
    LockedConfig file(config_path);
    Config cfg = Config::parse(file.read(), config_path);
    const Config before = cfg;  // a running process gets the change first (apply.cpp)
    if (!batch) {
      if (cfg.execute(command, out, show)) change_live_and_file(config_path, file, before, cfg);
      return 0;
    }
    bool changed = false;
    const int status = run_batch(cfg, text, *batch, force, show, out, err, changed);
    if (changed) change_live_and_file(config_path, file, before, cfg);
    return status;
  } catch (const ConfigError& e) {
    err << error_line(e) << "\n";
    return exit_status(e);
  } catch (const std::exception& e) {
    err << "Error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace txpath::tc
