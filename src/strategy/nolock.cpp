// SPDX-License-Identifier: MIT
// Strategy `nolock`: Linux TCQ_F_NOLOCK — John Fastabend's lockless qdisc series (v4.16, key
// commit 6b3ba9146fe6 "net: sched: allow qdiscs to handle locking"), as fixed by Yunsheng Lin's
// 2021 STATE_MISSED / DRAINING series (lost wakeups; Michal Kubecek's endless rescheduling with
// a stopped queue), the 2022 Vincent Ray / Eric Dumazet test_and_set_bit(MISSED) form of
// qdisc_run_begin(), and Yunsheng Lin's 2021 re-done lockless bypass (after ba27b4cdaaa6 was
// reverted for reordering). Semantics in docs/architecture.md ("Strategies"); no code copied.
//
// There is no root lock. Senders enqueue into the lockless qdisc (qdisc/fifo_nolock.hpp: one
// PtrRing per band, each with its own producer spinlock) and then try to become the owner of the
// driver loop through the qdisc's seqlock, taken only with trylock:
//   send():  admit; if the qdisc can bypass and LOOKS empty (no MISSED/DRAINING and an empty
//            requeue list, read without any lock; the rings are not read) and run_begin() wins:
//            re-check the rings exactly (we are the ring consumer now); still empty -> transmit
//            directly (the driver loop's bypass path), and run only if MISSED was set meanwhile;
//            else enqueue and run as owner.
//            Otherwise enqueue (a full ring drops; the victim is freed at once, no lock held),
//            then run_begin(); if won, run the driver loop. If lost AND our packet was dropped
//            for want of room, wait (spin, then park) until the owner has sent one more batch:
//            a userspace addition (QueueBase::wait_for_tx_progress). The kernel's owner runs
//            with preemption off; ours can be descheduled, and with more senders than cores the
//            others would otherwise spin enqueue->drop while it waits for a core (measured: 91%
//            drops, 0.1 Mpps at 16 senders on 2 cores).
//   send_burst(): the burst into the rings with one producer-lock round per run of packets for
//            one band (NolockFifoQdisc::enqueue_burst), then one run_begin() and run, as send();
//            a burst of one takes send()'s path.
//   run:     QueueBase::run() with a no-op root lock: the seqlock stays held across the device
//            calls (root_lock is NULL for NOLOCK qdiscs). If the loop ended on a stopped device
//            queue, park_while_stopped() swaps MISSED for DRAINING (the device wake schedules the
//            next run). Then run_end(): unlock, full fence, MISSED set -> schedule().
//   deferred_run() (service thread, net_tx_action): run_begin / run / run_end.
//   quiescent() (drain): take the seqlock with try_own() in a SpinWait loop, check, release
//            with run_end() (scheduling a run if a sender lost the trylock meanwhile).
//
// Invariants:
//  * one owner at a time (the seqlock holder) dequeues, touches the requeue list, calls the
//    device and writes the driver-loop counters; QueueBase's RUNNING flag and `runs` counter are
//    set/cleared only inside the seqlock (QueueBase::run_begin/run_end play the flag's role;
//    quiescent() takes the seqlock without counting a run);
//  * a packet is in a ring, in the owner's batch, in the requeue list or with the device —
//    never two; the owner holds the seqlock from dequeue until the batch is sent or requeued;
//  * bypass only when, under the seqlock, every ring and the requeue list are empty: a sender's
//    own earlier packet is then sent or with the device, so per-sender order holds (the bypass
//    reverted in 2020 reordered because its emptiness test was not re-checked by the owner);
//  * nothing stranded: see fifo_nolock.hpp (MISSED protocol) and engine/driver_loop.hpp (quota,
//    requeue and device wake each leave a scheduled run);
//  * drop victims are freed with no lock held (before run_begin, or after run_end).
//
// Memory ordering: every atomic here is the qdisc's (seqlock, MISSED/DRAINING, rings, per-thread
// statistics) or QueueBase's, each documented where declared. The no-op root lock orders
// nothing: the seqlock's acquire (run_begin/try_own) and release (run_end) order one owner's
// writes to the requeue list and single-writer counters before the next owner's reads.
//
// Shared cache lines per packet, uncontended sender: the band ring's producer line and slot
// line, MISSED state (read), the seqlock (CAS); contended sender: + one RMW on MISSED. The
// owner: ring consumer line, slot lines, MISSED (read when a scan comes up empty).
//
// Statistics: stats() adds the qdisc's per-thread counters (lockless_stats()) to QueueBase's
// (bypass bytes/packets, requeues, sent ...): qlen, backlog, drops and `queued` are exact at
// quiescent points. The --lock option does not apply (lock_kind "-"); lock_waits/lock_wait_ns
// report the rings' producer-lock contention.
#include <algorithm>
#include <memory>

