// SPDX-License-Identifier: MIT
// `udp:HOST:PORT[,batch=N]`: a connected, non-blocking UDP socket. The frames' UDP payloads go
// out through the kernel's UDP/IP stack (and whatever qdisc the route's interface has); the
// Ethernet, IPv4 and UDP headers txpath built are not sent (the kernel writes its own).
//
// Batching: xmit() with `more` only stages the packet (an iovec pointing into its buffer); the
// doorbell is one sendmmsg() for everything staged, up to `batch` messages. The stage is the
// device's ring: when it is full and the kernel refuses (EAGAIN: socket buffer full; ENOBUFS:
// the qdisc dropped it, reported because IP_RECVERR is on; ECONNREFUSED: an ICMP error was
// pending), the queue is stopped and xmit() answers busy; poll() retries the send and wakes the
// queue once the stage drains. A message the kernel rejects for good (EMSGSIZE, EHOSTUNREACH,
// ...) is freed and counted in tx_errors. Buffers return to their pools as soon as sendmmsg()
// has taken them (the kernel copied the data).
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "device/netif.hpp"
#include "device/configured_device.hpp"
#include "device/real_devices.hpp"
#include "txpath/device.hpp"

namespace txpath {

class UdpDevice final : public ConfiguredDevice<UdpConfig> {
 public:
  // Throws DeviceError (one line) if HOST does not resolve or the socket cannot be connected.
  explicit UdpDevice(const UdpConfig& config);
  ~UdpDevice() override;

  XmitResult xmit(Packet* p, bool more) noexcept override;
  void poll() noexcept override;
  void address_frames(FrameSpec& spec) const override;

  // The connected peer, for a kernel-path comparison that sends to the same place.
  const sockaddr_storage& remote() const noexcept { return remote_; }
  socklen_t remote_len() const noexcept { return remote_len_; }
  // The connected socket this queue sends on (for tests and diagnostics).
  int socket_fd() const noexcept { return fd_.get(); }

 private:
  // Sends what is staged; returns false if the kernel refused for now (retry later).
  bool flush() noexcept;
  void publish_hints() noexcept;

  netif::Fd fd_;
  uint32_t local_ip_ = 0, remote_ip_ = 0;  // host order; 0 for IPv6
  sockaddr_storage remote_{};
  socklen_t remote_len_ = 0;

  // Guarded by tx_lock. staged_[first_, count_) wait for sendmmsg.
  std::vector<Packet*> staged_;
  std::vector<mmsghdr> msgs_;
  std::vector<iovec> iov_;
  uint32_t first_ = 0, count_ = 0;
  bool retry_ = false;        // the kernel refused the last flush
  bool drv_stopped_ = false;
  uint64_t last_try_ns_ = 0;
};

}  // namespace txpath
