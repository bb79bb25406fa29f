// SPDX-License-Identifier: MIT
// The one serializer seam every strategy goes through, in the shape of OpenBSD's
// ifq_serialize() (sys/net/ifq.c): whoever does the queue's work does it for everyone, one
// thread at a time, and a thread that cannot do it hands its work to the one that does.
//
//   1. admit            QueueBase::admit(): the device's size check and `submitted`; then the
//                       enqueue time stamp.
//   2. become owner     the strategy's own serialisation: a root lock (busylock, rootlock, the
//      or hand over     leaders of llist, sharded and drainer), a mutex held across the device
//                       calls (mutex), nolock's seqlock, the combiner role (combining) — or hand
//                       the packet to the owner and return: llist's defer list, sharded's shards,
//                       drainer's rings, a CC-Synch request, nolock's lockless rings plus MISSED.
//   3. enqueue the batch  serialize(): what the owner took, in arrival order, into the qdisc —
//                       or a lone packet straight to the device when the qdisc is empty.
//   4. run              serialize() / run_qdisc(): qdisc_run, i.e. run_begin(), the driver loop
//                       (QueueBase::run), run_end().
//   5. leave            the strategy releases its serialisation; then leave() frees the drop
//                       victims (free_packets, after every lock is released) and maps the verdict.
//
// send_burst() does the five steps once for a whole burst (admit_burst(), one hand-off or
// ownership round, the burst enqueued in order with per-packet verdicts through BurstVerdicts).
// A strategy file says only how it does steps 2 and 5. The packet path here is inline templates:
// no virtual call, no std::function and no atomic beyond QueueBase's own (RUNNING, counters).
#pragma once

#include <algorithm>
#include <span>
#include <utility>

#include "engine/queue_base.hpp"
#include "txpath/pool.hpp"

namespace txpath {

inline SendStatus to_send_status(Verdict v) noexcept {
  switch (v) {
    case Verdict::success: return SendStatus::queued;
    case Verdict::congestion: return SendStatus::congested;
    case Verdict::drop: break;
  }
  return SendStatus::dropped;
}

// serialize()'s default for "RUNNING was just won": nothing to do.
struct NoOwnerHook {
  void operator()() const noexcept {}
};

// Where serialize() puts each enqueued packet's verdict. The default keeps none (send(): only
// the last verdict, which serialize() returns, matters).
struct NoVerdicts {
  void operator()(Verdict) const noexcept {}
};

// The status entries a send_burst() looks at: one per packet, the first min() of the two sizes
// (the rest of `status` stays as the caller left it).
inline std::span<SendStatus> burst_status(std::span<Packet* const> packets,
                                          std::span<SendStatus> status) noexcept {
  return status.first(std::min(packets.size(), status.size()));
}

// A burst's verdicts (send_burst): the verdicts of the burst's `own` admitted packets, in order,
// go to the status entries admit_burst() marked `queued` (too_big entries, and a tail a hand-off
// cap refused, are skipped: those packets never entered). `skip`: verdicts that come first and
// are not ours (other senders' packets ahead of the burst in the same batch). Verdicts after the
// burst's own (the packets of senders behind it) are ignored.
class BurstVerdicts {
 public:
  BurstVerdicts(std::span<SendStatus> status, std::size_t own, std::size_t skip = 0) noexcept
      : status_(status), own_(own), skip_(skip) {}
  void operator()(Verdict v) noexcept {
    if (skip_ > 0) {
      --skip_;
      return;
    }
    if (own_ == 0) return;
    --own_;
    while (next_ < status_.size() && status_[next_] != SendStatus::queued) ++next_;
    if (next_ < status_.size()) status_[next_++] = to_send_status(v);
  }

 private:
  std::span<SendStatus> status_;
  std::size_t own_;
  std::size_t skip_;
  std::size_t next_ = 0;
};

// A burst as a chain for a lock-free LIFO push list (llist's defer list, sharded's shards):
// newest -> ... -> oldest through Packet::next, so that the one CAS that pushes it and the
// detach's PacketList::from_lifo() leave the burst in its own order, contiguous.
struct LifoChain {
  Packet* newest = nullptr;
  Packet* oldest = nullptr;
  std::size_t size = 0;

  explicit LifoChain(Packet* p) noexcept : newest(p), oldest(p), size(1) {}
  // Takes every packet of `in_order` (oldest first), which is left empty.
  explicit LifoChain(PacketList& in_order) noexcept {
    while (Packet* p = in_order.pop_front()) {
      p->next = newest;
      if (!oldest) oldest = p;
      newest = p;
      ++size;
    }
  }
  bool empty() const noexcept { return size == 0; }
  // Moves the newest `n` packets (the burst's tail) onto `out`.
  void cut_newest(std::size_t n, PacketList& out) noexcept {
    for (; n > 0 && newest; --n, --size) {
      Packet* p = newest;
      newest = p->next;
      out.push_back(p);
    }
    if (!newest) oldest = nullptr;
  }
};

class SerializedQueue : public QueueBase {
 public:
  using QueueBase::QueueBase;

