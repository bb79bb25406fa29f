// SPDX-License-Identifier: MIT
// Peer baseline `peer:ck_ring`: senders enqueue into a Concurrency Kit MPMC ring
// (ck_ring_enqueue_mpmc: a CAS on the producer index), one drainer thread dequeues
// (ck_ring_dequeue_mpmc) and transmits. A burst reserves as many slots as fit with one CAS and
// publishes them with one store (txpath_ck_ring_enqueue_burst_mpmc). Capacity: txqueuelen rounded
// up to a power of two (ck keeps one slot empty). Memory ordering is CK's: enqueue publishes the slot before the
// producer index (release), dequeue reads the index before the slot (acquire).
//
// Known hazard (CK's, like DPDK rte_ring's "non-preemptive" MP mode): producers publish in
// reservation order, each spinning until the previous reservation is published, so a producer
// descheduled between reserving and publishing stalls every later producer. With more sender
// threads than cores this baseline can collapse (it spins; it does not yield) — which is part of
// what the comparison shows.
#include <algorithm>
#include <bit>
#include <memory>

#include "strategy/ck_ring_shim.h"
#include "strategy/peer_queue.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

class CkRingQueue : public PeerQueue {
 public:
  CkRingQueue(Device& device, const TxQueueConfig& config)
      : PeerQueue(device, "peer:ck_ring"),
        ring_(txpath_ck_ring_create(static_cast<unsigned>(
            std::bit_ceil<std::size_t>(std::max<uint32_t>(config.txqueuelen, 1) + 1)))) {
    if (!ring_) throw ConfigError("peer:ck_ring: cannot allocate the ring");
  }

 protected:
  bool push(Packet* p) noexcept override { return txpath_ck_ring_enqueue_mpmc(ring_.get(), p); }
  // One reservation of as many slots as fit, one publish (ck_ring_shim.c).
  std::size_t push_burst(Packet* const* ps, std::size_t n) noexcept override {
    void* items[kBurst];  // n <= kBurst (PeerQueue::send_burst)
    n = std::min(n, kBurst);
    std::copy(ps, ps + n, items);
    return txpath_ck_ring_enqueue_burst_mpmc(ring_.get(), items, static_cast<unsigned>(n));
  }
  std::size_t pop_burst(Packet** out, std::size_t n) noexcept override {
    std::size_t got = 0;
    void* p = nullptr;
    while (got < n && txpath_ck_ring_dequeue_mpmc(ring_.get(), &p)) out[got++] = static_cast<Packet*>(p);
    return got;
  }
  uint64_t size() const noexcept override { return txpath_ck_ring_size(ring_.get()); }

 private:
  struct Destroy {
    void operator()(txpath_ck_ring* r) const noexcept { txpath_ck_ring_destroy(r); }
  };
  std::unique_ptr<txpath_ck_ring, Destroy> ring_;
};

}  // namespace

std::unique_ptr<PeerQueue> make_peer_ck_ring(Device& device, const TxQueueConfig& config) {
  return std::make_unique<FinalizedPeer<CkRingQueue>>(device, config);
}

}  // namespace txpath
