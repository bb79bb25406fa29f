// SPDX-License-Identifier: MIT
// pfifo_fast: the 3-band default qdisc (Linux sch_generic.c, modern per-band-ring semantics).
//
// A packet goes to band kPrio2Band[priority & 15]; dequeue always serves the lowest-numbered
// non-empty band (band 0 can starve bands 1 and 2, by design). Within a band order is FIFO.
//
// Capacity is per band: each band holds at most `band_limit` (= txqueuelen) packets, so up to
// 3 * txqueuelen in total. A packet whose band is full is tail-dropped; the other bands are
// unaffected.
//
// Invariant (on top of Qdisc's): qlen() == sum of bands_[b].size() and backlog() == sum of
// bands_[b].bytes(); each bands_[b].size() <= band_limit.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "txpath/qdisc.hpp"

namespace txpath {

class PfifoFastQdisc final : public Qdisc {
 public:
  static constexpr unsigned kBands = 3;
  // TC_PRIO_* -> band, indexed by priority & 15.
  static constexpr std::array<uint8_t, 16> kPrio2Band = {1, 2, 2, 2, 1, 2, 0, 0,
                                                         1, 1, 1, 1, 1, 1, 1, 1};

  static constexpr unsigned band_of(uint32_t priority) noexcept {
    return kPrio2Band[priority & 15u];
  }

  // band_limit: packets per band (the device's txqueuelen). 0 makes every enqueue a drop; the
  // registry refuses it, like the kernel refuses a zero-sized ring.
  explicit PfifoFastQdisc(uint32_t band_limit) noexcept : band_limit_(band_limit) {}

  // Always: an empty pfifo_fast accepts any packet (band_limit >= 1 is enforced at creation).
  bool can_bypass() const noexcept override { return true; }
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  Packet* dequeue() noexcept override;
  Packet* peek() noexcept override;
  void reset(PacketList& to_free) noexcept override;

  std::string_view kind() const noexcept override { return "pfifo_fast"; }
  // bands 3, priomap (16 bands, one per TC_PRIO value), multiqueue false: the kernel's
  // tc_prio_qopt, which tc prints with prio's printer.
  DumpAttrs dump_options() const override;

  uint32_t band_limit() const noexcept { return band_limit_; }
  // Packets currently queued in band b (b < kBands).
  std::size_t band_qlen(unsigned b) const noexcept { return bands_[b].size(); }

 private:
  std::array<PacketList, kBands> bands_;
  const uint32_t band_limit_;
};

}  // namespace txpath
