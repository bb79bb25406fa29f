// SPDX-License-Identifier: MIT
// Bounded exhaustive model check of the ownership hand-off protocols of the `nolock` and `llist`
// strategies, with txpath's own small checker (tests/support/interleaving_checker.hpp): every
// interleaving of a few senders (and the service thread) is explored, at sequential consistency.
//
// What is modelled.
//  * nolock — Linux's TCQ_F_NOLOCK hand-off as of 2022 (and txpath src/strategy/nolock.cpp, which
//    follows the same spec): the sender pushes its packet into a lock-free ring (one atomic step),
//    then qdisc_run_begin(): `trylock(seqlock)` -> owner; else `test_and_set(MISSED)`: was set ->
//    return; else a second `trylock` -> owner, or return. The owner loops: dequeue (one step); on
//    empty, if MISSED is set: clear it and retry the dequeue once; on empty again: stop. Then
//    qdisc_run_end(): unlock (one step); (full fence) if MISSED is set: __netif_schedule, i.e. set
//    SCHED (separate steps). The service thread (net_tx_action) clears SCHED and runs the same
//    run_begin / loop / run_end, as often as SCHED gets set, concurrently with the senders.
//    An optional quota (dev_tx_weight) ends a run after N packets by setting MISSED, as Linux.
//    Options add txpath's own send() paths (nolock.cpp): the lockless bypass — state_says_empty
//    (read MISSED), run_begin (a loss sets MISSED and falls back to enqueue + run_begin), the
//    owner's re-check of MISSED (as __dev_xmit_skb's under the seqlock: not the ring), then xmit
//    of the own packet (and a run only if MISSED is set by then) or enqueue — and a drain()
//    thread whose quiescence check holds the seqlock without dequeuing (try_own ... run_end).
//  * llist — Linux 6.19 defer list (commit 100dfa74cad9; txpath src/strategy/llist.cpp): load
//    head; CAS(head, first, me), retried with the value the failed CAS saw; a CAS that found a
//    non-empty list makes the sender a follower (return); the sender that pushed onto the EMPTY
//    list leads: lock(root); xchg(head, NULL); reverse and enqueue the batch (or, a single packet
//    into an empty, idle qdisc, the bypass); qdisc_run_begin (RUNNING, under the root lock); the
//    owner loop dequeues under the root lock, releases it around the xmit and re-takes it; the
//    final "qdisc empty" check and run_end happen under the root lock; unlock(root). With a quota
//    the owner schedules a deferred run (SCHED) that the service thread performs.
//  Steps that only touch root-lock-protected data (the batch enqueue + run_begin, run_end after
//  the empty check) are merged into one step with their neighbour under the same lock hold: they
//  commute with every step of every other thread, so no behaviour is lost.
//
// Properties: at every state — at most one thread in the dequeue (owner) section and it holds the
// seqlock/RUNNING; no packet transmitted twice; per-sender order kept; (llist) every submitted
// packet is in exactly one place (defer list, a leader's detached batch, qdisc, an owner's hand,
// or sent). At every terminal state (no thread can move; the service thread is idle with SCHED
// clear) — no deadlock, and nothing stranded: every packet sent, qdisc and defer list empty.
// Also: a quiescent state stays reachable from every state (no endless rescheduling).
//
// The bug being guarded against (docs/architecture.md, "Strategies": nolock and MISSED).
// Before May 2021, NOLOCK qdisc_run_begin() was a bare spin_trylock(seqlock): a sender that
// enqueued after the owner's last (empty) dequeue but before the owner unlocked failed its
// trylock and returned, and its packet sat in the qdisc until the next send — Yunsheng Lin's
// "packet stuck" lost wakeup (Juergen Gross saw minute-long NFS stalls on Xen). The fix added
// __QDISC_STATE_MISSED: the loser sets MISSED and tries again; the owner clears MISSED and
// re-dequeues when it finds the queue empty, and run_end reschedules if MISSED is still set. The
// checker finds that lost wakeup in the pre-2021 protocol
// (ModelCheckNolock.Pre2021TrylockOnlyStrandsAPacket) and in weaker removals of the fix.
//
// What this checker CANNOT see. It explores interleavings of whole atomic steps at sequential
// consistency. The 2022 follow-up (Vincent Ray / Eric Dumazet: replace test_bit + set_bit by one
// test_and_set_bit(MISSED), because a failed spin_trylock() has no acquire semantics, so the
// MISSED test could read a stale value and an skb could linger — "TCP holes") is a weak-memory
// bug: under SC the 2021 test-then-set form is correct, and the checker says so
// (ModelCheckNolock.TestThenSet2021IsCleanUnderSequentialConsistency). Memory-order correctness
// rests on the ordering comments in the strategy sources (TSan sees missing happens-before on
// plain data, not every stale atomic read). Nor does the checker run the real code: the models
// are written by hand from the same spec (a divergence between model and code is a review
// matter), and requeue, stopped device queues, BQL, drops and the burst cap are not modelled.
// Bounds: 2-3 senders with 1-3 packets each (see each test); larger runs grow fast (nolock 3x2
// is ~1.3 million states).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <string>

#include "support/interleaving_checker.hpp"

