// SPDX-License-Identifier: MIT
// Strategy `combining`: CC-Synch combining (Fatourou & Kallimanis, "Revisiting the combining
// synchronization technique", PPoPP 2012), and H-Synch (one CC-Synch list per NUMA node plus a
// lock among the node combiners) on machines with several NUMA nodes. The primitive is
// sync/ccsynch.hpp; docs/background.md, "Delegation and combining".
//
// The combining section replaces the root lock. A sender's request is "enqueue this packet" — or,
// when the qdisc allows it, qdisc and requeue list are empty and RUNNING is won, the empty-qdisc
// bypass (as serialize() in strategy/serialize.hpp) — and it returns the qdisc's verdict
// (queued / congested / dropped): unlike llist, every sender gets real feedback. The combiner serves up to h requests
// (CcSynchConfig::h, default 64) in arrival order and then, still holding the combiner role so
// nobody else can touch the qdisc, runs the shared driver loop (QueueBase::run between
// run_begin/run_end) with a no-op lock before handing the role on.
//
// The device call happens inside the combining section: the combiner role is the only thing that
// excludes others from the qdisc, the requeue list and RUNNING, and it cannot be "released and
// re-taken" around the device call the way sch_direct_xmit drops the root lock — giving it up
// means handing it to the next waiter, which would then need a second ownership protocol for the
// running loop (RUNNING owned outside any exclusion, with a MISSED-style re-check). Meanwhile the
// senders that arrive are not blocked on a shared word: each waits (spin, then park) on its own
// node, and their requests form the next combiner's batch, which then enqueues them all at once.
//
// Requests, all through the same primitive (so they are serialised with the senders):
//  * send():          enqueue or bypass; the bypass is taken only by a request that ends its batch
//                     (`more == false`): if more requests follow in the same batch, the packet is
//                     enqueued and the epilogue sends the whole batch with xmit_more, instead of
//                     one doorbell per packet;
//  * deferred_run():  a no-op request; its batch's epilogue runs the loop (net_tx_action);
//  * quiescent():     !running && backlog == 0, evaluated inside the section; its batch runs the
//                     loop only if another request of the batch enqueued or was a deferred run
//                     (drain() must not poll a shaper every 100 us).
//  * send_burst():    one request carrying the whole burst, enqueued in order (a burst of one may
//                     bypass, as send()); the epilogue runs the loop once for all of it;
// Epilogue (once per batch, by the combiner): if anything is queued, run_begin + run + run_end;
// else serve a pending inspect_qdisc() (QueueBase::serve_inspect; run_end() does it otherwise).
//
// Invariants:
//  * the qdisc, the requeue list, RUNNING and the driver loop are touched only inside the
//    combining section (a request or an epilogue), so by one thread at a time;
//  * RUNNING is never held outside the section: run_begin/run_end pair inside one request or one
//    epilogue (so is_running() reads false outside it);
//  * nothing is stranded: every enqueue is served in some batch, and that batch's combiner runs
//    the loop afterwards; the loop ends only with an empty backlog, a stopped device (its wake
//    schedules a deferred run), or a scheduled run (quota spent, requeue) — the deferred run is a
//    request like any other, so it cannot be lost between a combiner's last check and hand-off;
//  * the bypass happens only with qdisc and requeue list empty, so it never overtakes a packet;
//  * drop victims go on the requesting sender's own to_free list (on its stack, written by the
//    combiner, published by the release that ends the sender's wait) and the sender frees them
//    after execute() returns — outside the combining section; the combiner therefore frees no
//    packets of other senders and holds no per-batch list.
//
// Memory ordering: no atomics in this file beyond those of QueueBase (RUNNING, relaxed, written
// only inside the section) and of the primitive (see ccsynch.hpp: the Tail exchange acq_rel,
// next/state release/acquire, which hand over the qdisc together with the combiner role).
//
// Shared cache lines per packet: the list Tail (one exchange), the predecessor's node (request,
// link; written by us, read by the combiner), our own node (released by the combiner); the qdisc
// and the device are touched by the combiner only. H-Synch adds the global lock once per batch.
//
// Stats: lock_waits / lock_wait_ns = requests whose sender had to wait for its node's release
// (served by another combiner, or waited for the role), plus H-Synch global-lock waits. `runs`
// counts driver-loop runs (at most one per batch). `--lock` picks the H-Synch global lock (unused
// on one NUMA node).
#include "strategy/factories.hpp"
#include "strategy/serialize.hpp"
#include "sync/ccsynch.hpp"

