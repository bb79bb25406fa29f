// SPDX-License-Identifier: MIT
// The lockless FIFO qdiscs behind strategy `nolock`: Linux TCQ_F_NOLOCK (John Fastabend's
// lockless qdisc series, v4.16, key commit 6b3ba9146fe6 "net: sched: allow qdiscs to handle
// locking"; pfifo_fast over skb_array, c5ad119fb6c0), with the MISSED/DRAINING state of
// Yunsheng Lin's 2021 "packet stuck" fixes (including Michal Kubecek's stopped-queue report) and
// the 2022 Vincent Ray / Eric Dumazet form of qdisc_run_begin() (one test_and_set of MISSED
// between two trylocks). Semantics in docs/architecture.md ("Strategies"); no code copied.
//
// Kinds (the same three fifos the locked strategies run, with the same tc names and options):
//   pfifo_fast  3 bands, band = prio2band[priority & 15] = {1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1};
//               each band a PtrRing of `band_limit` (txqueuelen) slots; dequeue serves the
//               lowest non-empty band.
//   pfifo       one PtrRing of `limit` slots.
//   bfifo       one PtrRing of limit / kMinFrameLen + 1 slots (at most kMaxRingSlots) plus an
//               atomic byte reservation: enqueue adds len; if that takes it past `limit` the
//               add is undone and the packet dropped (accept iff backlog + len <= limit, as the
//               locked bfifo). Frames shorter than kMinFrameLen can fill the ring before the
//               byte limit; those drops are counted the same way.
// A full ring drops the packet: it goes on the caller's to_free (freed after every lock is
// released) and counts as a drop. Capacity differs from the locked fifos in one way: a ring of
// N slots may hold as few as N - batch + 1 packets (consumed slots are zeroed lazily, see
// sync/ptr_ring.hpp).
//
// Threading — the exception to Qdisc's "one thread at a time":
//   enqueue()                        any number of threads at once, and concurrently with the
//                                    owner (per-ring producer lock only);
//   dequeue(), peek(), empty(),
//   reset()                          only the OWNER: the thread holding the seqlock (won by
//                                    run_begin() or try_own()), or a single thread at teardown;
//   looks_empty(), lockless_stats()  any thread (hints; exact at quiescent points).
//
// Ownership protocol (Linux qdisc_run_begin / qdisc_run_end for NOLOCK):
//   run_begin():  trylock(seqlock) -> owner. Else test_and_set(MISSED): if it was already set,
//                 give up (whoever set it is covered, and so are we). Else trylock once more.
//   run_end():    unlock(seqlock); full fence; return MISSED -> the caller must schedule a
//                 deferred run (QueueBase::schedule()).
//   dequeue():    scan the rings; if nothing was found and MISSED or DRAINING is set, clear both,
//                 full fence, scan once more.
//   park_while_stopped(still_stopped): called by the owner when its loop ended on a stopped
//                 device queue: clear MISSED, full fence, re-check the queue: still stopped ->
//                 set DRAINING (the device's wake will schedule the run; without this, MISSED
//                 would reschedule a run that cannot dequeue, endlessly — Kubecek's report);
//                 woken meanwhile -> set MISSED again so run_end() schedules.
// Why nothing is stranded: a sender enqueues, then calls run_begin(). If it fails, the sender's
// MISSED set (its own, or one it found still set) is ordered after its enqueue, and MISSED is
// consumed only by (a) an owner's dequeue() clearing it — an RMW that reads the set, so that
// owner's re-scan sees the packet — or (b) the owner's run_end(), which schedules a run, or
// (c) park_while_stopped(), after which the device wake schedules a run. The owner's
// unlock/fence/load of MISSED against the sender's set/trylock is a Dekker pair: either the
// sender's second trylock succeeds or the owner sees MISSED.
//
// DRAINING also makes looks_empty() false: the sender-side bypass is not tried while packets
// wait for a stopped queue (nolock_qdisc_is_empty()).
//
// Statistics, per thread (TCQ_F_CPUSTATS): each sender adds to its own slot's enqueued
// packets/bytes and drops; the owner (one at a time) counts dequeued and reset-removed packets
// and bytes. qlen = enqueued - dequeued - removed, backlog likewise in bytes, summed on read
// (clamped at 0 while racing). The base Qdisc counters are NOT used by this class except for
// the bypass count the driver loop adds (count_bypass()): read lockless_stats() — QueueBase's
// stats() of strategy nolock adds it in.
//
// Memory ordering per atomic (ring internals: sync/ptr_ring.hpp):
//   seqlock_  trylock: relaxed pre-load, CAS acquire (pairs with run_end()'s release store);
//             the second trylock in run_begin(): CAS seq_cst (success and failure), the load
//             half of the Dekker pair with run_end(); run_end(): store release, then a seq_cst
//             fence before loading MISSED.
//   state_    test_and_set(MISSED) seq_cst RMW (orders the sender's enqueue before it, and is
//             the store half of the Dekker pair); dequeue's clear: seq_cst RMW (reads the set:
//             acquires the sender's enqueue) + seq_cst fence; relaxed loads as pre-checks only.
//   reserved_ (bfifo) relaxed RMWs: a counter; its RMW chain is totally ordered on its own.
//   stat slots relaxed RMWs (shared by threads beyond kSlots); owner counters single-writer.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/per_thread_counter.hpp"
#include "sync/ptr_ring.hpp"
#include "txpath/counter.hpp"
#include "txpath/qdisc.hpp"