namespace txpath {
namespace {

using mc::Result;

constexpr int kMaxThreads = 5;  // senders + the service thread (+ nolock's drain checker)
constexpr int kMaxPackets = 6;  // over all senders
constexpr uint8_t kNil = 0xFF;

// name + number, appended (GCC 12's -Wrestrict misfires on `"literal" + std::string` at -O3).
std::string numbered(const char* name, int n) {
  std::string s(name);
  s += std::to_string(n);
  return s;
}

std::string pkt_name(int packets_per_sender, int p) {
  std::string s = numbered("s", p / packets_per_sender);
  s += '#';
  s += std::to_string(p % packets_per_sender);
  return s;
}

// ---------------------------------------------------------------------------------------------
// nolock: the MISSED-bit protocol and its broken variants.

enum class Nolock : uint8_t {
  fixed,                 // Linux 2022 (test_and_set_bit) — the txpath protocol
  test_then_set_2021,    // Linux 2021: test_bit, then set_bit (separate steps)
  pre_2021,              // bare trylock, no MISSED at all
  no_retry_no_recheck,   // MISSED set by losers, but dequeue never clears/retries and run_end
                         // never checks it
  clear_without_retry,   // dequeue clears MISSED on empty but does not dequeue again
  no_run_end_check,      // run_end only unlocks
  never_clear_missed,    // dequeue never clears/retries; run_end checks MISSED (endless runs)
};

struct NolockOptions {
  int quota = 0;         // packets per run (dev_tx_weight); 0 = unlimited
  bool bypass = false;   // txpath's sender-side lockless bypass (see send() in nolock.cpp)
  int drain_checks = 0;  // quiescence checks by drain(): try_own / look / run_end
};

class NolockModel {
 public:
  using Options = NolockOptions;
  NolockModel(Nolock variant, int senders, int packets, Options o = {})
      : v_(variant), senders_(senders), packets_(packets), o_(o) {
    if (senders * packets > kMaxPackets || threads() > kMaxThreads) std::abort();  // test bug
  }

  struct State {
    uint8_t ring[kMaxPackets];  // FIFO contents from ring[0], kNil past ring_len
    uint8_t ring_len;
    uint8_t seqlock;            // 0 = free, else 1 + holder
    uint8_t missed;             // __QDISC_STATE_MISSED
    uint8_t sched;              // __QDISC_STATE_SCHED (a deferred run is pending)
    uint8_t sent[kMaxPackets];  // times transmitted (saturates at 2)
    uint8_t error;              // 0, or 1 + a packet sent before an earlier one of its sender
    uint8_t pc[kMaxThreads];
    uint8_t seq[kMaxThreads];       // sender: index of its current packet
    uint8_t run_sent[kMaxThreads];  // packets transmitted in this run (quota)
    uint8_t bypassing[kMaxThreads];  // run_begin() is the bypass attempt
  };

  int threads() const { return senders_ + 1 + (o_.drain_checks > 0); }
  std::string thread_name(int t) const {
    if (t == service()) return "service";
    if (t == drainer()) return "drain";
    return numbered("sender", t);
  }

  State initial() const {
    State s{};
    for (auto& r : s.ring) r = kNil;
    for (int t = 0; t < kMaxThreads; ++t) s.pc[t] = kDone;
    for (int t = 0; t < senders_; ++t) s.pc[t] = start_pc();
    s.pc[service()] = kWaitSched;
    if (o_.drain_checks > 0) s.pc[drainer()] = kDrainOwn;
    return s;
  }

  bool enabled(const State& s, int t) const {
    switch (s.pc[t]) {
      case kDone: return false;
      case kWaitSched: return s.sched;
      case kDrainOwn: return !s.seqlock;  // SpinWait on try_own(): moves once it can win
      default: return true;
    }
  }
  bool at_rest(const State& s, int t) const { return s.pc[t] == kDone || s.pc[t] == kWaitSched; }

  const char* step(State& s, int t) const {
    switch (s.pc[t]) {
      case kPeekMissed:
        if (s.missed) {
          s.pc[t] = kEnqueue;
          return "state_says_empty: MISSED set -> no bypass";
        }
        s.bypassing[t] = 1;
        s.pc[t] = kTry1;
        return "state_says_empty: MISSED clear -> try run_begin for the bypass";
      case kBypassRecheck:
        s.bypassing[t] = 0;
        if (s.missed) {
          s.ring[s.ring_len++] = me(s, t);
          s.pc[t] = kDequeue;
          return "owner, re-check: MISSED set -> enqueue own packet, run";
        }
        deliver(s, t, me(s, t));
        s.pc[t] = kBypassMissed;
        return "owner, re-check: MISSED clear -> bypass xmit own packet";
      case kBypassMissed:
        if (s.missed) {
          s.pc[t] = kDequeue;
          return "after the bypass: MISSED set -> run";
        }
        s.pc[t] = kUnlock;
        return "after the bypass: MISSED clear -> no run";
      case kDrainOwn:
        s.seqlock = static_cast<uint8_t>(t + 1);
        s.pc[t] = kDrainUnlock;
        return "drain: try_own(seqlock) -> look at the queue";
      case kDrainUnlock:
        s.seqlock = 0;
        s.pc[t] = kDrainCheckMissed;
        return "drain: run_end: unlock(seqlock)";
      case kDrainCheckMissed:
        if (s.missed) {
          s.pc[t] = kDrainSched;
          return "drain: run_end: smp_mb; MISSED set";
        }
        return finish(s, t, "drain: run_end: smp_mb; MISSED clear");
      case kDrainSched:
        s.sched = 1;
        return finish(s, t, "drain: schedule(): set SCHED");
      case kEnqueue:
        s.ring[s.ring_len++] = me(s, t);
        s.pc[t] = kTry1;
        return "enqueue (lock-free ring push)";
      case kTry1:
        if (!s.seqlock) return own(s, t, "run_begin: trylock(seqlock) -> owner");
        if (v_ == Nolock::pre_2021) return finish(s, t, "run_begin: trylock failed -> return");
        s.pc[t] = v_ == Nolock::test_then_set_2021 ? kMissedTest : kMissedTestSet;
        return "run_begin: trylock(seqlock) failed";
      case kMissedTestSet: {
        const bool was = s.missed;
        s.missed = 1;
        if (was) return finish(s, t, "test_and_set(MISSED): was set -> return");
        s.pc[t] = kTry2;
        return "test_and_set(MISSED): was clear";
      }
      case kMissedTest:
        if (s.missed) return finish(s, t, "test_bit(MISSED): set -> return");
        s.pc[t] = kMissedSet;
        return "test_bit(MISSED): clear";
      case kMissedSet:
        s.missed = 1;
        s.pc[t] = kTry2;
        return "set_bit(MISSED)";
      case kTry2:
        if (!s.seqlock) return own(s, t, "run_begin: second trylock -> owner");
        return finish(s, t, "run_begin: second trylock failed -> return");
      case kDequeue:
        if (s.ring_len) return transmit(s, t, "dequeue -> xmit");
        s.pc[t] = retries() ? kReadMissed : kUnlock;
        return "dequeue: empty";
      case kReadMissed:
        if (!s.missed) {
          s.pc[t] = kUnlock;
          return "dequeue: MISSED clear -> stop";
        }
        s.pc[t] = kClearMissed;
        return "dequeue: MISSED set";
      case kClearMissed:
        s.missed = 0;
        s.pc[t] = v_ == Nolock::clear_without_retry ? kUnlock : kDequeueRetry;
        return "dequeue: clear MISSED";
      case kDequeueRetry:
        if (s.ring_len) return transmit(s, t, "dequeue retry -> xmit");
        s.pc[t] = kUnlock;
        return "dequeue retry: empty -> stop";
      case kQuotaSpent:
        if (v_ == Nolock::pre_2021) {
          s.sched = 1;
          s.pc[t] = kUnlock;
          return "quota spent: __netif_schedule (SCHED)";
        }
        s.missed = 1;
        s.pc[t] = kUnlock;
        return "quota spent: set MISSED";
      case kUnlock:
        s.seqlock = 0;
        s.run_sent[t] = 0;
        if (!run_end_checks()) return finish(s, t, "run_end: unlock(seqlock)");
        s.pc[t] = kCheckMissed;
        return "run_end: unlock(seqlock)";
      case kCheckMissed:
        if (!s.missed) return finish(s, t, "run_end: smp_mb; MISSED clear -> done");
        s.pc[t] = kSetSched;
        return "run_end: smp_mb; MISSED set";
      case kSetSched:
        s.sched = 1;
        return finish(s, t, "__netif_schedule: set SCHED");
      case kWaitSched:
        s.sched = 0;
        s.pc[t] = kTry1;
        return "net_tx_action: clear SCHED, qdisc_run";
    }
    return "?";
  }

