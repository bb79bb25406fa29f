// SPDX-License-Identifier: MIT
// `afpacket:IFNAME[,ring=N,bypass=0|1,prio=P,kick=inline|thread,queues=N]`: AF_PACKET with a
// PACKET_TX_RING (TPACKET_V2). With queues=N the device has N of these, one socket and ring per
// TX queue; each queue's doorbell kicks only its own socket, so queues never share a kernel
// socket or ring.
// Which kernel TX queue a socket's frames take is the kernel's choice (docs/background.md,
// "Which kernel TX queue an AF_PACKET socket uses"): with bypass, the kicking CPU's XPS queue or
// the CPU number modulo the queue count; without, XPS or the frame's flow hash; in both, within
// the traffic class of the socket's priority (prio=P) when the interface has classes.
//
// The ring is the NIC's descriptor ring, the send() kick is the doorbell:
//  * xmit() copies the frame into the next ring frame, sets its tp_len and then its tp_status to
//    TP_STATUS_SEND_REQUEST; with `more` it stops there (xmit_more), so that one kick sends the
//    whole batch. The kernel (packet_sendmsg → tpacket_snd) walks the frames marked
//    SEND_REQUEST from its own ring position, turns each into an skb, marks it SENDING and hands
//    it to the driver (with bypass: dev_direct_xmit, past the kernel's qdisc; without: through
//    dev_queue_xmit and whatever qdisc `tc` has on the interface); the skb's destructor marks
//    the frame AVAILABLE again. That status change is our TX completion.
//  * The packet's buffer goes back to its pool at the doorbell, as the data was copied; ring
//    frames stay "in flight" until the kernel marks them AVAILABLE.
//  * Ring full: reap completions; if still full, stop the queue, kick, return busy. poll()
//    (the queue's service thread) reaps, retries a kick the kernel refused (EAGAIN/ENOBUFS: no
//    socket buffer or the driver was busy; the frames stay SEND_REQUEST and are sent by the next
//    kick) and wakes the queue when a quarter of the ring is free, as NIC drivers do.
//  * The kick uses MSG_DONTWAIT, so xmit() never sleeps under tx_lock.
//  * kick=thread: the doorbell only bumps `doorbell_seq_` (and wakes the kicker if it sleeps);
//    the queue's kicker thread makes every kick, with no lock held, and retries a refused one
//    itself. Filling frames while a kick runs is the ring's own protocol (the kernel walks the
//    SEND_REQUEST frames from its position and stops at the first that is not; a frame marked
//    after it passed is sent by the kick that follows the doorbell announcing it). So the
//    thread that rings the doorbell no longer pays the kernel's path (for veth, the peer's
//    receive), as a NIC's DMA engine runs beside the CPU that wrote its doorbell register
//    (docs/architecture.md, the afpacket device; docs/bench.md, "The kicker thread").
//  * Link down or gone (ENETDOWN, ENXIO): the frames still waiting are dropped and counted in
//    tx_errors, as a driver flushes its ring on link loss; upstream they were sent.
//
// Memory ordering (the ring is shared with the kernel): tp_status is written with a release
// store after the frame data and tp_len (pairs with the kernel's read barrier before it reads a
// SEND_REQUEST frame), and read with an acquire load when reaping (pairs with the kernel's write
// barrier before it sets AVAILABLE, so that the frame may be reused).
//
// PACKET_LOSS is set: a frame the kernel cannot send (malformed) is marked AVAILABLE and skipped
// instead of stalling the ring. xmit() only ever sees frames TxQueue admitted (<= MTU + 14).
#pragma once

#include <linux/if_packet.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "device/netif.hpp"
#include "device/configured_device.hpp"
#include "device/real_devices.hpp"
#include "txpath/device.hpp"
#include "txpath/packet.hpp"

