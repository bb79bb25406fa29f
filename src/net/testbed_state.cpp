// SPDX-License-Identifier: MIT
// The testbed's records of what it made (see testbed_state.hpp).
//
// Origin: txpath issue 12. Invariants: a directory or file that another user could have written
// is never trusted; every record is replaced atomically (txpath::replace_file) and then made
// 0600; reading is bounded (kMaxRecordBytes per file, kMaxRecords files). No atomics.
#include "net/testbed_state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/file.hpp"
#include "net/mac.hpp"
#include "net/netns.hpp"
#include "txpath/error.hpp"

namespace txpath::net {

namespace {

constexpr const char* kRunDir = "/run/txpath";
constexpr std::size_t kMaxRecordBytes = 4096;
constexpr std::size_t kMaxRecords = 4096;

// Why a directory or file cannot be trusted, or "" if it can: it must be owned by root and not
// writable by group or others.
std::string distrust(const struct stat& st) {
  if (st.st_uid != 0) return "is owned by uid " + std::to_string(st.st_uid) + ", not root";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("is writable by group or others (mode ") + mode + ")";
  }
  return {};
}

[[noreturn]] void untrusted(const std::string& path, const std::string& why) {
  throw DeviceError("testbed: state " + path + " " + why +
                    ": not trusting it (remove it, or fix it)");
}

// Opens a directory without following a symlink; creates it (0700) first if `create`.
// Returns -1 (errno set) if it is missing or cannot be opened.
int open_dir(const char* path, bool create) {
  if (create && ::mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
  return ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

bool hex_id(const std::string& s) {
  if (s.size() != 16) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool parse_u64(const std::string& s, uint64_t& v) {
  if (s.empty() || s.size() > 20) return false;
  for (const char c : s)
    if (c < '0' || c > '9') return false;
  errno = 0;
  v = std::strtoull(s.c_str(), nullptr, 10);
  return errno == 0;
}

bool parse_kind(const std::string& s, TestbedKind& kind) {
  for (const TestbedKind k : {TestbedKind::veth, TestbedKind::ifb})
    if (s == testbed_kind_name(k)) {
      kind = k;
      return true;
    }
  return false;
}

// A record from the file's text; nullopt if it is not a complete, valid one.
std::optional<TestbedRecord> parse_record(const std::string& text, const std::string& host_if) {
  TestbedRecord r;
  TestbedConfig& c = r.info.config;
  bool have_id = false, have_netns = false, have_host_mac = false, have_peer_mac = false;
  bool known_kind = true;  // a record without kind= is a veth testbed's (before issue 14)
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    const auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    uint64_t n = 0;
    if (key == "id") have_id = hex_id(value), r.info.id = value;
    else if (key == "kind") known_kind = parse_kind(value, c.kind);
    else if (key == "queues" && parse_u64(value, n) && n >= 1 && n <= kMaxTestbedQueues)
      c.queues = static_cast<uint32_t>(n);
    else if (key == "host_if") c.host_if = value;
    else if (key == "peer_if") c.peer_if = value;
    else if (key == "netns") have_netns = true, c.netns = value;
    else if (key == "host_addr") c.host_addr = value;
    else if (key == "peer_addr") c.peer_addr = value;
    else if (key == "qdisc") c.qdisc = value;
    else if (key == "mtu" && parse_u64(value, n) && n <= 65535) c.mtu = static_cast<uint32_t>(n);
    else if (key == "netns_cookie") parse_u64(value, r.netns_cookie);
    else if (key == "netns_dev") parse_u64(value, r.netns_dev);
    else if (key == "netns_ino") parse_u64(value, r.netns_ino);
    else if (key == "host_mac") have_host_mac = parse_mac(value, r.info.host_mac);
    else if (key == "peer_mac") have_peer_mac = parse_mac(value, r.info.peer_mac);
  }
  if (!have_id || !known_kind || c.host_if != host_if) return std::nullopt;
  if (c.kind == TestbedKind::ifb) {
    c.peer_if.clear();
    c.netns.clear();
  } else if (!have_netns || !valid_ifname(c.peer_if) || !valid_netns_name(c.netns)) {
    return std::nullopt;
  }
  r.complete = have_host_mac && have_peer_mac;
  return r;
}

std::string format_record(const TestbedRecord& r) {
  const TestbedConfig& c = r.info.config;
  std::string s = "# txpath testbed: what `txpath testbed up` made; key=value\n";
  s += "id=" + r.info.id + "\n";
  s += std::string("kind=") + testbed_kind_name(c.kind) + "\n";
  s += "host_if=" + c.host_if + "\n";
  if (c.kind == TestbedKind::veth) {
    s += "peer_if=" + c.peer_if + "\n";
    s += "netns=" + c.netns + "\n";
    s += "netns_cookie=" + std::to_string(r.netns_cookie) + "\n";
    s += "netns_dev=" + std::to_string(r.netns_dev) + "\n";
    s += "netns_ino=" + std::to_string(r.netns_ino) + "\n";
  }
  s += "host_addr=" + c.host_addr + "\n";
  s += "peer_addr=" + c.peer_addr + "\n";
  s += "qdisc=" + c.qdisc + "\n";
  s += "mtu=" + std::to_string(c.mtu) + "\n";
  s += "queues=" + std::to_string(c.queues) + "\n";
  if (r.complete) {
    s += "host_mac=" + mac_text(r.info.host_mac) + "\n";
    s += "peer_mac=" + mac_text(r.info.peer_mac) + "\n";
  }
  return s;
}

enum class Trust { absent, trusted, untrusted };

// Reads the record file `name` in the directory dir_fd (no symlink followed). `why` says what
// is wrong when the result is untrusted.
Trust read_file_at(int dir_fd, const std::string& name, std::string& text, std::string& why) {
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return Trust::absent;
    why =
        errno == ELOOP ? "is a symlink" : std::string("cannot be opened: ") + std::strerror(errno);
    return Trust::untrusted;
  }
  struct stat st {};
  Trust result = Trust::trusted;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "is not a regular file";
    result = Trust::untrusted;
  } else if (why = distrust(st); !why.empty()) {
    result = Trust::untrusted;
  } else {
    text.resize(kMaxRecordBytes);
    const ssize_t n = ::read(fd, text.data(), text.size());
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  ::close(fd);
  return result;
}

// Opens a state directory for reading (no creation, no lock); -1 if missing or not trusted.
int open_trusted_dir(const char* path) {
  const int fd = open_dir(path, false);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !distrust(st).empty()) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::string testbed_marker(const std::string& id) { return "txpath-testbed " + id; }

std::string new_testbed_id() {
  uint8_t bytes[8] = {};
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw DeviceError(std::string("testbed: getrandom: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  char hex[17];
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return hex;
}

StateDir::StateDir() {
  for (const char* path : {kRunDir, kTestbedStateDir}) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = open_dir(path, true);
    if (fd_ < 0) {
      const int err = errno;
      if (err == ENOTDIR || err == ELOOP) untrusted(path, "is not a directory (or is a symlink)");
      throw DeviceError(std::string("testbed: cannot create or open ") + path + ": " +
                        std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0)
      untrusted(path, std::string("cannot be read: ") + std::strerror(errno));
    if (const std::string why = distrust(st); !why.empty()) {
      ::close(fd_);
      fd_ = -1;
      untrusted(path, why);
    }
    // Our own directory is root's only (an older txpath made it 0755).
    if (std::string_view(path) == kTestbedStateDir && (st.st_mode & 077) != 0) ::fchmod(fd_, 0700);
  }
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw DeviceError(std::string("testbed: cannot lock ") + kTestbedStateDir + ": " +
                      std::strerror(err));
  }
}

StateDir::~StateDir() {
  if (fd_ >= 0) ::close(fd_);  // also releases the flock
}

std::optional<TestbedRecord> StateDir::read(const std::string& host_if) const {
  std::string text, why;
  switch (read_file_at(fd_, host_if, text, why)) {
    case Trust::absent: return std::nullopt;
    case Trust::untrusted: untrusted(std::string(kTestbedStateDir) + "/" + host_if, why);
    case Trust::trusted: break;
  }
  return parse_record(text, host_if);
}

std::vector<TestbedRecord> StateDir::all() const {
  std::vector<TestbedRecord> out;
  const int dup = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return out;
  DIR* dir = ::fdopendir(dup);
  if (dir == nullptr) {
    ::close(dup);
    return out;
  }
  ::rewinddir(dir);
  std::size_t seen = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || !valid_ifname(name)) continue;  // temporaries, junk
    if (++seen > kMaxRecords) break;
    if (auto r = read(name)) out.push_back(std::move(*r));
  }
  ::closedir(dir);
  return out;
}

void StateDir::write(const TestbedRecord& record) const {
  const std::string path = std::string(kTestbedStateDir) + "/" + record.info.config.host_if;
  try {
    replace_file(path, format_record(record), "testbed state");
  } catch (const FileError& e) {
    throw DeviceError(std::string("testbed: ") + e.what());
  }
  // replace_file makes a new file 0666 less the umask; a record is root's only.
  if (::chmod(path.c_str(), 0600) != 0)
    throw DeviceError("testbed: chmod " + path + ": " + std::strerror(errno));
}

void StateDir::remove(const std::string& host_if) const {
  if (::unlinkat(fd_, host_if.c_str(), 0) != 0 && errno != ENOENT)
    throw DeviceError("testbed: cannot remove the state " + std::string(kTestbedStateDir) + "/" +
                      host_if + ": " + std::strerror(errno));
}

std::optional<TestbedRecord> read_record_unlocked(const std::string& host_if) {
  if (!valid_ifname(host_if)) return std::nullopt;
  const int run_fd = open_trusted_dir(kRunDir);
  if (run_fd < 0) return std::nullopt;
  ::close(run_fd);
  const int fd = open_trusted_dir(kTestbedStateDir);
  if (fd < 0) return std::nullopt;
  std::string text, why;
  const Trust t = read_file_at(fd, host_if, text, why);
  ::close(fd);
  if (t != Trust::trusted) return std::nullopt;
  return parse_record(text, host_if);
}

}  // namespace txpath::net