  std::string invariant(const State& s) const {
    int owners = 0;
    for (int t = 0; t < threads(); ++t) {
      if (s.pc[t] == kDrainUnlock && s.seqlock != t + 1) return "drain without the seqlock";
      if (!in_owner_section(s.pc[t])) continue;
      ++owners;
      if (s.seqlock != t + 1) return thread_name(t) + " dequeues without holding the seqlock";
    }
    if (owners > 1) return "two threads in the dequeue section";
    if (s.seqlock && !in_owner_section(s.pc[s.seqlock - 1]) &&
        s.pc[s.seqlock - 1] != kDrainUnlock)
      return "seqlock held outside the dequeue section";
    for (int p = 0; p < total(); ++p)
      if (s.sent[p] > 1) return "packet " + pkt_name(packets_, p) + " dequeued twice";
    if (s.error) return "packet " + pkt_name(packets_, s.error - 1) + " sent before an earlier one";
    return {};
  }

  std::string quiescent_check(const State& s) const {
    for (int p = 0; p < total(); ++p)
      if (s.sent[p] != 1)
        return "packet " + pkt_name(packets_, p) +
               " stranded in the qdisc: no owner, no run scheduled";
    if (s.ring_len) return "qdisc not empty at quiescence";
    return {};
  }

  std::string describe(const State& s) const {
    std::string d = "ring=[";
    for (int i = 0; i < s.ring_len; ++i) {
      if (i) d += ' ';
      d += pkt_name(packets_, s.ring[i]);
    }
    d += "] seqlock=" + (s.seqlock ? thread_name(s.seqlock - 1) : std::string("free")) +
         " MISSED=" + std::to_string(s.missed) + " SCHED=" + std::to_string(s.sched) + " sent=";
    for (int p = 0; p < total(); ++p) d += std::to_string(s.sent[p]);
    return d;
  }

 private:
  enum Pc : uint8_t {
    kPeekMissed, kEnqueue, kTry1, kMissedTestSet, kMissedTest, kMissedSet, kTry2,
    kBypassRecheck, kBypassMissed, kDequeue, kReadMissed, kClearMissed, kDequeueRetry, kQuotaSpent,
    kUnlock,  // kBypassRecheck..kUnlock: the owner section
    kCheckMissed, kSetSched, kWaitSched, kDrainOwn, kDrainUnlock, kDrainCheckMissed,
    kDrainSched, kDone,
  };
  static bool in_owner_section(uint8_t pc) { return pc >= kBypassRecheck && pc <= kUnlock; }

  Pc start_pc() const { return o_.bypass ? kPeekMissed : kEnqueue; }
  uint8_t me(const State& s, int t) const { return static_cast<uint8_t>(t * packets_ + s.seq[t]); }
  int service() const { return senders_; }
  int drainer() const { return o_.drain_checks > 0 ? senders_ + 1 : -1; }
  int total() const { return senders_ * packets_; }
  bool retries() const {
    return v_ != Nolock::pre_2021 && v_ != Nolock::no_retry_no_recheck &&
           v_ != Nolock::never_clear_missed;
  }
  bool run_end_checks() const {
    return v_ != Nolock::pre_2021 && v_ != Nolock::no_retry_no_recheck &&
           v_ != Nolock::no_run_end_check;
  }

  const char* own(State& s, int t, const char* label) const {
    s.seqlock = static_cast<uint8_t>(t + 1);
    s.pc[t] = s.bypassing[t] ? kBypassRecheck : kDequeue;
    return label;
  }
  // Returns from send() (next packet, or done), or the service thread goes back to waiting; a
  // failed bypass attempt falls back to enqueue + run_begin, as nolock.cpp's send().
  const char* finish(State& s, int t, const char* label) const {
    if (s.bypassing[t]) {
      s.bypassing[t] = 0;
      s.pc[t] = kEnqueue;
    } else if (t == service()) {
      s.pc[t] = kWaitSched;
    } else {
      ++s.seq[t];
      const int limit = t == drainer() ? o_.drain_checks : packets_;
      s.pc[t] = s.seq[t] < limit ? (t == drainer() ? kDrainOwn : start_pc()) : kDone;
    }
    return label;
  }
  // The owner hands packet p to the device (bypass or after a dequeue).
  void deliver(State& s, int t, uint8_t p) const {
    const int first_of_sender = p / packets_ * packets_;
    for (int q = first_of_sender; q < p; ++q)
      if (!s.sent[q] && !s.error) s.error = static_cast<uint8_t>(p + 1);
    if (s.sent[p] < 2) ++s.sent[p];
    ++s.run_sent[t];
    s.pc[t] = o_.quota && s.run_sent[t] >= o_.quota ? kQuotaSpent : kDequeue;
  }
  const char* transmit(State& s, int t, const char* label) const {
    const uint8_t p = s.ring[0];
    for (int i = 1; i < s.ring_len; ++i) s.ring[i - 1] = s.ring[i];
    s.ring[--s.ring_len] = kNil;
    deliver(s, t, p);
    return label;
  }

