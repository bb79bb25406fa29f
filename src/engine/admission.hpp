// SPDX-License-Identifier: MIT
// What TxQueue::send()/send_burst() refuse before a packet enters the transmit path (the public
// API's boundary, docs/library.md "Refusals"): checks of the packet's header alone, O(1), in
// every build type.
//
//   nullptr, no pool                  SendStatus::invalid   the caller keeps the packet
//   handed over already (in flight)   SendStatus::in_flight the first submission stands
//   len > the device's max frame      SendStatus::too_big   the caller keeps the packet
//   len > capacity (within the max)   SendStatus::invalid   the caller keeps the packet
// (too_big before len > capacity: a frame longer than the device's maximum stays too_big, as
// it always was, whatever its buffer.)
//
// Packet::in_flight is the second-submission guard: a load and a store by the submitting thread,
// no read-modify-write (a locked exchange cost a lone sender 5-8 ns a packet, a quarter of the
// busylock row: docs/library.md "Refusals"). It catches every second submission that follows the
// first (a second send(), the same packet again in one burst or a later one); two submissions of
// one packet at the same instant from two threads are the application's own data race on a
// packet it does not own, and may both pass. It is cleared by Pool::reset() when the pool hands
// the packet out again. Accessed through std::atomic_ref so that Packet stays a plain, copyable
// struct while a stale pointer's send() may read it as another thread's Pool::get() clears it.
#pragma once

#include <atomic>
#include <cstdint>

#include "txpath/packet.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {

static_assert(std::atomic_ref<bool>::required_alignment <= alignof(bool),
              "Packet::in_flight is used through std::atomic_ref<bool>");

// Claims `p` for one submission: true if it was not in flight (it is now). acquire: pairs with
// unclaim_packet()'s release, so that a claim after another one was given back (MultiQueueTx
// holds one across its pick) sees the fields written under it. The clear it must see otherwise
// is Pool::reset()'s, which the pool's own hand-over (its lock, or the same thread's cache)
// orders before whoever got the packet could submit it. The store: relaxed, only this thread
// reads it before the packet's hand-over to the queue (a lock, a ring's release, a CAS), which
// publishes it with the rest of the packet. (Both are plain moves on x86.)
[[gnu::always_inline]] inline bool claim_packet(Packet* p) noexcept {
  const std::atomic_ref<bool> flag(p->in_flight);
  if (flag.load(std::memory_order_acquire)) [[unlikely]]
    return false;
  flag.store(true, std::memory_order_relaxed);
  return true;
}

// Gives back a claim: a packet then refused (invalid, too_big: the caller still owns it), or one
// MultiQueueTx passes on to the queue it picked, which claims it again. release: pairs with
// claim_packet()'s acquire (the fields written under this claim, the pick's flow hash and slot).
[[gnu::always_inline]] inline void unclaim_packet(Packet* p) noexcept {
  std::atomic_ref<bool>(p->in_flight).store(false, std::memory_order_release);
}

// The checks in the order that reads the least of a packet that may not be the caller's: the
// pointer, the claim (an in-flight packet's other fields belong to the queue that holds it),
// then the header fields (too_big first: see above). On `queued` the packet is claimed;
// otherwise it is left as it was.
[[gnu::always_inline]] inline SendStatus admission(Packet* p, uint32_t max_frame_len) noexcept {
  if (p == nullptr) [[unlikely]]
    return SendStatus::invalid;
  if (!claim_packet(p)) [[unlikely]]
    return SendStatus::in_flight;
  if (p->pool == nullptr) [[unlikely]] {
    unclaim_packet(p);
    return SendStatus::invalid;
  }
  if (p->len > max_frame_len) [[unlikely]] {
    unclaim_packet(p);
    return SendStatus::too_big;
  }
  if (p->len > p->capacity) [[unlikely]] {
    unclaim_packet(p);
    return SendStatus::invalid;
  }
  return SendStatus::queued;
}

}  // namespace txpath
