// SPDX-License-Identifier: MIT
// Small helpers shared by the devices that open real interfaces and sockets: interface lookup
// (index, MTU, MAC, link type) through ioctl on a throw-away socket, and one-line errors.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/frame.hpp"

namespace txpath::netif {

// A file descriptor closed on destruction (-1: none).
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

struct Interface {
  int index = 0;
  uint32_t mtu = 0;
  uint16_t arp_type = 0;  // ARPHRD_*: 1 Ethernet, 65534 none (TUN)
  std::array<uint8_t, 6> mac{};
  bool up = false;
};

// Throws DeviceError "device 'SPEC': ..." naming the cause (no such interface, name too long).
Interface lookup(std::string_view spec, const std::string& ifname);

// "device 'SPEC': WHAT: strerror(err)" as a DeviceError, with a hint for EPERM/EACCES.
[[noreturn]] void fail_errno(std::string_view spec, const std::string& what, int err);
[[noreturn]] void fail(std::string_view spec, const std::string& what);

// Frames for a link-layer device on `ifname`: the interface's MAC as source (Device::
// address_frames). The peer's MAC and the IPv4 addresses are the caller's: the bench takes them
// from the testbed (address_to_testbed(), src/net/testbed.hpp).
void address_frames(FrameSpec& spec, const Interface& ifc, const std::string& ifname);

// Checks an interface name: 1..15 bytes, no '/', ':' or whitespace (the kernel's dev_valid_name).
void check_ifname(std::string_view spec, const std::string& ifname);

}  // namespace txpath::netif
