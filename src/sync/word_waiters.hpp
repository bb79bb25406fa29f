// SPDX-License-Identifier: MIT
// Shared by the queue locks whose state is one 64-bit word (mcs_lock.hpp, cna_lock.hpp):
//  * WordWaiters: lets threads wait, spin-then-park, for a condition on that word. libstdc++
//    cannot futex-wait on a 64-bit atomic directly (it falls back to a process-wide shared slot
//    that every such wait hashes into), so waiters park on a 32-bit companion counter that the
//    releasing thread bumps and notifies;
//  * encode_tail/decode_tail: a 64-byte aligned queue node stored in the word's upper bits,
//    leaving the low 6 bits for flags.
//
// Memory ordering: wake() is a seq_cst fetch_add — its release half orders the caller's earlier
// release of the word before it, pairing with the acquire load of the counter inside wait() (a
// waiter that sees the new count sees the released word); seq_cst and an RMW, not a release
// store, so that notify_all()'s read of libstdc++'s waiter count cannot miss a waiter that
// registered meanwhile (park.hpp). wait() reads the word with acquire, pairing with the release
// RMW on the word that made done() true.
#pragma once

#include <atomic>
#include <cstdint>

#include "sync/park.hpp"

namespace txpath {

inline constexpr uint64_t kTailMask = ~uint64_t{63};

template <class Node>
uint64_t encode_tail(Node* n) noexcept {
  static_assert(alignof(Node) >= 64, "the tail encoding needs the low 6 address bits clear");
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(n));
}

template <class Node>
Node* decode_tail(uint64_t v) noexcept {
  return reinterpret_cast<Node*>(static_cast<uintptr_t>(v & kTailMask));
}

class WordWaiters {
 public:
  // After the word was released in a way a waiter may be waiting for. Off the fast path.
  [[gnu::noinline]] void wake() noexcept {
    count_.fetch_add(1, std::memory_order_seq_cst);  // seq_cst: see the header comment
    count_.notify_all();
  }

  // Spins, then parks on the counter (or yields), until done(word) holds; returns that word.
  template <class Done>
  uint64_t wait(const std::atomic<uint64_t>& word, Done done) noexcept {
    uint64_t w = 0;
    spin_then_park(count_, [&](uint32_t) {
      // acquire: pairs with the release RMW on the word that made done() true.
      w = word.load(std::memory_order_acquire);
      return done(w);
    });
    return w;
  }

 private:
  std::atomic<uint32_t> count_{0};
};

}  // namespace txpath
