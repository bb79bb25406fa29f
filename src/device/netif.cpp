// SPDX-License-Identifier: MIT
#include "device/netif.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <system_error>
#include <cstring>

#include "core/text.hpp"
#include "txpath/error.hpp"

namespace txpath::netif {

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

void fail(std::string_view spec, const std::string& what) {
  // The spec is user text (escaped and cut); `what` quotes its own user text, e.g. an interface
  // name through escape_user_text(); only line breaks are left to fix in it.
  std::string line = what;
  for (char& c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  line = "device '" + escape_user_text(spec) + "': " + line;
  throw DeviceError(line);
}

void fail_errno(std::string_view spec, const std::string& what, int err) {
  std::string msg = what + ": " + std::strerror(err);
  if (err == EPERM || err == EACCES)
    msg += " (needs root or CAP_NET_RAW/CAP_NET_ADMIN)";
  fail(spec, msg);
}

void check_ifname(std::string_view spec, const std::string& ifname) {
  if (ifname.empty()) fail(spec, "missing interface name");
  if (ifname.size() >= IFNAMSIZ)
    fail(spec, "interface name '" + escape_user_text(ifname) + "' is longer than " + std::to_string(IFNAMSIZ - 1) +
                   " characters");
  for (char c : ifname) {
    if (c == '/' || c == ':' || c == ',' || static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      fail(spec, "invalid interface name '" + escape_user_text(ifname) + "'");
  }
}

void address_frames(FrameSpec& spec, const Interface& ifc, const std::string& ifname) {
  (void)ifname;
  spec.src_mac = ifc.mac;
}

Interface lookup(std::string_view spec, const std::string& ifname) {
  check_ifname(spec, ifname);
  Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) fail_errno(spec, "socket(AF_INET)", errno);
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  Interface out;
  if (::ioctl(s.get(), SIOCGIFINDEX, &ifr) < 0) {
    if (errno == ENODEV) fail(spec, "no such interface '" + ifname + "'");
    fail_errno(spec, "interface '" + ifname + "'", errno);
  }
  out.index = ifr.ifr_ifindex;
  if (::ioctl(s.get(), SIOCGIFMTU, &ifr) < 0) fail_errno(spec, "SIOCGIFMTU", errno);
  out.mtu = static_cast<uint32_t>(ifr.ifr_mtu);
  if (::ioctl(s.get(), SIOCGIFHWADDR, &ifr) < 0) fail_errno(spec, "SIOCGIFHWADDR", errno);
  out.arp_type = ifr.ifr_hwaddr.sa_family;
  std::memcpy(out.mac.data(), ifr.ifr_hwaddr.sa_data, 6);
  if (::ioctl(s.get(), SIOCGIFFLAGS, &ifr) < 0) fail_errno(spec, "SIOCGIFFLAGS", errno);
  out.up = (ifr.ifr_flags & IFF_UP) != 0;
  return out;
}

}  // namespace txpath::netif
