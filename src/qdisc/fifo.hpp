// SPDX-License-Identifier: MIT
// Single-queue FIFOs: pfifo, bfifo, pfifo_head_drop (Linux sch_fifo semantics).
//
// One PacketList holds the queue in arrival order; the three kinds differ only in the admission
// rule at enqueue:
//   pfifo            accept iff qlen < limit                       (limit in packets)
//   bfifo            accept iff backlog + len <= limit             (limit in bytes; note the <=)
//   pfifo_head_drop  accept always while limit >= 1; when qlen >= limit the *oldest* packet is
//                    dropped to make room and enqueue returns Verdict::congestion; limit 0 drops
//                    every packet.
// A rejected packet is tail-dropped: it goes to to_free and counts as a drop.
//
// Invariant (on top of Qdisc's): q_.size() == qlen() and q_.bytes() == backlog(). The limit is fixed
// at construction; a queue is never trimmed to a limit after the fact: a live change hands the old
// queue to adopt(), which keeps it all (Linux: fifo_change sets the limit only), so a queue may
// hold more than its limit until dequeues bring it below; until then enqueue refuses (pfifo_head_drop:
// drops one head per packet it takes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "txpath/qdisc.hpp"

namespace txpath {

// Shared by the three FIFOs: queue storage, dequeue/peek/reset, and the accepted-packet path.
class FifoQdisc : public Qdisc {
 public:
  uint32_t limit() const noexcept { return limit_; }

  // limit: packets (pfifo, pfifo_head_drop) or bytes (bfifo) (the kernel's tc_fifo_qopt).
  DumpAttrs dump_options() const override { return DumpAttrs().number("limit", limit_); }

  Packet* dequeue() noexcept override {
    Packet* p = q_.pop_front();
    if (p) account_dequeue(*p);
    return p;
  }

  Packet* peek() noexcept override { return q_.front(); }

  // A live change keeps the queue, whatever the (new) limit: sch_fifo's change does not trim.
  Verdict adopt(Packet* p, PacketList& to_free) noexcept override {
    (void)to_free;
    return enqueue_tail(p);
  }

  void reset(PacketList& to_free) noexcept override {
    while (Packet* p = q_.pop_front()) {
      account_remove(*p);
      to_free.push_back(p);
    }
  }

 protected:
  explicit FifoQdisc(uint32_t limit) noexcept : limit_(limit) {}

  Verdict enqueue_tail(Packet* p) noexcept {
    q_.push_back(p);
    account_enqueue(*p);
    return Verdict::success;
  }

  PacketList q_;
  const uint32_t limit_;
};

// The FIFOs limited in packets (pfifo, pfifo_head_drop); bypass is
// allowed when limit >= 1 (an empty queue would have accepted the packet).
class PacketFifoQdisc : public FifoQdisc {
 public:
  bool can_bypass() const noexcept override { return limit_ >= 1; }

 protected:
  using FifoQdisc::FifoQdisc;
};

// pfifo: tail drop once `limit` packets are queued.
class PfifoQdisc final : public PacketFifoQdisc {
 public:
  explicit PfifoQdisc(uint32_t limit) noexcept : PacketFifoQdisc(limit) {}

  std::string_view kind() const noexcept override { return "pfifo"; }
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
};

// bfifo: tail drop once the packet would take the backlog past `limit` bytes. Bypass is allowed
// when limit >= psched_mtu (an empty queue accepts any full-size frame).
class BfifoQdisc final : public FifoQdisc {
 public:
  BfifoQdisc(uint32_t limit, uint32_t psched_mtu) noexcept
      : FifoQdisc(limit), psched_mtu_(psched_mtu) {}

  std::string_view kind() const noexcept override { return "bfifo"; }
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  bool can_bypass() const noexcept override { return limit_ >= psched_mtu_; }

 private:
  const uint32_t psched_mtu_;
};

// pfifo_head_drop: keeps the newest `limit` packets.
class PfifoHeadDropQdisc final : public PacketFifoQdisc {
 public:
  explicit PfifoHeadDropQdisc(uint32_t limit) noexcept : PacketFifoQdisc(limit) {}

  std::string_view kind() const noexcept override { return "pfifo_head_drop"; }
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
};

}  // namespace txpath