namespace txpath {

namespace {

template <class Lock>
class CombiningQueue : public SerializedQueue {
 public:
  CombiningQueue(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config)
      : SerializedQueue(device, std::move(qdisc), config, "combining", Lock::kName), section_() {}

  SendStatus send(Packet* p) noexcept override {
    if (const SendStatus refused = admit(p); refused != SendStatus::queued) [[unlikely]]
      return refused;
    PacketList to_free;
    Verdict v = Verdict::success;
    section_.execute(
        [&](bool more) noexcept {
          if (!bypass_lone(p, more)) v = enqueue(p, to_free);
        },
        [this]() noexcept { epilogue(); });
    return leave(to_free, v);  // outside the section
  }

  // The burst: ONE request carrying the whole burst; the combiner enqueues it in order (a burst
  // of one may take the bypass, as send()) and its batch's epilogue runs the loop once. Each
  // packet gets the qdisc's verdict.
  std::size_t send_burst(std::span<Packet* const> packets,
                         std::span<SendStatus> status) noexcept override {
    PacketList batch, to_free;
    const std::size_t accepted = admit_burst(packets, status, batch);
    if (accepted == 0) return 0;
    BurstVerdicts verdicts(status, accepted);
    section_.execute(
        [&](bool more) noexcept {
          if (batch.size() == 1) {
            Packet* p = batch.pop_front();  // before the bypass: the device may free it
            verdicts(bypass_lone(p, more) ? Verdict::success : enqueue(p, to_free));
            return;
          }
          while (!batch.empty()) verdicts(enqueue(batch.pop_front(), to_free));
        },
        [this]() noexcept { epilogue(); });
    free_packets(std::move(to_free));  // outside the section
    return accepted;
  }

 protected:
  void deferred_run() noexcept override {
    // The request marks its batch: whichever request's thread combines it, the loop runs.
    section_.execute([this](bool) noexcept { batch_needs_run_ = true; },
                     [this]() noexcept { epilogue(); });
  }

  bool quiescent() noexcept override {
    bool idle = false;
    section_.execute(
        [&](bool) noexcept { idle = !is_running() && backlog_packets() == 0; },
        [this]() noexcept { quiescent_epilogue(); });
    return idle;
  }

  void lock_stats(uint64_t& waits, uint64_t& wait_ns) const noexcept override {
    const CcSynchStats s = section_.stats();
    waits += s.waits + s.global_waits;
    wait_ns += s.wait_ns + s.global_wait_ns;
  }

 private:
  // Inside the section: the empty-qdisc bypass for a request's lone packet, taken only by a
  // request that ends its batch (see the header). True if p went to the device (a refusal is
  // requeued and a run scheduled).
  bool bypass_lone(Packet* p, bool more) noexcept {
    if (more || !q().can_bypass() || backlog_packets() != 0 || !run_begin()) return false;
    bypass_xmit(held_, p);
    run_end();
    return true;
  }

  // Inside the section: a sender's enqueue, noted for quiescent_epilogue().
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept {
    batch_needs_run_ = true;
    return q().enqueue(p, to_free);
  }

  // The batch end of a batch whose combiner is drain()'s quiescent() probe: the loop runs only
  // if a request of this batch enqueued or was a deferred run. Packets queued before it are not
  // stranded: the loop that left them either scheduled a deferred run (quota, requeue, a stopped
  // device's wake) or armed the watchdog (a throttled qdisc); that run may be a request of this
  // very batch, hence the mark. Running the loop anyway would poll a shaper every 100 us.
  void quiescent_epilogue() noexcept {
    if (batch_needs_run_) {
      epilogue();
    } else {
      serve_inspect();
    }
  }

  // The combiner's batch end: run the loop if anything is queued (qdisc_run). An empty queue
  // skips the loop, and with it run_end(): serve a pending inspect_qdisc() here instead (a
  // deferred run is a no-op request whose batch ends here, still inside the section).
  void epilogue() noexcept {
    batch_needs_run_ = false;
    if (backlog_packets() == 0) {
      serve_inspect();
      return;
    }
    run_qdisc(held_);  // always wins RUNNING: it is never held outside the section
  }

  CcSynch<Lock> section_;
  NoRootLock held_;  // the combiner role is kept across the device calls (see the header)
  bool batch_needs_run_ = false;  // a request of this batch enqueued or asked for a run
};

}  // namespace

std::unique_ptr<QueueBase> make_combining_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                                const TxQueueConfig& config) {
  return make_with_lock_kind<CombiningQueue>(device, std::move(qdisc), config);
}

}  // namespace txpath
