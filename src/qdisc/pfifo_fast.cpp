// SPDX-License-Identifier: MIT
// pfifo_fast: three strict-priority FIFO bands selected by skb->priority.
#include "qdisc/pfifo_fast.hpp"

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

std::string PfifoFastQdisc::options() const {
  std::string s = "bands 3 priomap";
  for (uint8_t b : kPrio2Band) {
    s += ' ';
    s += static_cast<char>('0' + b);
  }
  return s;
}

std::string PfifoFastQdisc::options_json() const {
  std::string s = "{\"bands\":3,\"priomap\":[";
  for (std::size_t i = 0; i < kPrio2Band.size(); ++i) {
    if (i) s += ',';
    s += static_cast<char>('0' + kPrio2Band[i]);
  }
  s += "],\"multiqueue\":false}";
  return s;
}

}  // namespace txpath
