// SPDX-License-Identifier: MIT
// Packets for qdisc unit tests: n packets with their own buffers, reachable by index (id(),
// operator[]) and through a free list (take() / put()), so a test can hand packets to a qdisc,
// get them back from dequeue() or a to_free list, and reuse them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "txpath/packet.hpp"

namespace txpath::test {

class PacketArena {
 public:
  static constexpr uint32_t kBuf = 2048;

  explicit PacketArena(std::size_t n, uint32_t len = 100) : pkts_(n), buf_(n * kBuf) {
    for (std::size_t i = 0; i < n; ++i) {
      pkts_[i].data = buf_.data() + i * kBuf;
      pkts_[i].capacity = kBuf;
      pkts_[i].len = len;
      free_.push_back(&pkts_[n - 1 - i]);  // take() hands out packet 0 first
    }
  }
  PacketArena(const PacketArena&) = delete;
  PacketArena& operator=(const PacketArena&) = delete;

  Packet* operator[](std::size_t i) { return &pkts_[i]; }
  std::size_t size() const { return pkts_.size(); }
  std::size_t id(const Packet* p) const { return static_cast<std::size_t>(p - pkts_.data()); }

  // A free packet of length `len` with every other per-packet field cleared, or nullptr.
  Packet* take(uint32_t len) {
    if (free_.empty()) return nullptr;
    Packet* p = free_.back();
    free_.pop_back();
    p->next = nullptr;
    p->len = len;
    p->priority = 0;
    p->flow_hash = 0;
    p->enqueue_ns = 0;
    p->tstamp_ns = 0;
    p->pacing_rate = 0;
    return p;
  }
  void put(Packet* p) { free_.push_back(p); }
  void put(PacketList& l) {
    while (Packet* p = l.pop_front()) put(p);
  }
  std::size_t free_count() const { return free_.size(); }

 private:
  std::vector<Packet> pkts_;
  std::vector<std::byte> buf_;
  std::vector<Packet*> free_;
};

}  // namespace txpath::test