  Nolock v_;
  int senders_, packets_;
  Options o_;
};

// ---------------------------------------------------------------------------------------------
// llist: the 6.19 defer list and its broken variants.

enum class Llist : uint8_t {
  fixed,                   // Linux 6.19 / txpath llist.cpp
  stale_leader_decision,   // check-then-push: leadership decided by the first load of head, the
                           // push is a separate CAS loop
  store_push,              // check-then-push: load head, then a plain store of head (no CAS)
  detach_load_store,       // the leader detaches with load + store instead of one exchange
  release_before_run_end,  // owner finds the qdisc empty, drops the root lock, THEN run_end
  fast_without_list_check,  // txpath's uncontended path taken on a try_lock alone, without
                            // first seeing the defer list empty
};

// txpath's uncontended path (llist.cpp alone()): load head; empty -> try_lock(root); won and the
// queue idle (qdisc empty, not RUNNING) -> the packet is bypassed under the root lock as a
// leader's batch of one. Any test failing falls back to the push (a won lock on a busy queue is
// released at once, which is one step: nothing happens under it). Without the bypass option the
// idle test is left out and the packet is enqueued and run, a superset of the behaviours.
struct LlistOptions {
  int quota = 0;
  bool bypass = true;
  bool fast = false;
};

class LlistModel {
 public:
  LlistModel(Llist variant, int senders, int packets, LlistOptions o = {})
      : v_(variant), senders_(senders), packets_(packets), quota_(o.quota), bypass_(o.bypass),
        fast_(o.fast || variant == Llist::fast_without_list_check) {
    if (senders * packets > kMaxPackets || threads() > kMaxThreads) std::abort();  // test bug
  }

  struct State {
    uint8_t head;                // defer list head (a packet), kNil = empty
    uint8_t next[kMaxPackets];   // each packet's list link
    uint8_t root;                // root lock: 0 = free, else 1 + holder
    uint8_t running;             // RUNNING (qdisc_run_begin won), under the root lock
    uint8_t sched;               // SCHED
    uint8_t qdisc[kMaxPackets];  // FIFO contents from qdisc[0]
    uint8_t qlen;
    uint8_t pushed[kMaxPackets];  // the sender's push has taken effect
    uint8_t sent[kMaxPackets];    // times transmitted (saturates at 2)
    uint8_t error;                // 0, or 1 + a packet sent before an earlier one of its sender
    uint8_t pc[kMaxThreads];
    uint8_t seq[kMaxThreads];
    uint8_t first[kMaxThreads];     // the CAS's expected head
    uint8_t lead[kMaxThreads];      // stale_leader_decision: decided at the load
    uint8_t list[kMaxThreads];      // detached batch (chain through next[]), kNil = none
    uint8_t hold[kMaxThreads];      // packet being transmitted by the owner
    uint8_t run_sent[kMaxThreads];  // packets transmitted in this run (quota)
  };

  int threads() const { return senders_ + 1; }
  std::string thread_name(int t) const {
    return t == service() ? std::string("service") : numbered("sender", t);
  }

  State initial() const {
    State s{};
    s.head = kNil;
    for (auto& x : s.next) x = kNil;
    for (auto& x : s.qdisc) x = kNil;
    for (int t = 0; t < kMaxThreads; ++t) {
      s.pc[t] = kDone;
      s.first[t] = s.list[t] = s.hold[t] = kNil;
    }
    for (int t = 0; t < senders_; ++t) s.pc[t] = start_pc();
    s.pc[service()] = kWaitSched;
    return s;
  }

  bool enabled(const State& s, int t) const {
    switch (s.pc[t]) {
      case kDone: return false;
      case kWaitSched: return s.sched;
      case kLock:
      case kRelock:
      case kSvcLock: return s.root == 0;
      default: return true;
    }
  }
  bool at_rest(const State& s, int t) const { return s.pc[t] == kDone || s.pc[t] == kWaitSched; }