namespace txpath {

class NolockFifoQdisc final : public Qdisc {
 public:
  enum class Mode : uint8_t { pfifo_fast, pfifo, bfifo };

  static constexpr unsigned kMaxBands = 3;
  static constexpr uint32_t kMissed = 1;    // __QDISC_STATE_MISSED
  static constexpr uint32_t kDraining = 2;  // __QDISC_STATE_DRAINING
  static constexpr uint32_t kMinFrameLen = 60;        // ETH_ZLEN: sizes bfifo's ring
  static constexpr uint32_t kMaxRingSlots = 1u << 20;  // rings are allocated up front

  // The lockless twin of a qdisc built by make_qdisc() (same kind and limit). Throws ConfigError
  // (one line) for a kind that cannot run lockless or a limit above kMaxRingSlots packets.
  static std::unique_ptr<NolockFifoQdisc> lockless_twin(const Qdisc& locked, uint32_t psched_mtu);

  // limit: packets per band (pfifo_fast, pfifo) or bytes (bfifo).
  NolockFifoQdisc(Mode mode, uint32_t limit, uint32_t psched_mtu);

  std::string_view kind() const noexcept override;
  DumpAttrs dump_options() const override;  // the locked twin's

  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;  // any thread
  // Any thread: enqueue() for a burst, in order: verdicts[i] is packets[i]'s (drops go on
  // to_free). One producer-lock round per run of consecutive packets for the same band (up to
  // 64), one update of the caller's statistics slot for the whole burst. packets and verdicts
  // have the same size.
  void enqueue_burst(std::span<Packet* const> packets, std::span<Verdict> verdicts,
                     PacketList& to_free) noexcept;
  Packet* dequeue() noexcept override;                                 // owner
  Packet* peek() noexcept override;                                    // owner
  void reset(PacketList& to_free) noexcept override;                   // owner / teardown
  bool can_bypass() const noexcept override;