#include "base/cpu_relax.hpp"
#include "qdisc/fifo_nolock.hpp"
#include "strategy/factories.hpp"
#include "strategy/serialize.hpp"

namespace txpath {

namespace {

class NolockQueue : public SerializedQueue {
 public:
  NolockQueue(Device& device, std::unique_ptr<NolockFifoQdisc> qdisc, const TxQueueConfig& config)
      : SerializedQueue(device, std::move(qdisc), config, "nolock", "-") {
    enable_tx_progress_waits();  // its senders wait for progress after a drop (send())
  }

  SendStatus send(Packet* p) noexcept override {
    if (const SendStatus refused = admit(p); refused != SendStatus::queued) [[unlikely]]
      return refused;
    return send_admitted(p);
  }

  // The burst: enqueued into the lockless rings (NolockFifoQdisc::enqueue_burst: one
  // producer-lock round per run of one band), then ONE run_begin() and driver-loop run for all
  // of it, as send() does for one packet. A burst of one takes send()'s path (bypass included).
  // Each packet gets the ring's verdict (a full ring drops).
  std::size_t send_burst(std::span<Packet* const> packets,
                         std::span<SendStatus> status) noexcept override {
    status = burst_status(packets, status);
    PacketList batch;
    const std::size_t accepted = admit_burst(packets, status, batch);
    if (accepted == 0) return 0;
    if (accepted == 1) {
      *std::find(status.begin(), status.end(), SendStatus::queued) =
          send_admitted(batch.pop_front());
      return accepted;
    }
    BurstVerdicts verdicts(status, accepted);
    bool dropped = false;
    constexpr std::size_t kChunk = 64;
    Packet* chunk[kChunk];
    Verdict out[kChunk];
    while (!batch.empty()) {
      std::size_t n = 0;
      while (n < kChunk && !batch.empty()) chunk[n++] = batch.pop_front();
      PacketList to_free;
      lq().enqueue_burst({chunk, n}, {out, n}, to_free);
      for (std::size_t j = 0; j < n; ++j) {
        verdicts(out[j]);
        dropped = dropped || out[j] == Verdict::drop;
      }
      free_packets(std::move(to_free));  // no lock held
    }
    run_or_wait(dropped);
    return accepted;
  }

  TxQueueStats stats() const override {
    TxQueueStats s = SerializedQueue::stats();
    const QdiscStats l = clq().lockless_stats();
    s.qdisc.bytes += l.bytes;
    s.qdisc.packets += l.packets;
    s.qdisc.drops += l.drops;
    s.qdisc.qlen += l.qlen;
    s.qdisc.backlog += l.backlog;
    s.dropped += l.drops;
    s.queued += l.qlen;
    return s;
  }

 protected:
  void deferred_run() noexcept override {
    if (!lq().run_begin()) return;  // the owner (or MISSED) covers this run
    begin_owner_run();
    run(held_);
    end_owner_run();
  }

  // The senders enqueue into the rings without the seqlock: no live change of the root.
  bool editable() const noexcept override { return false; }
  bool quiescent() noexcept override {
    NolockFifoQdisc& q = lq();
    SpinWait wait;  // the seqlock has no notifier: owners only ever trylock it
    while (!q.try_own()) wait.once();
    const bool idle = !is_running() && q.empty() && requeue_empty();
    if (q.run_end()) schedule();  // a sender lost the trylock to us: run for it
    return idle;
  }

  void lock_stats(uint64_t& waits, uint64_t& wait_ns) const noexcept override {
    waits += clq().producer_waits();
    wait_ns += clq().producer_wait_ns();
  }