  const char* step(State& s, int t) const {
    const uint8_t me = static_cast<uint8_t>(t * packets_ + s.seq[t]);
    switch (s.pc[t]) {
      case kFastLoad:
        if (s.head != kNil) {
          s.pc[t] = kLoadHead;
          return "alone? load head: not empty -> push";
        }
        s.pc[t] = kFastTry;
        return "alone? load head: empty";
      case kFastTry:
        if (s.root) {
          s.pc[t] = kLoadHead;
          return "alone? try_lock(root) failed -> push";
        }
        if (bypass_ && (s.qlen || s.running)) {  // the lock taken and dropped: no effect
          s.pc[t] = kLoadHead;
          return "alone? try_lock(root) won, queue busy -> unlock, push";
        }
        s.root = static_cast<uint8_t>(t + 1);
        s.list[t] = me;  // a batch of one, as a leader's
        s.next[me] = kNil;
        s.pushed[me] = 1;  // submitted
        s.pc[t] = kEnqueueBatch;
        return "alone: try_lock(root) won, queue idle";
      case kLoadHead:
        s.first[t] = s.head;
        if (v_ == Llist::stale_leader_decision) s.lead[t] = s.head == kNil;
        s.pc[t] = v_ == Llist::store_push ? kStore : kCas;
        return "load head (the CAS's first guess)";
      case kCas:
        if (s.head != s.first[t]) {
          s.first[t] = s.head;
          return "CAS(head) failed: retry with the value seen";
        }
        s.next[me] = s.first[t];
        s.head = me;
        s.pushed[me] = 1;
        if (v_ == Llist::stale_leader_decision) {
          if (s.lead[t]) return to_lock(s, t, "CAS(head) pushed; load said empty -> lead");
          return finish(s, t, "CAS(head) pushed; load said non-empty -> follower, return");
        }
        if (s.first[t] == kNil) return to_lock(s, t, "CAS(head) pushed onto EMPTY list -> lead");
        return finish(s, t, "CAS(head) pushed onto non-empty list -> follower, return");
      case kStore:
        s.next[me] = s.first[t];
        s.head = me;
        s.pushed[me] = 1;
        if (s.first[t] == kNil) return to_lock(s, t, "store head (no CAS); was empty -> lead");
        return finish(s, t, "store head (no CAS); was non-empty -> follower, return");
      case kLock:
        s.root = static_cast<uint8_t>(t + 1);
        s.pc[t] = v_ == Llist::detach_load_store ? kDetachLoad : kExchange;
        return "lock(root)";
      case kExchange:
        s.list[t] = s.head;
        s.head = kNil;
        s.pc[t] = kEnqueueBatch;
        return "xchg(head, NULL): detach the list";
      case kDetachLoad:
        s.list[t] = s.head;
        s.pc[t] = kDetachStore;
        return "detach: load head";
      case kDetachStore:
        s.head = kNil;
        s.pc[t] = kEnqueueBatch;
        return "detach: store head = NULL";
      case kEnqueueBatch: return enqueue_batch(s, t);
      case kDequeue:
        if (s.qlen) {
          s.hold[t] = s.qdisc[0];
          for (int i = 1; i < s.qlen; ++i) s.qdisc[i - 1] = s.qdisc[i];
          s.qdisc[--s.qlen] = kNil;
          s.pc[t] = kXmit;
          return "dequeue (root lock held)";
        }
        if (v_ == Llist::release_before_run_end) {
          s.pc[t] = kUnlockKeepRunning;
          return "dequeue: empty";
        }
        s.running = 0;
        s.pc[t] = kUnlockRoot;
        return "dequeue: empty -> run_end (root lock held)";
      case kXmit: {
        s.root = 0;
        const uint8_t p = s.hold[t];
        s.hold[t] = kNil;
        const int first_of_sender = p / packets_ * packets_;
        for (int q = first_of_sender; q < p; ++q)
          if (!s.sent[q] && !s.error) s.error = static_cast<uint8_t>(p + 1);
        if (s.sent[p] < 2) ++s.sent[p];
        ++s.run_sent[t];
        s.pc[t] = kRelock;
        return "unlock(root); xmit";
      }
      case kRelock:
        s.root = static_cast<uint8_t>(t + 1);
        s.pc[t] = quota_ && s.run_sent[t] >= quota_ ? kQuotaSched : kDequeue;
        return "re-lock(root)";
      case kQuotaSched:
        s.sched = 1;
        s.running = 0;
        s.pc[t] = kUnlockRoot;
        return "quota spent: __netif_schedule (SCHED); run_end";
      case kUnlockRoot:
        s.root = 0;
        s.run_sent[t] = 0;
        return finish(s, t, "unlock(root)");
      case kUnlockKeepRunning:
        s.root = 0;
        s.pc[t] = kLateRunEnd;
        return "unlock(root) with RUNNING still set";
      case kLateRunEnd:
        s.running = 0;
        s.run_sent[t] = 0;
        return finish(s, t, "run_end without the root lock");
      case kWaitSched:
        s.sched = 0;
        s.pc[t] = kSvcLock;
        return "net_tx_action: clear SCHED";
      case kSvcLock:
        s.root = static_cast<uint8_t>(t + 1);
        if (s.running) {
          s.pc[t] = kUnlockRoot;
          return "lock(root); run_begin failed";
        }
        s.running = 1;
        s.pc[t] = kDequeue;
        return "lock(root); run_begin -> owner";
    }
    return "?";
  }

  std::string invariant(const State& s) const {
    int owners = 0;
    for (int t = 0; t < threads(); ++t) {
      if (holds_root(s.pc[t]) && s.root != t + 1)
        return thread_name(t) + " is in a root-locked section without the lock";
      if (!is_owner(s.pc[t])) continue;
      ++owners;
      if (!s.running) return thread_name(t) + " dequeues without RUNNING";
    }
    if (owners > 1) return "two owners in the dequeue section";
    // Every submitted packet is in exactly one place.
    uint8_t where[kMaxPackets] = {};
    auto count_chain = [&](uint8_t p) {
      for (int n = 0; p != kNil && n <= kMaxPackets; ++n, p = s.next[p]) ++where[p];
    };
    count_chain(s.head);
    for (int t = 0; t < threads(); ++t) {
      // A load+store detach owns its batch only once the store is done.
      if (s.pc[t] != kDetachStore) count_chain(s.list[t]);
      if (s.hold[t] != kNil) ++where[s.hold[t]];
    }
    for (int i = 0; i < s.qlen; ++i) ++where[s.qdisc[i]];
    for (int p = 0; p < total(); ++p) {
      if (s.sent[p] > 1) return "packet " + pkt_name(packets_, p) + " sent twice";
      if (!s.pushed[p]) continue;
      const int places = where[p] + s.sent[p];
      if (places == 0) return "packet " + pkt_name(packets_, p) + " lost (in no list, not sent)";
      if (places > 1) return "packet " + pkt_name(packets_, p) + " in two places at once";
    }
    if (s.error) return "packet " + pkt_name(packets_, s.error - 1) + " sent before an earlier one";
    return {};
  }

  std::string quiescent_check(const State& s) const {
    if (s.head != kNil)
      return "packet " + pkt_name(packets_, s.head) + " stranded on the defer list (no leader)";
    if (s.qlen)
      return "packet " + pkt_name(packets_, s.qdisc[0]) + " stranded in the qdisc (no owner)";
    for (int p = 0; p < total(); ++p)
      if (s.sent[p] != 1) return "packet " + pkt_name(packets_, p) + " never sent";
    if (s.running) return "RUNNING left set with no owner";
    return {};
  }

