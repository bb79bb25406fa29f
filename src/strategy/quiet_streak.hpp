// SPDX-License-Identifier: MIT
// QuietStreak: "has this queue had one sender lately?", the switch of the uncontended paths of
// llist and sharded (their send() step that takes the root lock itself, as rootlock, instead of
// handing the packet over). A hand-off that found nobody else's packet (an llist leader whose
// batch is its own packet alone, a sharded drainer pass that found no pushed packet) is one more
// quiet step; anything that shows another sender (a lost try_lock, a busy queue, a batch with
// others' packets) ends the streak. The path runs only after kQuietAfter quiet steps in a row:
// a lone sender gets there after 64 packets; with senders that contend it stays off, since there
// a sender that takes the root lock and RUNNING itself gets preempted holding them and makes the
// leader or drainer wait (measured: sharded at 16 senders on 2 cores fell from 5-15 to 2-8 Mpps,
// llist on nic at 2 senders from 1.00x to 0.84x busylock's Mpps).
//
// One word, written only when it changes: read by every sender, so contended senders that keep
// finding it 0 do not bounce its line. All relaxed: a heuristic that orders nothing (the path it
// enables rests on the root lock's try_lock and the strategy's own order argument); a lost race
// between a reset and a step only delays the path or lets one more packet try it.
#pragma once

#include <atomic>
#include <cstdint>

namespace txpath {

class QuietStreak {
 public:
  static constexpr uint32_t kQuietAfter = 64;

  bool quiet() const noexcept {
    return n_.load(std::memory_order_relaxed) >= kQuietAfter;  // relaxed: pairs with nothing
  }
  // Another sender showed itself.
  void disturbed() noexcept {
    // relaxed, both: pair with nothing (header comment); the load keeps the line shared.
    if (n_.load(std::memory_order_relaxed) != 0) n_.store(0, std::memory_order_relaxed);
  }
  // A hand-off that found nobody else. One writer at a time (under the root lock): a load and a
  // store.
  void quiet_step() noexcept {
    const uint32_t q = n_.load(std::memory_order_relaxed);  // relaxed: pairs with nothing
    if (q < kQuietAfter && allowed_) n_.store(q + 1, std::memory_order_relaxed);  // relaxed: same
  }
  // Tests only, before the queue is used: false keeps the streak at 0, so the uncontended path
  // never runs (tests of the hand-off machinery). Checked on the step, not on every packet.
  void allow(bool on) noexcept {
    allowed_ = on;
    if (!on) n_.store(0, std::memory_order_relaxed);  // relaxed: before any sender
  }

 private:
  std::atomic<uint32_t> n_{0};
  bool allowed_ = true;  // see allow()
};

}  // namespace txpath
