// SPDX-License-Identifier: MIT
// `tun:IFNAME`: frames leave through a Linux TUN interface, as IP packets the kernel receives on
// that interface (tcpdump -i IFNAME, an AF_PACKET socket, or routing/forwarding see them).
//
// Origin: txpath's own device, written from the documented TUN/TAP interface
// (Documentation/networking/tuntap.rst: open /dev/net/tun, TUNSETIFF with IFF_TUN | IFF_NO_PI,
// one IP packet per write(2)) and netdevice(7) (SIOCGIFFLAGS/SIOCSIFFLAGS/SIOCGIFMTU).
//
// Setup (constructor, throws DeviceError "device 'tun:NAME': <cause>" on any failure):
//  * opens /dev/net/tun O_RDWR | O_NONBLOCK, TUNSETIFF(IFF_TUN | IFF_NO_PI): attaches to an
//    existing (persistent) tun of that name, or creates a non-persistent one that disappears
//    when the device is destroyed;
//  * `tun:IFNAME,queues=N` (N > 1) makes N devices, one per TX queue, each opened with
//    IFF_MULTI_QUEUE too: the first creates the multi-queue tun (or attaches to a persistent
//    one), the others attach to it as further queues (the kernel allows 256); the kernel receives
//    each descriptor's packets on that descriptor's own queue. queues=1 is the plain open above;
//  * brings the interface up and takes its MTU as the device MTU (max frame = MTU + 14).
//
// Transmit: TUN carries IP packets, so xmit() strips the 14-byte Ethernet header of each frame
// (txpath frames are Ethernet/IPv4/UDP). The kernel has no batched write for a plain tun fd:
// one write per packet; the doorbell is the flush of the pending batch. Packets accepted with
// more == true wait on a pending list (at most kMaxPending; a full list rings the doorbell);
// the doorbell writes them in order, one write(2) each, and frees them at once — the kernel
// copied the data, so completion is immediate (no BQL).
//  * EAGAIN (a tun queue or skb allocation that would block): the unwritten packets stay
//    pending, in order, and the queue is stopped; poll() retries kRetryNs later (next_poll_ns())
//    and wakes the queue once every pending packet is written. xmit() while stopped answers
//    busy.
//  * Any other write error (EIO when the link is down, EINVAL for a malformed packet, a short
//    write): the packet is counted in tx_errors (it was accepted, so it counts as sent
//    upstream) and freed; the errno is kept (last_write_error()).
//
// Invariants: tx_packets == completed + pending; every accepted packet is written at most once
// and then freed exactly once; packets reach the kernel in xmit order; nothing is allocated on
// xmit/poll (the pending list is intrusive).
//
// Memory ordering: all state is guarded by tx_lock (xmit by the driver-loop owner; poll() takes
// it). next_poll_ns()/in_flight() read relaxed atomic hints published under tx_lock.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "device/polled_device.hpp"
#include "device/real_devices.hpp"
#include "txpath/device.hpp"
#include "txpath/packet.hpp"

namespace txpath {

class TunDevice final : public PolledDevice {
 public:
  static constexpr std::size_t kMaxPending = 64;     // packets held for one doorbell at most
  static constexpr uint64_t kRetryNs = 50'000;       // EAGAIN: poll() retries this much later
  static constexpr uint32_t kEthHeaderLen = 14;

  // The write(2) the device transmits with; tests substitute one that answers EAGAIN.
  using WriteFn = std::function<ssize_t(int fd, const void* buf, std::size_t len)>;

  // Throws DeviceError (one line) if the interface cannot be opened or configured.
  explicit TunDevice(const TunConfig& config, WriteFn write = {});
  ~TunDevice() override;

  std::string_view kind() const noexcept override { return "tun"; }
  std::string describe() const override { return "tun:" + ifname_; }
  XmitResult xmit(Packet* p, bool more) noexcept override;
  void poll() noexcept override;

  const std::string& ifname() const noexcept { return ifname_; }
  // The /dev/net/tun descriptor this queue writes (for tests and diagnostics).
  int fd() const noexcept { return fd_; }
  // errno of the last failed write other than EAGAIN (0 if none). Under tx_lock or quiescent.
  int last_write_error() const noexcept { return last_errno_; }

 private:
  struct Opened;  // the interface as the constructor found it (tun_device.cpp)
  static Opened open_tun(const TunConfig& config);
  TunDevice(Opened&& o, WriteFn write);

  // The doorbell: writes pending packets in order until done or EAGAIN. Caller holds tx_lock.
  void flush(uint64_t now) noexcept;
  void publish_hints() noexcept;

  const std::string ifname_;
  int fd_ = -1;
  const WriteFn write_;       // ::write unless a test substituted it
  PacketList pending_;        // accepted, not yet written; guarded by tx_lock
  bool blocked_ = false;      // EAGAIN: we stopped the queue and retry from poll()
  uint64_t retry_at_ = 0;     // steady-clock ns of the next retry when blocked_
  int last_errno_ = 0;
};

}  // namespace txpath