  std::string describe(const State& s) const {
    std::string d = "defer=[";
    for (uint8_t p = s.head, n = 0; p != kNil && n <= kMaxPackets; p = s.next[p], ++n) {
      if (n) d += ' ';
      d += pkt_name(packets_, p);
    }
    d += "] qdisc=[";
    for (int i = 0; i < s.qlen; ++i) {
      if (i) d += ' ';
      d += pkt_name(packets_, s.qdisc[i]);
    }
    d += "] root=" + (s.root ? thread_name(s.root - 1) : std::string("free")) +
         " RUNNING=" + std::to_string(s.running) + " SCHED=" + std::to_string(s.sched) + " sent=";
    for (int p = 0; p < total(); ++p) d += std::to_string(s.sent[p]);
    return d;
  }

 private:
  enum Pc : uint8_t {
    kFastLoad, kFastTry, kLoadHead, kCas, kStore, kLock, kExchange, kDetachLoad, kDetachStore, kEnqueueBatch,
    kDequeue, kXmit, kRelock, kQuotaSched, kUnlockKeepRunning, kLateRunEnd,  // owner (RUNNING)
    kUnlockRoot, kWaitSched, kSvcLock, kDone,
  };
  static bool is_owner(uint8_t pc) { return pc >= kDequeue && pc <= kLateRunEnd; }
  static bool holds_root(uint8_t pc) {
    return (pc >= kExchange && pc <= kDequeue) || pc == kXmit || pc == kQuotaSched ||
           pc == kUnlockKeepRunning || pc == kUnlockRoot;
  }

  int service() const { return senders_; }
  int total() const { return senders_ * packets_; }
  Pc start_pc() const {
    if (!fast_) return kLoadHead;
    return v_ == Llist::fast_without_list_check ? kFastTry : kFastLoad;
  }

  const char* to_lock(State& s, int t, const char* label) const {
    s.pc[t] = kLock;
    return label;
  }
  const char* finish(State& s, int t, const char* label) const {
    s.first[t] = kNil;
    s.lead[t] = 0;
    if (t == service()) {
      s.pc[t] = kWaitSched;
    } else {
      ++s.seq[t];
      s.pc[t] = s.seq[t] < packets_ ? start_pc() : kDone;
    }
    return label;
  }

  // Root lock held: reverse the detached LIFO chain into arrival order, then either the
  // single-packet bypass or enqueue everything and qdisc_run_begin.
  const char* enqueue_batch(State& s, int t) const {
    uint8_t batch[kMaxPackets];
    int n = 0;
    for (uint8_t p = s.list[t]; p != kNil && n < kMaxPackets;) {
      const uint8_t nx = s.next[p];
      batch[n++] = p;
      s.next[p] = kNil;  // skb_mark_not_on_list
      p = nx;
    }
    s.list[t] = kNil;
    if (n == 1 && bypass_ && s.qlen == 0 && !s.running) {
      s.running = 1;
      s.hold[t] = batch[0];
      s.pc[t] = kXmit;
      return "single packet, empty idle qdisc: run_begin + bypass";
    }
    for (int i = n - 1; i >= 0; --i) s.qdisc[s.qlen++] = batch[i];
    if (s.running) {
      s.pc[t] = kUnlockRoot;
      return "enqueue batch; run_begin failed (owner busy)";
    }
    s.running = 1;
    s.pc[t] = kDequeue;
    return "enqueue batch; run_begin -> owner";
  }

  Llist v_;
  int senders_, packets_, quota_;
  bool bypass_;
  bool fast_;
};

// ---------------------------------------------------------------------------------------------
// Tiny models that check the checker itself.

// Two threads increment a counter; `atomic` = one fetch_add step, else load then store.
class CounterModel {
 public:
  explicit CounterModel(bool atomic) : atomic_(atomic) {}
  struct State {
    uint8_t value;
    uint8_t pc[2];
    uint8_t tmp[2];
  };
  int threads() const { return 2; }
  std::string thread_name(int t) const { return numbered("t", t); }
  State initial() const { return State{}; }
  bool enabled(const State& s, int t) const { return s.pc[t] < 2; }
  bool at_rest(const State& s, int t) const { return s.pc[t] == 2; }
  const char* step(State& s, int t) const {
    if (atomic_) {
      ++s.value;
      s.pc[t] = 2;
      return "fetch_add";
    }
    if (s.pc[t] == 0) {
      s.tmp[t] = s.value;
      s.pc[t] = 1;
      return "load";
    }
    s.value = static_cast<uint8_t>(s.tmp[t] + 1);
    s.pc[t] = 2;
    return "store";
  }
  std::string invariant(const State&) const { return {}; }
  std::string quiescent_check(const State& s) const {
    return s.value == 2 ? std::string() : "lost update: value " + std::to_string(s.value);
  }
  std::string describe(const State& s) const { return "value=" + std::to_string(s.value); }

 private:
  bool atomic_;
};

// Two threads take two locks; `ordered` = same order, else opposite orders (can deadlock).
class TwoLocksModel {
 public:
  explicit TwoLocksModel(bool ordered) : ordered_(ordered) {}
  struct State {
    uint8_t lock[2];
    uint8_t pc[2];
  };
  int threads() const { return 2; }
  std::string thread_name(int t) const { return numbered("t", t); }
  State initial() const { return State{}; }
  int nth(int t, int k) const { return ordered_ || t == 0 ? k : 1 - k; }
  bool enabled(const State& s, int t) const {
    if (s.pc[t] >= 3) return false;
    return s.pc[t] == 2 || !s.lock[nth(t, s.pc[t])];
  }
  bool at_rest(const State& s, int t) const { return s.pc[t] == 3; }
  const char* step(State& s, int t) const {
    if (s.pc[t] == 2) {
      s.lock[0] = s.lock[1] = 0;
      s.pc[t] = 3;
      return "unlock both";
    }
    s.lock[nth(t, s.pc[t])] = 1;
    return s.pc[t]++ == 0 ? "lock first" : "lock second";
  }
  std::string invariant(const State&) const { return {}; }
  std::string quiescent_check(const State&) const { return {}; }
  std::string describe(const State& s) const {
    return "locks=" + std::to_string(s.lock[0]) + std::to_string(s.lock[1]);
  }

