// SPDX-License-Identifier: MIT
// prio: the classful strict-priority qdisc (Linux sch_prio semantics, written from
// its behaviour; tc grammar and output from iproute2 q_prio.c behaviour).
//
//   prio [bands N] [priomap P0 ... P15]      2 <= N <= 16 (default 3); every Pi < N;
//                                            default priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1
//
// Classification of a packet with priority P (skb->priority), no filters:
//   - if this qdisc has a handle major H != 0 and P >> 16 == H: band = (P & 0xffff) - 1, and a
//     band outside [0, N) (minor 0 or > N) falls back to priomap[0];
//   - else if P >> 16 != 0 (a classid of some other qdisc): band = priomap[0];
//   - else band = priomap[P & 15].
// The handle major is a constructor parameter; 0 (the default, and what make_prio() builds)
// means "no handle": the classid path never matches.
//
// Each band is a class whose queue is a child qdisc (default: pfifo with limit = txqueuelen).
// Enqueue hands the packet to its band's child; every drop of a child (the arriving packet, the
// victims of a batch drop, AQM drops inside its dequeue) is counted by the child and by prio. Dequeue/peek serve the lowest-numbered band whose
// child yields a packet (band 0 can starve the rest, by design).
//
// Invariants (on top of Qdisc's): qlen() == sum of the children's qlen() and backlog() == sum of
// their backlog(), after every call into prio. prio keeps, per band, the child's qlen/backlog as
// last seen (seen_) and folds the difference into its own counters after each call into that
// child; this is the userspace form of qdisc_tree_reduce_backlog(), and it also covers a child
// that drops packets inside its own dequeue (AQM). It folds the children's drop counts the same
// way (Linux: qdisc_tree_reduce_backlog() adds them to every ancestor), so prio's drops — and a
// TxQueue's "dropped", the root's — cover every packet dropped below it.
// stats().packets/bytes count packets prio itself handed out by dequeue().
//
// Threading: as every Qdisc, called by one thread at a time (the strategy serialises callers);
// no atomics besides the SingleWriterCounter statistics of the base class; no allocation on the
// packet path (children are allocated at construction and by graft()).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/qdisc.hpp"

namespace txpath {

class PrioQdisc final : public Qdisc, public ClassOps {
 public:
  static constexpr std::size_t kMinBands = 2;   // TCQ_MIN_PRIO_BANDS
  static constexpr std::size_t kMaxBands = 16;  // TCQ_PRIO_BANDS
  using Priomap = std::array<uint8_t, 16>;
  static constexpr Priomap kDefaultPriomap = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

  // bands in [kMinBands, kMaxBands] and every priomap entry < bands (make_prio() validates; the
  // constructor clamps out-of-range input rather than misbehave). Each band gets a default
  // child: pfifo with limit `child_limit` (the device's txqueuelen). handle_major: see above.
  PrioQdisc(std::size_t bands, const Priomap& priomap, uint32_t child_limit,
            uint16_t handle_major = 0);
  ~PrioQdisc() override;

  // ---- data path (can_bypass(): false, the default: Linux prio has no TCQ_F_CAN_BYPASS) ----
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  Verdict adopt(Packet* p, PacketList& to_free) noexcept override;  // into the band's adopt()
  void settle(PacketList& to_free) noexcept override;               // every band's settle()
  Packet* dequeue() noexcept override;
  // The children's dequeue-side (AQM) victims.
  void take_dequeue_drops(PacketList& out) noexcept override;
  Packet* peek() noexcept override;
  // The earliest non-zero watchdog of the children (a shaping child, e.g. tbf), or 0.
  uint64_t watchdog_ns() const noexcept override;
  // Resets every child; their packets go to to_free (not counted as drops).
  void reset(PacketList& to_free) noexcept override;

  std::string_view kind() const noexcept override { return "prio"; }
  // bands N, priomap P0..P15, multiqueue false (not modelled): the kernel's tc_prio_qopt.
  DumpAttrs dump_options() const override;

  // ---- classful API (tc class / graft) ----
  std::size_t bands() const noexcept { return bands_; }
  const Priomap& priomap() const noexcept { return priomap_; }
  uint16_t handle_major() const noexcept { return handle_major_; }
  // The band a packet of this priority goes to (see the classification rules above).
  std::size_t classify(uint32_t priority) const noexcept;
  // The child qdisc of band b (class major:b+1); b < bands().
  Qdisc& band_child(std::size_t band) noexcept { return *children_[band]; }
  const Qdisc& band_child(std::size_t band) const noexcept { return *children_[band]; }
  // Per-band statistics: the child's (tc -s class show).
  QdiscStats band_stats(std::size_t band) const noexcept { return children_[band]->stats(); }

  // The generic class interface (Qdisc): class minor m is band m-1; the classes are fixed.
  std::vector<QdiscClassInfo> classes() const override;
  QdiscStats class_stats(uint16_t minor) const override;
  Qdisc* child(uint16_t minor) noexcept override;
  // A live change: each band's child goes on with its own drop count, which prio has seen.
  void continue_classes(const ClassOps& old) noexcept override;
  void graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) override;
  // Replaces band b's child. The old child's queued packets are purged onto to_free (not counted
  // as drops) and prio's qlen/backlog shrink accordingly; if the new child already holds
  // packets they are added to prio's. A null child installs a fresh default pfifo. Allocates
  // (control path only).
  void graft_band(std::size_t band, std::unique_ptr<Qdisc> child, PacketList& to_free);

 private:
  // Folds the change of band b's child qlen/backlog since the last look into prio's counters.
  void sync_band(std::size_t b) noexcept;

  struct Seen {
    uint64_t qlen = 0;
    uint64_t backlog = 0;
    uint64_t drops = 0;
  };

  const std::size_t bands_;
  Priomap priomap_;
  const uint32_t child_limit_;
  const uint16_t handle_major_;
  std::array<std::unique_ptr<Qdisc>, kMaxBands> children_;
  std::array<Seen, kMaxBands> seen_{};
};

}  // namespace txpath
