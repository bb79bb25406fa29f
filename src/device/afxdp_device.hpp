// SPDX-License-Identifier: MIT
// `afxdp:IFNAME[:QUEUE]`: an AF_XDP socket, TX only, through libxdp's xsk API.
//
// Rings (all single-producer/single-consumer, shared with the kernel; libxdp's ring helpers do
// the acquire/release on the producer and consumer indices):
//  * UMEM: 2 × ring chunks of 2 KiB in one page-aligned mapping; a free-chunk stack (ours).
//  * TX ring: xmit() copies the frame into a free chunk and reserves a TX descriptor for it;
//    with `more` it stops there. The doorbell submits every reserved descriptor at once (one
//    release store of the producer index) and kicks the kernel with sendto(): in copy mode
//    (veth, and any driver without zero-copy) the kernel transmits only inside that call, at
//    most a small batch per call, so the kick repeats while the kernel answers EAGAIN and has
//    not yet consumed everything (bounded; poll() retries the rest).
//  * Completion ring: the kernel returns each chunk once the frame was sent; reap() puts the
//    chunks back on the free stack (one consumer release per batch).
//  * No UMEM chunk or no TX slot: reap; if still none, stop the queue, ring the doorbell, busy.
//    poll() (the service thread) reaps and wakes the queue once a quarter of the chunks are free.
// Zero-copy is asked for first; where the driver has none (veth), the socket binds in copy mode.
// The packet's buffer returns to its pool at the doorbell (its data was copied into the UMEM).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "device/netif.hpp"
#include "device/configured_device.hpp"
#include "device/real_devices.hpp"
#include "txpath/device.hpp"
#include "txpath/packet.hpp"

namespace txpath {

class AfXdpDevice final : public ConfiguredDevice<AfXdpConfig> {
 public:
  // Throws DeviceError (one line) when the interface is missing, the kernel refuses AF_XDP, or
  // txpath was built without libxdp.
  explicit AfXdpDevice(const AfXdpConfig& config);
  ~AfXdpDevice() override;

  XmitResult xmit(Packet* p, bool more) noexcept override;
  void poll() noexcept override;
  void address_frames(FrameSpec& spec) const override;

  bool zero_copy() const noexcept { return zero_copy_; }
  // The XSK's socket descriptor, the one its doorbell kicks (for tests and diagnostics).
  int socket_fd() const noexcept;

 private:
  struct Xsk;  // libxdp state (afxdp_device.cpp)

  void reap() noexcept;
  void doorbell() noexcept;
  void kick() noexcept;
  void publish_hints() noexcept;

  netif::Interface ifc_;
  std::unique_ptr<Xsk> xsk_;
  bool zero_copy_ = false;

  // Guarded by tx_lock.
  std::vector<uint64_t> free_chunks_;  // UMEM offsets; sized once
  uint32_t reserved_ = 0;              // TX descriptors filled, not yet submitted
  uint64_t outstanding_ = 0;           // chunks submitted or reserved, not yet completed
  PacketList pending_;                 // copied since the last doorbell
  bool kick_needed_ = false;
  bool drv_stopped_ = false;
  uint64_t last_activity_ns_ = 0;
};

}  // namespace txpath
