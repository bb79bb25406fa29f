// SPDX-License-Identifier: MIT
// pfifo_fast: three strict-priority FIFO bands selected by skb->priority.
#include "qdisc/pfifo_fast.hpp"

#include <vector>

namespace txpath {

Verdict PfifoFastQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  PacketList& band = bands_[band_of(p->priority)];
  if (band.size() >= band_limit_) return drop(p, to_free);  // this band's ring is full
  band.push_back(p);
  account_enqueue(*p);
  return Verdict::success;
}

Packet* PfifoFastQdisc::dequeue() noexcept {
  for (PacketList& band : bands_) {
    if (Packet* p = band.pop_front()) {
      account_dequeue(*p);
      return p;
    }
  }
  return nullptr;
}

Packet* PfifoFastQdisc::peek() noexcept {
  for (PacketList& band : bands_)
    if (!band.empty()) return band.front();
  return nullptr;
}

void PfifoFastQdisc::reset(PacketList& to_free) noexcept {
  for (PacketList& band : bands_) {
    while (Packet* p = band.pop_front()) {
      account_remove(*p);
      to_free.push_back(p);
    }
  }
}

DumpAttrs PfifoFastQdisc::dump_options() const {
  return DumpAttrs()
      .number("bands", kBands)
      .array("priomap", std::vector<uint64_t>(kPrio2Band.begin(), kPrio2Band.end()))
      .flag("multiqueue", false);
}

}  // namespace txpath