 protected:
  // Steps 3 and 4, by the owner, with the strategy's serialisation held and `root` being what
  // the driver loop releases around device calls (see NoRootLock). `batch` is in arrival order
  // and is emptied; drop victims go on `to_free`. `on_owner` runs right after RUNNING is won,
  // before the loop (busylock releases busylock there). Returns the last packet's verdict.
  // `verdicts(v)` is called once per packet enqueued, in order (a bypassed packet's is `success`).
  template <class Root, class OnOwner = NoOwnerHook, class Verdicts = NoVerdicts>
  Verdict serialize(Root& root, PacketList& batch, PacketList& to_free, OnOwner&& on_owner = {},
                    Verdicts&& verdicts = {}) noexcept {
    // 3a. TCQ_F_CAN_BYPASS: a lone packet, qdisc and requeue list empty, RUNNING won — nothing
    // queued can be overtaken, so the packet goes straight to the device. The loop runs only if
    // the device took it (a refusal is requeued and a run scheduled) and packets were enqueued
    // while the root lock was released for the device call (as __dev_xmit_skb()).
    if (batch.size() == 1 && q().can_bypass() && backlog_packets() == 0 && run_begin()) {
      if (bypass_xmit(root, batch.pop_front()) && backlog_packets() > 0) {
        on_owner();
        run(root);
      }
      run_end();
      verdicts(Verdict::success);
      return Verdict::success;
    }
    // 3b. Enqueue the batch, in order (the qdisc keeps order within a band).
    Verdict v = Verdict::success;
    while (!batch.empty()) {
      v = q().enqueue(batch.pop_front(), to_free);
      verdicts(v);
    }
    // 4. Run the loop unless someone owns it; that owner's final "qdisc empty" check and its
    // run_end() happen under the same serialisation, so it sees what we enqueued.
    run_qdisc(root, on_owner);
    return v;
  }

  // Root lock (or the strategy's serialisation) held: a lone packet sent now would take the
  // bypass (serialize()'s 3a test, short of winning RUNNING). The uncontended paths of llist and
  // sharded go on only then: with a busy queue they hand the packet over as usual.
  [[gnu::always_inline]] bool bypass_open() const noexcept {
    return qdisc()->can_bypass() && backlog_packets() == 0 && !is_running();
  }

  // qdisc_run(): run_begin(), the driver loop, run_end() — unless another thread owns RUNNING.
  template <class Root, class OnOwner = NoOwnerHook>
  void run_qdisc(Root& root, OnOwner&& on_owner = {}) noexcept {
    if (!run_begin()) return;
    on_owner();
    run(root);
    run_end();
  }

  // Step 5, once every lock is released: frees the drop victims and gives the sender its answer.
  static SendStatus leave(PacketList& to_free, Verdict v) noexcept {
    free_packets(std::move(to_free));
    return to_send_status(v);
  }

  // The frame of a send_burst() whose hand-off needs the looked-at status entries: narrows
  // `status` to them (burst_status), admits the burst (admit_burst) and, if anything was
  // admitted, calls hand_off(batch, status, accepted) with the admitted packets in order.
  // Returns the count admitted.
  template <class HandOff>
  std::size_t admit_and_hand_off(std::span<Packet* const> packets, std::span<SendStatus> status,
                                 HandOff&& hand_off) noexcept {
    status = burst_status(packets, status);
    PacketList batch;
    const std::size_t accepted = admit_burst(packets, status, batch);
    if (accepted > 0) hand_off(batch, status, accepted);
    return accepted;
  }

  // A burst's tail that the strategy's hand-off cap refused before any qdisc saw it (send_burst):
  // the packets of `refused` are counted as dropped and freed, and the last refused.size() status
  // entries still `queued` (the burst's newest admitted packets) say `dropped`. No lock held.
  void drop_burst_tail(PacketList& refused, std::span<SendStatus> status) noexcept {
    std::size_t left = refused.size();
    for (std::size_t i = status.size(); i-- > 0 && left > 0;) {
      if (status[i] != SendStatus::queued) continue;
      status[i] = SendStatus::dropped;
      --left;
    }
    count_strategy_drop(refused.size());
    free_packets(std::move(refused));
  }

  // A packet the strategy refused before any qdisc saw it (its own hand-off cap, no ring): counted
  // as dropped and freed. No lock held.
  [[gnu::cold, gnu::noinline]] SendStatus drop_unqueued(Packet* p) noexcept {
    count_strategy_drop();
    PacketList victim;
    victim.push_back(p);
    free_packets(std::move(victim));
    return SendStatus::dropped;
  }
};

}  // namespace txpath
