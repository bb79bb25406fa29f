// SPDX-License-Identifier: MIT
// Lockless pfifo_fast / pfifo / bfifo over PtrRings; see fifo_nolock.hpp for the protocol,
// invariants and memory ordering.
#include "qdisc/fifo_nolock.hpp"

#include <algorithm>

#include "qdisc/fifo.hpp"
#include "qdisc/pfifo_fast.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

constexpr unsigned bands_of(NolockFifoQdisc::Mode m) noexcept {
  return m == NolockFifoQdisc::Mode::pfifo_fast ? NolockFifoQdisc::kMaxBands : 1;
}

uint32_t ring_slots(NolockFifoQdisc::Mode m, uint32_t limit) noexcept {
  if (m != NolockFifoQdisc::Mode::bfifo) return limit;
  if (limit == 0) return 0;
  const uint64_t slots = uint64_t{limit} / NolockFifoQdisc::kMinFrameLen + 1;
  return static_cast<uint32_t>(std::min<uint64_t>(slots, NolockFifoQdisc::kMaxRingSlots));
}

// A racy sum may see a removal before the matching addition: never report less than 0.
uint64_t clamp_difference(uint64_t in, uint64_t out) noexcept { return in > out ? in - out : 0; }

}  // namespace

std::unique_ptr<NolockFifoQdisc> NolockFifoQdisc::lockless_twin(const Qdisc& locked,
                                                                uint32_t psched_mtu) {
  const std::string_view kind = locked.kind();
  Mode mode;
  uint32_t limit;
  if (const auto* pf = dynamic_cast<const PfifoFastQdisc*>(&locked)) {
    mode = Mode::pfifo_fast;
    limit = pf->band_limit();
  } else if (const auto* p = dynamic_cast<const PfifoQdisc*>(&locked)) {
    mode = Mode::pfifo;
    limit = p->limit();
  } else if (const auto* b = dynamic_cast<const BfifoQdisc*>(&locked)) {
    mode = Mode::bfifo;
    limit = b->limit();
  } else {
    throw ConfigError("qdisc \"" + std::string(kind) +
                      "\" cannot run lockless (strategy nolock supports pfifo_fast, pfifo, bfifo)");
  }
  if (mode != Mode::bfifo && limit > kMaxRingSlots)
    throw ConfigError("qdisc \"" + std::string(kind) + "\": limit " + std::to_string(limit) +
                      " is too large for a lockless ring (strategy nolock allows at most " +
                      std::to_string(kMaxRingSlots) + " packets)");
  return std::make_unique<NolockFifoQdisc>(mode, limit, psched_mtu);
}

NolockFifoQdisc::NolockFifoQdisc(Mode mode, uint32_t limit, uint32_t psched_mtu)
    : mode_(mode),
      limit_(limit),
      psched_mtu_(psched_mtu),
      bands_count_(bands_of(mode)),
      rings_{{PtrRing<Packet>(ring_slots(mode, limit)),
              PtrRing<Packet>(bands_of(mode) > 1 ? ring_slots(mode, limit) : 0),
              PtrRing<Packet>(bands_of(mode) > 2 ? ring_slots(mode, limit) : 0)}} {}

std::string_view NolockFifoQdisc::kind() const noexcept {
  switch (mode_) {
    case Mode::pfifo_fast: return "pfifo_fast";
    case Mode::pfifo: return "pfifo";
    case Mode::bfifo: break;
  }
  return "bfifo";
}

// What the locked qdisc of the same kind and configuration dumps (tc prints the same for both).
DumpAttrs NolockFifoQdisc::dump_options() const {
  switch (mode_) {
    case Mode::pfifo_fast: return PfifoFastQdisc(limit_).dump_options();
    case Mode::pfifo: return PfifoQdisc(limit_).dump_options();
    case Mode::bfifo: break;
  }
  return BfifoQdisc(limit_, psched_mtu_).dump_options();
}

bool NolockFifoQdisc::can_bypass() const noexcept {
  // As the locked kinds: an empty queue of this configuration would accept any valid frame.
  switch (mode_) {
    case Mode::pfifo_fast: return limit_ >= 1;
    case Mode::pfifo: return limit_ >= 1;
    case Mode::bfifo: break;
  }
  return limit_ >= psched_mtu_;
}

Verdict NolockFifoQdisc::drop_one(Packet* p, PacketList& to_free, ThreadSlot me) noexcept {
  to_free.push_back(p);  // p is still ours: it never reached a ring
  slot_add(stats_[me.index].drops, 1, me);  // a statistic (see slot_add)
  return Verdict::drop;
}