 private:
  // send() once admitted.
  SendStatus send_admitted(Packet* p) noexcept {
    NolockFifoQdisc& q = lq();
    PacketList to_free;

    // Lockless bypass: the state bits (Linux's nolock_qdisc_is_empty()) before and again once
    // we own the qdisc, as __dev_xmit_skb re-tests them under the seqlock — not the rings: a
    // packet in a ring with the bits clear is another sender's that has yet to try the seqlock
    // (it then wins it, or sets MISSED for our run_end()), and one of this sender's own is never
    // left there with them clear (its run_begin() ran the loop, or set MISSED, which an owner
    // clears only after finding the rings empty and scans them again). So per-sender order holds.
    if (q.can_bypass() && q.state_says_empty() && requeue_empty() && q.run_begin()) {
      Verdict v = Verdict::success;
      begin_owner_run();
      if (q.state_says_empty() && requeue_empty()) {
        // The loop runs only if a MISSED mark says packets arrived meanwhile, as __dev_xmit_skb's
        // `!nolock_qdisc_is_empty(q)`: an idle queue pays no dequeue after its bypass. A sender
        // whose mark is not visible yet is seen by run_end() (a scheduled run) or wins the
        // seqlock itself on its second trylock (the Dekker pair of fifo_nolock.hpp).
        if (bypass_xmit(held_, p) && !q.state_says_empty()) run(held_);
      } else {
        v = q.enqueue(p, to_free);  // raced with another sender (or a requeue): keep order
        run(held_);
      }
      end_owner_run();
      return leave(to_free, v);  // after run_end: no lock held
    }

    const Verdict v = q.enqueue(p, to_free);
    if (!to_free.empty()) free_packets(std::move(to_free));  // no lock held
    run_or_wait(v == Verdict::drop);
    return to_send_status(v);
  }

  // After an enqueue: run the driver loop if we win the seqlock. If not and something of ours
  // was dropped for want of room, someone else owns the loop (or MISSED makes sure someone
  // will): give the CPU to the owner until it has sent one more batch (userspace backpressure,
  // see QueueBase::wait_for_tx_progress; in the kernel the owner cannot be preempted).
  void run_or_wait(bool dropped) noexcept {
    NolockFifoQdisc& q = lq();
    if (q.run_begin()) {
      begin_owner_run();
      run(held_);
      end_owner_run();
    } else if (dropped) {
      wait_for_tx_progress([&q] { return q.looks_empty(); });
    }
  }

  NolockFifoQdisc& lq() noexcept { return static_cast<NolockFifoQdisc&>(q()); }
  const NolockFifoQdisc& clq() const noexcept {
    return *static_cast<const NolockFifoQdisc*>(qdisc());
  }

  // Requeue list empty. Exact for the owner; a hint for a sender without the seqlock.
  bool requeue_empty() const noexcept { return requeue_qlen() == 0; }

  // Seqlock just won: QueueBase's RUNNING flag and run counter, serialised by the seqlock.
  void begin_owner_run() noexcept {
    const bool won = run_begin();
    (void)won;  // always true: only the seqlock holder sets RUNNING, and it clears it on leaving
  }

  void end_owner_run() noexcept {
    NolockFifoQdisc& q = lq();
    // The loop stopped on a stopped device queue: its wake schedules the next run, so MISSED
    // must not keep rescheduling runs that cannot dequeue (Kubecek's report).
    if (dev().stopped()) q.park_while_stopped([this] { return dev().stopped(); });
    run_end();  // QueueBase's RUNNING flag, still inside the seqlock
    if (q.run_end()) schedule();
  }

  NoRootLock held_;  // the seqlock stays held across the device calls
};

}  // namespace

std::unique_ptr<QueueBase> make_nolock_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                             const TxQueueConfig& config) {
  // The registry built a locked qdisc from the spec; run its lockless twin instead (same kind and
  // limit), or refuse the kind with a one-line ConfigError.
  auto lockless = NolockFifoQdisc::lockless_twin(*qdisc, device.max_frame_len());
  return std::make_unique<Finalized<NolockQueue>>(device, std::move(lockless), config);
}

}  // namespace txpath