namespace txpath {

class AfPacketDevice final : public ConfiguredDevice<AfPacketConfig> {
 public:
  // Throws DeviceError (one line) if the interface is missing or the kernel refuses the socket,
  // the ring or an option; ConfigError for a ring size that is not a power of two in range.
  explicit AfPacketDevice(const AfPacketConfig& config);
  ~AfPacketDevice() override;

  XmitResult xmit(Packet* p, bool more) noexcept override;
  void poll() noexcept override;
  void address_frames(FrameSpec& spec) const override;

  // Kicks the kernel refused with something other than EAGAIN/ENOBUFS (e.g. ENETDOWN).
  uint64_t kick_errors() const noexcept { return kick_errors_.load(std::memory_order_relaxed); }
  // The AF_PACKET socket this queue kicks (for tests and diagnostics).
  int socket_fd() const noexcept { return fd_.get(); }

 private:
  struct Mapping {
    void* addr = nullptr;
    std::size_t len = 0;
    ~Mapping();
  };

  tpacket2_hdr* frame(uint64_t index) const noexcept;
  uint64_t used() const noexcept { return tail_ - head_; }
  void reap() noexcept;
  void doorbell() noexcept;
  // One send() kick: its outcome, the error counted (kick_errors) unless it is "try again".
  enum class KickOutcome { sent, retry, link_gone };
  KickOutcome kick_once() noexcept;
  // The inline kick (tx_lock held): retry leaves kick_needed_ set, link_gone flushes.
  void kick() noexcept;
  // The frames still SEND_REQUEST after a kick failed for a link that is down or gone are
  // dropped (tx_errors). tx_lock held, and no kick can be running (the one kicker made it).
  void flush_waiting() noexcept;
  void publish_hints() noexcept;
  // kick=thread. The doorbell's half (tx_lock held) and the kicker thread's loop (no lock).
  void wake_kicker() noexcept;
  void kicker_loop() noexcept;
  // One kick on the kicker thread; false if it is to be tried again (KickOutcome::retry).
  bool kick_from_kicker() noexcept;

  netif::Interface ifc_;
  netif::Fd fd_;
  Mapping ring_;
  uint32_t frame_size_ = 0;   // power of two; frames tile the mapping exactly
  uint32_t data_offset_ = 0;  // frame data starts here (TPACKET2_HDRLEN - sizeof(sockaddr_ll))
  uint64_t mask_ = 0;
  sockaddr_ll dest_{};        // the kick's address: interface and protocol (ETH_P_IP)

  // Guarded by tx_lock. Ring indices, monotonically increasing; frame = index & mask_.
  //   [head_, tail_)  frames handed to the kernel (SEND_REQUEST, SENDING) or not yet reaped
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  PacketList pending_;        // copied since the last doorbell; freed at the doorbell
  // kick=thread: the buffer of each frame in [head_, tail_), freed when reap() finds the frame
  // completed (a NIC's TX completion), so that a sender's --sndbuf budget is held while its
  // frames wait in the ring and the ring pushes back as the kernel's socket would.
  std::vector<Packet*> in_ring_;
  bool unrung_ = false;       // frames written since the last doorbell
  bool kick_needed_ = false;  // a kick was refused: frames wait in SEND_REQUEST
  bool drv_stopped_ = false;
  uint64_t last_activity_ns_ = 0;

  std::atomic<uint64_t> kick_errors_{0};  // relaxed: a statistic

  // kick=thread. doorbell_seq_: bumped by each doorbell (one writer at a time: tx_lock).
  // kicker_parked_: 1 while the kicker sleeps on doorbell_seq_ (the Dekker pair with the
  // doorbell, see wake_kicker()). kicker_stop_: the destructor's request to end the loop.
  std::atomic<uint32_t> doorbell_seq_{0};
  std::atomic<uint32_t> kicker_parked_{0};
  std::atomic<bool> kicker_stop_{false};
  std::thread kicker_;  // joinable: kick=thread, the doorbell wakes it (until the destructor)
};

}  // namespace txpath