unsigned NolockFifoQdisc::band_for(const Packet& p) const noexcept {
  return mode_ == Mode::pfifo_fast ? PfifoFastQdisc::band_of(p.priority) : 0;
}

bool NolockFifoQdisc::reserve_bytes(uint32_t len) noexcept {
  // relaxed: an admission counter (see the header comment); backlog + len <= limit.
  if (reserved_.fetch_add(len, std::memory_order_relaxed) + len <= limit_) return true;
  unreserve_bytes(len);
  return false;
}

void NolockFifoQdisc::unreserve_bytes(uint32_t len) noexcept {
  reserved_.fetch_sub(len, std::memory_order_relaxed);  // relaxed: as reserve_bytes()
}

Verdict NolockFifoQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  const ThreadSlot me = thread_slot();
  // Read before produce(): once p is in a ring, the owner may send it and its pool may hand it
  // to another sender before we get to count it.
  const uint32_t len = p->len;
  const unsigned band = band_for(*p);
  if (mode_ == Mode::bfifo && !reserve_bytes(len)) return drop_one(p, to_free, me);
  if (!rings_[band].produce(p)) {
    if (mode_ == Mode::bfifo) unreserve_bytes(len);
    return drop_one(p, to_free, me);
  }
  // Statistics, exact at quiescent points (the owner may count the dequeue first): slot_add.
  slot_add(stats_[me.index].packets, 1, me);
  slot_add(stats_[me.index].bytes, len, me);
  return Verdict::success;
}

void NolockFifoQdisc::enqueue_burst(std::span<Packet* const> packets, std::span<Verdict> verdicts,
                                    PacketList& to_free) noexcept {
  constexpr std::size_t kRun = 64;
  Packet* run[kRun];
  uint32_t lens[kRun];  // read before the produce, as enqueue()
  std::size_t at[kRun];  // run[j] is packets[at[j]]
  const std::size_t dropped_before = to_free.size();
  uint64_t produced = 0, bytes = 0;
  for (std::size_t i = 0; i < packets.size();) {
    const unsigned band = band_for(*packets[i]);
    std::size_t n = 0;
    for (; i < packets.size() && n < kRun && band_for(*packets[i]) == band; ++i) {
      Packet* p = packets[i];
      const uint32_t len = p->len;
      if (mode_ == Mode::bfifo && !reserve_bytes(len)) {  // over the byte limit: dropped
        to_free.push_back(p);
        verdicts[i] = Verdict::drop;
        continue;
      }
      run[n] = p;
      lens[n] = len;
      at[n++] = i;
    }
    bytes += produce_run(band, {run, n}, {lens, n}, {at, n}, verdicts, to_free, produced);
  }
  // Statistics, as enqueue(): slot_add.
  const ThreadSlot me = thread_slot();
  StatSlot& slot = stats_[me.index];
  if (produced > 0) {
    slot_add(slot.packets, produced, me);
    slot_add(slot.bytes, bytes, me);
  }
  if (to_free.size() > dropped_before) slot_add(slot.drops, to_free.size() - dropped_before, me);
}

uint64_t NolockFifoQdisc::produce_run(unsigned band, std::span<Packet* const> run,
                                      std::span<const uint32_t> lens,
                                      std::span<std::size_t const> at, std::span<Verdict> verdicts,
                                      PacketList& to_free, uint64_t& produced) noexcept {
  const uint32_t done = rings_[band].produce_burst(run.data(), static_cast<uint32_t>(run.size()));
  uint64_t bytes = 0;
  for (std::size_t j = 0; j < run.size(); ++j) {
    if (j < done) {
      verdicts[at[j]] = Verdict::success;
      bytes += lens[j];
      continue;
    }
    if (mode_ == Mode::bfifo) unreserve_bytes(lens[j]);  // the ring was full: dropped
    to_free.push_back(run[j]);
    verdicts[at[j]] = Verdict::drop;
  }
  produced += done;
  return bytes;
}

Packet* NolockFifoQdisc::scan() noexcept {
  for (unsigned b = 0; b < bands_count_; ++b) {
    if (Packet* p = rings_[b].consume()) {
      out_packets_.add(1);
      out_bytes_.add(p->len);
      if (mode_ == Mode::bfifo) reserved_.fetch_sub(p->len, std::memory_order_relaxed);  // relaxed: see enqueue()
      return p;
    }
  }
  return nullptr;
}

