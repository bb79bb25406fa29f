// SPDX-License-Identifier: MIT
// net/interface_counters.hpp: an interface's kernel counters from sysfs.
//
// Origin: txpath issue 14 (the bench checks delivery on the ifb null NIC against the kernel's
// own count). From Documentation/ABI/testing/sysfs-class-net-statistics: one decimal number per
// file. Invariants: the interface and counter names are checked before any path is built (no
// '/' or "..": nothing outside the interface's statistics directory is read); a read is bounded
// (32 bytes). No atomics.
#include "net/interface_counters.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>

#include "core/text.hpp"
#include "net/netns.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

[[noreturn]] void counter_error(std::string_view ifname, const std::string& why) {
  throw DeviceError("interface counters of " + quoted(ifname) + ": " + why);
}

bool valid_counter_name(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  return true;
}

}  // namespace

uint64_t read_interface_counter(std::string_view ifname, std::string_view counter) {
  const std::string name(ifname);
  if (!net::valid_ifname(name)) counter_error(ifname, "not an interface name");
  if (!valid_counter_name(counter)) counter_error(ifname, "no counter " + quoted(counter));
  const std::string dir = "/sys/class/net/" + name;
  const std::string path = dir + "/statistics/" + std::string(counter);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT && ::access(dir.c_str(), F_OK) != 0) counter_error(ifname, "no such interface");
    if (err == ENOENT) counter_error(ifname, "no counter " + quoted(counter));
    counter_error(ifname, "cannot open " + path + ": " + std::strerror(err));
  }
  char buf[32];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) < 0 && errno == EINTR) {
  }
  const int err = errno;
  ::close(fd);
  if (n < 0) counter_error(ifname, "cannot read " + path + ": " + std::strerror(err));
  std::size_t len = static_cast<std::size_t>(n);
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) --len;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(buf, buf + len, value);
  if (len == 0 || ec != std::errc() || end != buf + len)
    counter_error(ifname, path + " holds " + quoted(std::string_view(buf, len)) + ", not a number");
  return value;
}

InterfaceCounters read_interface_counters(std::string_view ifname) {
  InterfaceCounters c;
  c.rx_packets = read_interface_counter(ifname, "rx_packets");
  c.rx_bytes = read_interface_counter(ifname, "rx_bytes");
  c.rx_dropped = read_interface_counter(ifname, "rx_dropped");
  c.rx_errors = read_interface_counter(ifname, "rx_errors");
  c.tx_packets = read_interface_counter(ifname, "tx_packets");
  c.tx_bytes = read_interface_counter(ifname, "tx_bytes");
  c.tx_dropped = read_interface_counter(ifname, "tx_dropped");
  c.tx_errors = read_interface_counter(ifname, "tx_errors");
  return c;
}

}  // namespace txpath