  // --- ownership: the seqlock and MISSED/DRAINING (see the header comment) ---
  bool run_begin() noexcept;
  // Releases ownership; true if MISSED is set and the caller must schedule a deferred run.
  bool run_end() noexcept;
  // A plain trylock of the seqlock (no MISSED): for callers that wait for ownership
  // (drain()'s quiescence check). Release with run_end().
  bool try_own() noexcept;
  template <class StillStopped>
  void park_while_stopped(StillStopped&& still_stopped) noexcept {
    // seq_cst RMW + fence: the clear must be ordered before the re-check of the queue state,
    // and reads any MISSED set by a losing deferred run (acquiring the wake that caused it).
    state_.fetch_and(~kMissed, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (still_stopped())
      state_.fetch_or(kDraining, std::memory_order_relaxed);  // relaxed: a hint for senders
    else
      state_.fetch_or(kMissed, std::memory_order_seq_cst);  // seq_cst: read by our run_end()
  }

  // Lockless hint: no MISSED/DRAINING and every ring looks empty.
  bool looks_empty() const noexcept;
  // Linux's nolock_qdisc_is_empty(): no MISSED/DRAINING — one load, no ring read. A sender that
  // enqueued while another thread owned the seqlock has set MISSED (or is about to, and then
  // the owner's run_end() sees it), so this is the sender-side bypass pre-check and the owner's
  // "did anything arrive during my bypass" test; the owner re-checks the rings with empty().
  bool state_says_empty() const noexcept {
    return (state_.load(std::memory_order_relaxed) & (kMissed | kDraining)) == 0;  // relaxed: a hint
  }
  // Owner only: exactly "no packet in any ring".
  bool empty() const noexcept;
  // MISSED/DRAINING bits (a hint, for tests and tracing).
  uint32_t state() const noexcept {
    return state_.load(std::memory_order_relaxed);  // relaxed: a hint
  }
  bool owned() const noexcept {
    return seqlock_.load(std::memory_order_relaxed) != 0;  // relaxed: a hint
  }

  // tc statistics of this qdisc (requeues 0: the driver loop adds those); bypassed packets are
  // NOT included (they are in the base Qdisc::stats()).
  QdiscStats lockless_stats() const noexcept;
  // Producer-lock contention over all rings.
  uint64_t producer_waits() const noexcept;
  uint64_t producer_wait_ns() const noexcept;

  Mode mode() const noexcept { return mode_; }
  uint32_t limit() const noexcept { return limit_; }
  unsigned bands() const noexcept { return bands_count_; }
  uint32_t ring_size(unsigned band) const noexcept { return rings_[band].size(); }

 private:
  struct alignas(64) StatSlot {
    std::atomic<uint64_t> packets{0}, bytes{0}, drops{0};  // enqueued by this slot's threads
  };
  Verdict drop_one(Packet* p, PacketList& to_free, ThreadSlot me) noexcept;
  unsigned band_for(const Packet& p) const noexcept;
  // bfifo: reserves len bytes of the limit; false (nothing reserved) if they do not fit.
  bool reserve_bytes(uint32_t len) noexcept;
  void unreserve_bytes(uint32_t len) noexcept;
  // enqueue_burst() for one run of one band: the packets go to the band's ring, as many as fit.
  // Returns the bytes of those produced; counts them in `produced`, drops the rest.
  uint64_t produce_run(unsigned band, std::span<Packet* const> run, std::span<const uint32_t> lens,
                       std::span<std::size_t const> at, std::span<Verdict> verdicts,
                       PacketList& to_free, uint64_t& produced) noexcept;
  Packet* scan() noexcept;

  const Mode mode_;
  const uint32_t limit_;
  const uint32_t psched_mtu_;
  const unsigned bands_count_;
  std::array<PtrRing<Packet>, kMaxBands> rings_;  // unused bands have 0 slots

  alignas(64) std::atomic<uint32_t> seqlock_{0};  // q->seqlock: held by the owner
  alignas(64) std::atomic<uint32_t> state_{0};    // MISSED | DRAINING
  alignas(64) std::atomic<uint64_t> reserved_{0};  // bfifo: bytes admitted, not yet dequeued

  // Written by the owner only (one at a time, ordered by the seqlock).
  alignas(64) SingleWriterCounter out_packets_, out_bytes_, removed_packets_, removed_bytes_;
  std::array<StatSlot, kSlotCount> stats_{};  // indexed by thread_slot()
};

}  // namespace txpath