Packet* NolockFifoQdisc::dequeue() noexcept {
  if (Packet* p = scan()) return p;
  // relaxed: a pre-check; the RMW below is what synchronises with the senders' sets.
  if ((state_.load(std::memory_order_relaxed) & (kMissed | kDraining)) == 0) return nullptr;
  // seq_cst: reads the last MISSED set (acquiring that sender's enqueue), and is ordered before
  // the re-scan; a sender that sets MISSED after this clear is seen by our run_end().
  state_.fetch_and(~(kMissed | kDraining), std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // smp_mb__after_atomic()
  return scan();
}

Packet* NolockFifoQdisc::peek() noexcept {
  for (unsigned b = 0; b < bands_count_; ++b)
    if (Packet* p = rings_[b].peek()) return p;
  return nullptr;
}

void NolockFifoQdisc::reset(PacketList& to_free) noexcept {
  for (unsigned b = 0; b < bands_count_; ++b) {
    while (Packet* p = rings_[b].consume()) {
      removed_packets_.add(1);
      removed_bytes_.add(p->len);
      if (mode_ == Mode::bfifo) reserved_.fetch_sub(p->len, std::memory_order_relaxed);  // relaxed: see enqueue()
      to_free.push_back(p);
    }
  }
}

bool NolockFifoQdisc::try_own() noexcept {
  // relaxed: a pre-check so a visibly held lock is not written (TTAS); the CAS acquires.
  if (seqlock_.load(std::memory_order_relaxed) != 0) return false;
  uint32_t unlocked = 0;
  // acquire: pairs with the release store in run_end() of the previous owner. relaxed on
  // failure: a failed first trylock orders nothing (run_begin()'s RMW that follows does).
  return seqlock_.compare_exchange_strong(unlocked, 1, std::memory_order_acquire,
                                          std::memory_order_relaxed);
}

bool NolockFifoQdisc::run_begin() noexcept {
  if (try_own()) return true;
  // seq_cst: the store half of the Dekker pair with run_end(); as an RMW it also carries our
  // enqueue (sequenced before) to whoever clears MISSED. Already set: someone else's mark
  // covers us too (it is cleared only by an owner that then re-scans, or by run_end's
  // schedule), so give up.
  if (state_.fetch_or(kMissed, std::memory_order_seq_cst) & kMissed) return false;
  uint32_t unlocked = 0;
  // seq_cst on success and failure: the load half of the Dekker pair — if this still sees the
  // lock held, the holder's run_end() (release store, seq_cst fence, load) sees MISSED.
  return seqlock_.compare_exchange_strong(unlocked, 1, std::memory_order_seq_cst,
                                          std::memory_order_seq_cst);
}

bool NolockFifoQdisc::run_end() noexcept {
  // release: pairs with the acquire CAS of the next owner (ring consumer state, counters).
  seqlock_.store(0, std::memory_order_release);
  // smp_mb(): the unlock above must be ordered before the MISSED load below (Dekker pair with
  // run_begin(): a sender sets MISSED, then re-tries the lock).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // relaxed: ordered by the fence above.
  return (state_.load(std::memory_order_relaxed) & kMissed) != 0;
}

bool NolockFifoQdisc::looks_empty() const noexcept {
  // relaxed: a hint; the owner re-checks with empty() after winning the seqlock.
  if (state_.load(std::memory_order_relaxed) & (kMissed | kDraining)) return false;
  return empty();
}

bool NolockFifoQdisc::empty() const noexcept {
  for (unsigned b = 0; b < bands_count_; ++b)
    if (!rings_[b].empty()) return false;
  return true;
}

QdiscStats NolockFifoQdisc::lockless_stats() const noexcept {
  uint64_t in_packets = 0, in_bytes = 0, drops = 0;
  for (const StatSlot& s : stats_) {
    // relaxed: statistics (see the header comment).
    in_packets += s.packets.load(std::memory_order_relaxed);
    in_bytes += s.bytes.load(std::memory_order_relaxed);
    drops += s.drops.load(std::memory_order_relaxed);
  }
  QdiscStats st;
  st.packets = out_packets_.get();
  st.bytes = out_bytes_.get();
  st.drops = drops;
  st.qlen = clamp_difference(in_packets, st.packets + removed_packets_.get());
  st.backlog = clamp_difference(in_bytes, st.bytes + removed_bytes_.get());
  return st;
}

uint64_t NolockFifoQdisc::producer_waits() const noexcept {
  uint64_t n = 0;
  for (unsigned b = 0; b < bands_count_; ++b) n += rings_[b].producer_waits();
  return n;
}

uint64_t NolockFifoQdisc::producer_wait_ns() const noexcept {
  uint64_t n = 0;
  for (unsigned b = 0; b < bands_count_; ++b) n += rings_[b].producer_wait_ns();
  return n;
}

}  // namespace txpath
