// SPDX-License-Identifier: MIT
// `afxdp:IFNAME[:QUEUE]`: an AF_XDP socket, TX only, through libxdp's xsk API.
//
// Rings (all single-producer/single-consumer, shared with the kernel; libxdp's ring helpers do
// the acquire/release on the producer and consumer indices):
//  * UMEM: one page-aligned mapping of 2 KiB frames: first the zero-copy pool's `umem` frames
//    (a Pool over them, zero_copy_pool()), then 2 × ring copy chunks with a free-chunk stack (ours).
//  * TX ring: xmit() reserves a TX descriptor. A packet of the zero-copy pool is sent from its own
//    buffer: the descriptor carries the buffer's UMEM address (Pool::offset_of) and the device
//    owns the packet until the kernel completes it. A packet of any other pool is copied into a
//    free chunk (copies()) and returns to its pool at the doorbell. With `more` it stops there.
//    The doorbell submits every reserved descriptor at once (one release store of the producer
//    index) and kicks the kernel with sendto(): in copy mode (veth, and any driver without
//    zero-copy) the kernel transmits only inside that call, at most a small batch per call, so
//    the kick repeats while the kernel answers EAGAIN and has not yet consumed everything
//    (bounded; poll() retries the rest).
//  * Completion ring: the kernel returns each address once the frame was sent; reap() puts copy
//    chunks back on the free stack and frees the zero-copy packets into their pool (one consumer
//    release per batch). A per-frame flag says which pool frames the device owns: an address it
//    does not own is ignored (never freed twice); at teardown, after the wait for completions and
//    the socket's close, whatever it still owns goes back to the pool.
//  * No copy chunk (for a copy) or no TX slot: reap; if still none, stop the queue, ring the
//    doorbell, busy. poll() (the service thread) reaps and wakes the queue once a quarter of the
//    chunks and the ring are free.
// Zero-copy bind (XDP_ZEROCOPY) is asked for first; where the driver has none (veth), the socket
// binds in copy mode (XDP_COPY): the kernel then copies each frame into an skb itself, but the
// zero-copy pool still saves txpath's own copy into the UMEM.
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
#include "txpath/pool.hpp"

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

  // The socket is bound with XDP_ZEROCOPY (the driver reads the UMEM itself).
  bool zero_copy() const noexcept { return zero_copy_; }
  // The pool over the UMEM's frames whose packets xmit() sends without a copy (nullptr with
  // umem=0). Shared: the pool and its memory live until the device and every holder let go.
  std::shared_ptr<Pool> pool() const noexcept { return pool_; }
  // Frames copied into a UMEM chunk (packets of another pool) since the device opened.
  uint64_t copies() const noexcept { return copies_.get(); }
  // The XSK's socket descriptor, the one its doorbell kicks (for tests and diagnostics).
  int socket_fd() const noexcept;

 private:
  struct Xsk;  // libxdp state (afxdp_device.cpp)

  void map_umem();
  void open_socket();
  bool sends_in_place(const Packet& p) const noexcept;
  bool reserve_tx(bool from_pool, uint32_t& idx) noexcept;
  uint64_t place(Packet* p, bool from_pool) noexcept;
  void release_owned() noexcept;
  void reap() noexcept;
  void doorbell() noexcept;
  void kick() noexcept;
  void publish_hints() noexcept;

  netif::Interface ifc_;
  std::unique_ptr<Xsk> xsk_;
  bool zero_copy_ = false;
  std::shared_ptr<Pool> pool_;  // over the UMEM's first cfg_.umem frames (aliases Xsk's memory)
  uint64_t pool_bytes_ = 0;     // where the copy chunks start in the UMEM
  SingleWriterCounter copies_;

  // Guarded by tx_lock.
  std::vector<uint8_t> owned_;         // per pool frame: 1 while the device owns its packet
  std::vector<uint64_t> free_chunks_;  // UMEM offsets of copy chunks; sized once
  uint32_t reserved_ = 0;              // TX descriptors filled, not yet submitted
  uint64_t outstanding_ = 0;           // descriptors submitted or reserved, not yet completed
  PacketList pending_;                 // copied since the last doorbell
  bool kick_needed_ = false;
  bool drv_stopped_ = false;
  uint64_t last_activity_ns_ = 0;
};

}  // namespace txpath
