// SPDX-License-Identifier: MIT
// `nic`: a modelled single-queue 10G-class NIC with a descriptor ring, a doorbell, a wire that
// drains at line rate, batched completion cleaning and BQL.
//
// What the model charges, and why these defaults (all are order-of-magnitude ESTIMATES for a
// current x86 server with a 10G NIC, not measurements of a particular part):
//  * rate_gbit = 10: the wire. A frame occupies (max(len, 60) + 24) bytes on it — 8 preamble/SFD,
//    4 FCS, 12 inter-frame gap — so a minimum frame takes 84 * 8 / 10 = 67.2 ns: 14.88 Mpps line
//    rate. The wire is what limits a well-batched sender.
//  * pkt_ns = 20: CPU time per xmit() (busy-wait): writing a 16-byte descriptor into the ring,
//    the skb/DMA bookkeeping. A cached descriptor write is a few ns; driver bookkeeping brings a
//    real ndo_start_xmit to tens of ns, well under the 67 ns wire budget at 64 B.
//  * doorbell_ns = 200: CPU time per doorbell, i.e. the uncached MMIO write of the ring tail.
//    Posted MMIO writes to a PCIe BAR cost of the order of a few hundred ns of stall when they
//    serialise the core (write-combining flush, fence), which is why xmit_more exists: without
//    batching a 64-byte sender pays 200 + 20 ns per packet and falls far below line rate; with
//    batches of 32 the doorbell is ~6 ns per packet.
//  * ring = 512: a common default TX ring size (ethtool -g) for 10G drivers.
//  * clean_batch = 32: completions are reaped from xmit() only when at least this many are due,
//    as drivers clean TX descriptors in batches (and write back completion status in batches).
//  * BQL on, as for the drivers that support bulk dequeue (the qdisc layer only bulks with BQL).
//  * irq_ns = 50000: TX-completion interrupt moderation. The completion "interrupt" (poll() from
//    the queue's service thread) comes no sooner than irq_ns after the previous clean, as with
//    ethtool tx-usecs of tens of microseconds on 10G drivers; under load, clean-on-xmit keeps
//    pushing it out, so the service thread stays asleep.
//
// Model:
//  * xmit(): cleans if >= clean_batch descriptors are due; if the ring is full, stops the queue,
//    rings the doorbell for pending descriptors and returns busy. Otherwise spends pkt_ns, places
//    the descriptor (pending: written but not yet visible to the "hardware"), bql_sent(len). It
//    rings the doorbell if !more, or if BQL stopped the queue, or if the ring became full (then
//    it stops the queue first — drivers stop before the ring is full, so that xmit() is never
//    called without room). The doorbell spends doorbell_ns and makes pending descriptors
//    visible; each gets completion time = max(now, previous completion) + wire time.
//  * poll(): under tx_lock, reaps every descriptor due by now: buffers go back with one
//    free_packets() call, BQL is credited, and the queue is woken when it was stopped by the
//    driver and at least ring/4 descriptors are free again (the usual wake threshold).
//  * next_poll_ns(): when the next completion interrupt fires: the later of the earliest
//    completion time of a visible, unreaped descriptor and (last clean + irq_ns); 0 if none.
//
// Ring: a power of two (2 .. 2^20) so that slot = index & mask; preallocated at construction,
// nothing is allocated on xmit/poll. Pools must outlive the device (the destructor returns any
// packet still in the ring to its pool).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "device/polled_device.hpp"
#include "txpath/device.hpp"
#include "txpath/dql.hpp"
#include "txpath/packet.hpp"

namespace txpath {

struct NicConfig {
  uint64_t pkt_ns = 20;        // CPU cost of one xmit (descriptor write), busy-wait
  uint64_t doorbell_ns = 200;  // CPU cost of one doorbell (MMIO tail write), busy-wait
  uint32_t ring = 512;         // TX descriptors; a power of two in [2, 2^20]
  double rate_gbit = 10.0;     // wire rate, Gbit/s, in [1e-5, 1e4] (ps arithmetic stays in 64 bits)
  uint32_t clean_batch = 32;   // xmit() reaps completions once this many are due; [1, ring]
  bool bql = true;             // byte queue limits
  uint64_t irq_ns = 50'000;    // completion interrupt moderation (min gap after a clean)
  Dql::Config dql{};           // used when bql
  uint32_t mtu = 1500;
};

// The wire a NIC's TX rings share (one port): frames leave one at a time at `rate`, whichever
// ring they come from. Each doorbell reserves the wire time of its whole batch in one step.
struct alignas(64) NicWire {
  const uint64_t epoch_ns;             // steady-clock origin of the picosecond wire clock
  std::atomic<uint64_t> free_ps{0};    // the wire is busy until then (ps after epoch_ns)
  NicWire();
  // Reserves `ps` picoseconds of wire time starting no earlier than `now_ps`; returns the start.
  uint64_t reserve(uint64_t now_ps, uint64_t ps) noexcept;
};

class NicDevice final : public PolledDevice {
 public:
  // Throws ConfigError (one line) for an out-of-range field. `wire`: the wire this ring sends on
  // (shared by the TX queues of one multi-queue nic); nullptr: a wire of its own.
  explicit NicDevice(const NicConfig& config = {}, std::shared_ptr<NicWire> wire = nullptr);
  ~NicDevice() override;

  std::string_view kind() const noexcept override { return "nic"; }
  // "nic:pkt=20,doorbell=200,ring=512,rate=10", plus clean=/bql=/irq=/mtu= when not the default.
  std::string describe() const override;
  XmitResult xmit(Packet* p, bool more) noexcept override;
  // The modelled doorbell is its busy-wait: with doorbell=0, batching saves nothing.
  bool xmit_more_pays() const noexcept override { return cfg_.doorbell_ns > 0; }
  void poll() noexcept override;

  const NicConfig& config() const noexcept { return cfg_; }
  // Nanoseconds a frame of `len` bytes occupies the wire (for tests and docs).
  double wire_ns(uint32_t len) const noexcept;

 private:
  struct Slot {
    Packet* pkt = nullptr;
    uint64_t done_ns = 0;  // completion time; valid once the slot is visible
  };

  uint64_t used() const noexcept { return tail_ - head_; }
  void ring_doorbell() noexcept;
  // Reaps visible descriptors due by `now`; wakes the queue if the driver stopped it and the ring
  // has room again. Caller holds tx_lock.
  void reap(uint64_t now) noexcept;
  void driver_stop() noexcept;
  void publish_hints() noexcept;

  const NicConfig cfg_;
  const uint64_t mask_;
  const uint64_t wake_free_;      // free descriptors needed to wake a driver-stopped queue
  const double ps_per_byte_;      // wire picoseconds per byte
  std::vector<Slot> ring_;        // sized once

  // Ring indices, monotonically increasing; slot = index & mask_. Guarded by tx_lock.
  //   [head_, visible_)  handed to the hardware (doorbell rung), completion times known
  //   [visible_, tail_)  written but not yet announced (xmit_more)
  uint64_t head_ = 0;
  uint64_t visible_ = 0;
  uint64_t tail_ = 0;
  const std::shared_ptr<NicWire> wire_;  // shared with the device's other TX queues
  const uint64_t epoch_ns_;       // wire_->epoch_ns
  bool drv_stopped_ = false;      // we set DRV_XOFF (stop_queue) and have not woken it yet
  uint64_t last_clean_ns_ = 0;    // when reap() last ran
};

}  // namespace txpath