 private:
  bool ordered_;
};

// ---------------------------------------------------------------------------------------------

void report(const char* what, const Result& r) {
  std::cout << "[ model    ] " << what << ": " << r.format() << "\n";
}

void expect_clean(const char* what, const Result& r) {
  report(what, r);
  EXPECT_TRUE(r.ok) << r.format();
  EXPECT_FALSE(r.bound_hit);
  // Sanity: the search really explored something, and reached quiescence.
  EXPECT_GT(r.states, 100u) << "suspiciously small state space";
  EXPECT_GT(r.terminal_states, 0u);
}

void expect_violation(const char* what, const Result& r,
                      std::initializer_list<const char*> any_of) {
  report(what, r);
  ASSERT_FALSE(r.ok) << "the checker found no violation in a broken protocol";
  EXPECT_FALSE(r.bound_hit) << r.format();
  EXPECT_FALSE(r.trace.empty());
  bool matched = false;
  for (const char* m : any_of) matched = matched || r.violation.find(m) != std::string::npos;
  EXPECT_TRUE(matched) << "unexpected violation kind: " << r.violation;
}

// Sanitizer builds run the checker several times slower, so the largest clean runs (1-2 x 10^5
// states each) are Release-only. Everything else — every broken variant, and the fixed
// protocols at 2x1, 2x2, 3x1, with and without quota/bypass/drain — runs in every build.
// (nolock 3x2 is ~1.3 million states, a few seconds: beyond this test's budget.)
#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
constexpr bool kLargeBounds = false;
#else
constexpr bool kLargeBounds = true;
#endif

TEST(ModelChecker, FindsLostUpdateOfNonAtomicIncrement) {
  const Result bad = mc::check(CounterModel(false));
  report("counter load+store", bad);
  ASSERT_FALSE(bad.ok);
  EXPECT_NE(bad.violation.find("lost update"), std::string::npos);
  EXPECT_EQ(bad.trace.size(), 4u);  // load, load, store, store in some order
  const Result good = mc::check(CounterModel(true));
  EXPECT_TRUE(good.ok) << good.format();
  EXPECT_EQ(good.states, 4u);  // (0,0) (1,0) (0,1) (1,1) finished-thread sets
}

TEST(ModelChecker, FindsDeadlockOfOppositeLockOrder) {
  const Result bad = mc::check(TwoLocksModel(false));
  report("two locks, opposite order", bad);
  ASSERT_FALSE(bad.ok);
  EXPECT_NE(bad.violation.find("deadlock"), std::string::npos);
  const Result good = mc::check(TwoLocksModel(true));
  EXPECT_TRUE(good.ok) << good.format();
}

// --- nolock -----------------------------------------------------------------------------------

TEST(ModelCheckNolock, FixedProtocolNeverStrandsTwoSenders) {
  expect_clean("nolock fixed 2x1", mc::check(NolockModel(Nolock::fixed, 2, 1)));
  expect_clean("nolock fixed 2x2", mc::check(NolockModel(Nolock::fixed, 2, 2)));
}

TEST(ModelCheckNolock, FixedProtocolNeverStrandsThreeSenders) {
  expect_clean("nolock fixed 3x1", mc::check(NolockModel(Nolock::fixed, 3, 1)));
}

TEST(ModelCheckNolock, FixedProtocolWithQuotaHandsOffToServiceThread) {
  // quota 1: every run ends after one packet by setting MISSED; run_end reschedules.
  expect_clean("nolock fixed 2x2 quota=1",
               mc::check(NolockModel(Nolock::fixed, 2, 2, {.quota = 1})));
  expect_clean("nolock fixed 3x1 quota=1",
               mc::check(NolockModel(Nolock::fixed, 3, 1, {.quota = 1})));
  if (kLargeBounds)
    expect_clean("nolock fixed 2x3 quota=1",
                 mc::check(NolockModel(Nolock::fixed, 2, 3, {.quota = 1})));
}

TEST(ModelCheckNolock, TxpathBypassAndDrainCheckKeepTheProtocol) {
  // txpath's send(): the lockless bypass (state_says_empty, run_begin — whose failure sets
  // MISSED —, MISSED re-checked as owner, a run after the bypass only if MISSED is set, else
  // enqueue), and drain()'s quiescence check, which holds the
  // seqlock without dequeuing (try_own ... run_end, scheduling if MISSED is set).
  expect_clean("nolock txpath bypass 2x2",
               mc::check(NolockModel(Nolock::fixed, 2, 2, {.bypass = true})));
  expect_clean("nolock txpath bypass 3x1",
               mc::check(NolockModel(Nolock::fixed, 3, 1, {.bypass = true})));
  expect_clean("nolock txpath bypass 2x2 quota=1",
               mc::check(NolockModel(Nolock::fixed, 2, 2, {.quota = 1, .bypass = true})));
  expect_clean("nolock txpath bypass+drain 2x1",
               mc::check(NolockModel(Nolock::fixed, 2, 1, {.bypass = true, .drain_checks = 1})));
  if (kLargeBounds) {
    expect_clean(
        "nolock txpath bypass+drain 2x2",
        mc::check(NolockModel(Nolock::fixed, 2, 2, {.bypass = true, .drain_checks = 1})));
  }
}

TEST(ModelCheckNolock, Pre2021TrylockOnlyStrandsAPacket) {
  // The 2021 "packet stuck": enqueue after the owner's last empty dequeue, trylock fails while
  // the owner still holds the seqlock, the owner unlocks and nobody looks at the ring again.
  for (auto [s, p] : {std::pair{2, 1}, std::pair{2, 2}, std::pair{3, 1}}) {
    const std::string what = "nolock pre-2021 " + std::to_string(s) + "x" + std::to_string(p);
    expect_violation(what.c_str(), mc::check(NolockModel(Nolock::pre_2021, s, p)),
                     {"stranded"});
  }
}

TEST(ModelCheckNolock, MissedWithoutRetryOrRecheckStrandsAPacket) {
  expect_violation("nolock no retry + no run_end check 2x1",
                   mc::check(NolockModel(Nolock::no_retry_no_recheck, 2, 1)), {"stranded"});
}

TEST(ModelCheckNolock, EachHalfOfTheOwnerSideIsNeeded) {
  // Clearing MISSED without the second dequeue: the loser's packet arrived before it set MISSED,
  // the owner clears the bit and stops; run_end then sees nothing.
  expect_violation("nolock clear MISSED without retry 2x1",
                   mc::check(NolockModel(Nolock::clear_without_retry, 2, 1)), {"stranded"});
  // Without run_end's MISSED check, the window between the owner's last empty dequeue (MISSED
  // clear at that time) and its unlock is open again.
  expect_violation("nolock no run_end check 2x1",
                   mc::check(NolockModel(Nolock::no_run_end_check, 2, 1)), {"stranded"});
  // Never clearing MISSED strands nothing — run_end always reschedules — but the deferred run
  // reschedules itself forever (the CPU-burn class Michal Kubecek reported in 2021).
  expect_violation("nolock never clear MISSED 2x1",
                   mc::check(NolockModel(Nolock::never_clear_missed, 2, 1)), {"livelock"});
}

TEST(ModelCheckNolock, TestThenSet2021IsCleanUnderSequentialConsistency) {
  // Not a bug under SC: the 2022 fix (one test_and_set_bit) repaired a weak-memory problem (a
  // failed trylock has no acquire semantics), which an interleaving checker cannot see.
  expect_clean("nolock 2021 test_bit+set_bit 2x2",
               mc::check(NolockModel(Nolock::test_then_set_2021, 2, 2)));
  expect_clean("nolock 2021 test_bit+set_bit 3x1",
               mc::check(NolockModel(Nolock::test_then_set_2021, 3, 1)));
}

// --- llist ------------------------------------------------------------------------------------

TEST(ModelCheckLlist, FixedProtocolNeverStrandsOrDuplicates) {
  expect_clean("llist fixed 2x2", mc::check(LlistModel(Llist::fixed, 2, 2)));
  expect_clean("llist fixed 3x1", mc::check(LlistModel(Llist::fixed, 3, 1)));
  expect_clean("llist fixed 3x2", mc::check(LlistModel(Llist::fixed, 3, 2)));
  expect_clean("llist fixed 2x2 no bypass",
               mc::check(LlistModel(Llist::fixed, 2, 2, {.bypass = false})));
}

TEST(ModelCheckLlist, TxpathUncontendedPathKeepsTheProtocol) {
  // llist.cpp alone(): list empty and try_lock(root) won -> rootlock's path, no push.
  expect_clean("llist txpath alone 2x2", mc::check(LlistModel(Llist::fixed, 2, 2, {.fast = true})));
  expect_clean("llist txpath alone 3x1", mc::check(LlistModel(Llist::fixed, 3, 1, {.fast = true})));
  expect_clean("llist txpath alone 2x2 quota=1",
               mc::check(LlistModel(Llist::fixed, 2, 2, {.quota = 1, .fast = true})));
  if (kLargeBounds) {
    expect_clean("llist txpath alone 3x2",
                 mc::check(LlistModel(Llist::fixed, 3, 2, {.fast = true})));
  }
}

TEST(ModelCheckLlist, UncontendedPathWithoutTheListCheckReorders) {
  // A third sender holds the root lock; the other two fail their try_lock and push (the first
  // leads, the second follows). The holder unlocks, and the follower's next packet wins the
  // try_lock before the leader takes the lock: it bypasses its own earlier packet.
  expect_violation("llist alone without list check 3x2",
                   mc::check(LlistModel(Llist::fast_without_list_check, 3, 2)),
                   {"sent before an earlier one"});
}

TEST(ModelCheckLlist, FixedProtocolWithQuotaHandsOffToServiceThread) {
  expect_clean("llist fixed 2x2 quota=1",
               mc::check(LlistModel(Llist::fixed, 2, 2, {.quota = 1})));
  expect_clean("llist fixed 3x1 quota=1", mc::check(LlistModel(Llist::fixed, 3, 1, {.quota = 1})));
  if (kLargeBounds) {
    expect_clean("llist fixed 3x2 quota=1", mc::check(LlistModel(Llist::fixed, 3, 2, {.quota = 1})));
    expect_clean("llist fixed 2x3 quota=1", mc::check(LlistModel(Llist::fixed, 2, 3, {.quota = 1})));
  }
}

TEST(ModelCheckLlist, LeadershipDecidedByALoadStrandsThePacket) {
  // Check-then-push: the list looked non-empty, the leader detached it, the CAS retry then
  // pushed onto the EMPTY list — and the sender still believes it is a follower.
  expect_violation("llist stale leader decision 2x1",
                   mc::check(LlistModel(Llist::stale_leader_decision, 2, 1)),
                   {"stranded on the defer list"});
}

TEST(ModelCheckLlist, PushWithoutCasLosesOrResurrectsAPacket) {
  // load head; store head = me. Two pushers that loaded the same head overwrite each other
  // (one packet lost), or — the first interleaving the search meets — a pusher whose load is
  // stale links its packet to a packet the leader has already detached and SENT, putting it on
  // the list again (in the kernel: a use-after-free and a second transmit).
  expect_violation("llist store push 2x1", mc::check(LlistModel(Llist::store_push, 2, 1)),
                   {"lost", "two places", "sent twice"});
}

TEST(ModelCheckLlist, DetachWithoutExchangeLosesAPacket) {
  expect_violation("llist load+store detach 2x1",
                   mc::check(LlistModel(Llist::detach_load_store, 2, 1)), {"lost"});
}

TEST(ModelCheckLlist, RunEndAfterDroppingRootLockStrandsAPacket) {
  // The owner's final empty check and run_end must be one root-lock hold: in between, a leader
  // enqueues, fails run_begin (RUNNING still set) and leaves.
  expect_violation("llist run_end after unlock 2x1",
                   mc::check(LlistModel(Llist::release_before_run_end, 2, 1)),
                   {"stranded in the qdisc"});
}

}  // namespace
}  // namespace txpath
