// SPDX-License-Identifier: MIT
// Strategy `drainer`: a dedicated TX thread polling one SPSC ring per sender — the delegation
// design of RCL (Lozi et al., USENIX ATC'12) and ffwd (Roghanchi et al., SOSP'17), in the
// fire-and-forget form DPDK applications use for a TX core (docs/background.md, "Delegation and
// combining" and "Handing items to one drainer"). Senders never touch the root lock or the qdisc
// (but for a lone sender on a device whose doorbell costs nothing, below): a send() is one push
// onto the caller's own ring (Concurrency Kit's ck_ring SPSC, through strategy/ck_ring_shim.h),
// one full fence and one read of `sleeping_`. The drainer thread sweeps the rings round-robin,
// enqueues what it took into the qdisc under the root lock and runs the shared driver loop
// (serialize(), as every strategy: strategy/serialize.hpp). Deferred runs (quota spent, requeue,
// device wake) still go to the service thread, which takes the root lock like every LockedQueue.
//
// Why Concurrency Kit's ring and not our own: the project rule is packaged libraries first, and
// ck_ring_*_spsc is exactly the needed ring (one producer and one consumer index on separate
// cache lines, a store fence before publishing p_tail, a load fence after reading it). The shim
// is built uninstrumented under TSan and annotates each push as a release and each non-empty pop
// as an acquire on the ring (ck_ring_shim.c), which is the happens-before ck provides.
//
// Per-sender rings. A thread registers on its first send to a queue instance (off the hot path,
// under reg_mutex_): it adopts a ring whose previous owner thread has exited, or creates one, up
// to kMaxSenders (1024). Further concurrent threads share one fallback ring whose producer side
// is serialised by a mutex (kFallbackSlots entries) — slower, still FIFO per sender. A thread
// that landed on the fallback stays there for this queue. The calling thread finds its ring
// through a thread_local cache keyed by a queue-instance id (unique for the process lifetime, so
// a new queue at a recycled address never matches a stale entry): a one-entry "last hit"
// (sync/instance_cache.hpp: no TLS guard on the hot path) and a vector of entries holding
// shared_ptr<SenderRing>, so a ring outlives whichever of its queue and its thread goes last.
// Entries of destroyed queues are pruned at the thread's next registration. When a thread exits,
// its cache marks its rings unowned (release) so a later thread can adopt them (acquire CAS);
// packets the dead thread left are drained first (FIFO). Do not send from a thread_local
// destructor that runs after the cache's.
//
// Bursts (send_burst): written into the sender's ring with one publish of the producer index per
// up to kPerRing packets (txpath_ck_ring_enqueue_burst_spsc) and one wake-up check each; the
// drainer sees none or all of a publish. A full ring takes what fits; the sender waits as below.
//
// A lone sender on a device whose doorbell costs nothing (!Device::xmit_more_pays(): null, a
// `nic` model with doorbell=0). Delegation buys a lone sender one thing, doorbell batching; on
// such a device it buys nothing and costs the cross-core hand-off of every packet and its
// buffer's trip back (measured on null, 1 sender, 2 vCPUs: about 180 ns of CPU per packet,
// 15x the floor's, of which the sender's own thread spent about 115 ns, four times the whole
// inline path's 29). So there, while one sender thread has ever registered a ring with this
// queue, send() tries rootlock's path itself when the drainer has enqueued every packet that
// sender ever pushed (first_flushed_, a count the drainer publishes under the root lock after
// the enqueue, against the ring's own push count), a try_lock of the root lock wins and the
// queue is idle: it bypasses its packet with no push, no fence and no wake-up. Anything else
// pushes, and a second sender thread ends it for good. Where the doorbell costs (a NIC's MMIO
// write, AF_PACKET's kick), every packet is delegated: on `nic` a lone sender's own path rang
// a doorbell per packet (3.4 Mpps against 7.2 delegated, commit 435280c). send_burst() always
// pushes.
//
// Ring capacity: txqueuelen rounded up to a power of two, at least 64 and at most 4096 slots
// (ck keeps one slot empty): room for a qdisc-full burst per sender, 8 KiB per 1024 slots.
// A full ring is backpressure, not a drop: the sender waits (spin, then park) until the drainer
// has finished one more sweep that moved packets, and retries — as a DPDK app retries a full TX
// ring. Drops are the qdisc's business (its limit), as for every other strategy. (Dropping at
// the ring instead, as a first version did, lost 60-90% of the packets whenever the drainer was
// descheduled on an oversubscribed machine: the senders turned their CPU time into drops.) A
// full ring is non-empty, so the drainer cannot be parked for good while a sender waits (see
// park()); only a sender that could not get a ring at all drops.
//
// Invariants:
//  * each per-sender ring has one producer at a time (its owner thread; ownership moves only
//    through owned_ release/acquire) and one consumer (the drainer, or shutdown after the join);
//  * the qdisc, the requeue list and RUNNING are touched only under root_ (drainer, service
//    thread, shutdown), as in every LockedQueue;
//  * a packet is in a ring, in the drainer's hands (busy_ set, counted in in_hand_), in the
//    qdisc/requeue list, or with the RUNNING owner on its way to the device — never two;
//  * per-sender FIFO: a ring is FIFO, the drainer enqueues each ring's packets in ring order and
//    the qdisc keeps order within a band; the bypass is taken only with qdisc and requeue list
//    empty and RUNNING won (strategy/serialize.hpp).
//
// Why no packet is stranded:
//  * ring -> qdisc (the drainer's sleep, a Dekker pair): before parking the drainer stores
//    sleeping_ = 1, issues a full fence and re-reads every ring; a sender stores its packet into
//    the ring, issues a full fence and reads sleeping_. Either the drainer's re-read sees the
//    packet (it does not park), or the sender reads 1 (or a newer value) and wakes it: it
//    exchanges sleeping_ to 0 and notifies (the exchange elects one notifier; a sender that read a
//    0 written by another waker relies on that waker, and the drainer re-checks everything before
//    every later park). spin_then_park() returns once sleeping_ == 0, so a wake between the
//    re-check and the futex wait is not lost. ck's p_tail store/load are volatile accesses plus
//    ck fences, outside the C++ model: the argument is the store-buffer litmus with a full fence
//    (mfence on x86, dmb ish on arm64) on each side, which forbids both reads missing.
//  * the nap (coalescing): after a sweep that moved packets, an empty sweep — or a sweep that
//    moved fewer than kCoalesceBelow — puts the drainer in a timed sleep of kNapNs (sleeping_ =
//    kNapping) rather than the park: a push wakes it only once its ring is half full, else the
//    nap ends by itself, so nothing waits more than kNapNs for it. Only an empty sweep after a
//    nap leads to the park above. This is TX interrupt coalescing (ethtool -C tx-usecs): a lone
//    sender's packets are taken hundreds at a time, not one per wake-up, and the drainer does not
//    poll the rings' cache lines while they fill.
//  * qdisc -> device: as every LockedQueue (driver_loop.hpp): the drainer enqueues under the root
//    lock and then tries run_begin under it, so either it owns the loop or the current owner's
//    final check sees the packets; quota, requeue and device stops leave a scheduled run or a
//    pending wake for the service thread.
//  * drain()/quiescent(): under the root lock, all rings empty, then a full fence, then
//    !busy_, !RUNNING, empty backlog. The drainer sets busy_ (and fences) BEFORE popping and
//    clears it under the root lock in the critical section that enqueues what it popped (or
//    after an empty sweep), so a reader that sees a ring emptied by a pop also sees busy_ set or
//    the packets queued.
//
// Shutdown: QueueBase::shutdown() calls stop_workers() first: the drainer is stopped and joined
// BEFORE it stops the service thread, resets the qdisc and calls purge_strategy(), which frees
// what the rings still hold (counted as purged = dropped).
//
// Memory order of every atomic (also at each use):
//  * nrings_: release store after rings_[n] is written (under reg_mutex_); acquire loads by the
//    drainer, quiescent(), strategy_queued().
//  * SenderRing::owned: release store by the exiting owner thread; acquire CAS by the adopter.
//  * SenderRing::queue_gone: release store in ~DrainerQueue; acquire load when pruning caches.
//  * sleeping_: Dekker pair with the senders (seq_cst store + seq_cst fence in park(); sender's
//    seq_cst fence + relaxed load, acq_rel exchange to elect the notifier); spin_then_park's
//    acquire loads; stop_drainer()'s seq_cst store after stop_.
//  * stop_: seq_cst store in stop_drainer(), acquire load at the loop top, seq_cst load in park()
//    (so a stop is seen or the word changes, see stop_drainer()).
//  * busy_: relaxed store + seq_cst fence before popping; release store (under root_, in the
//    critical section that enqueues); acquire load after a seq_cst fence in quiescent().
//  * in_hand_: relaxed (a statistic for stats().queued; 0 whenever busy_ is clear).
//  * first_flushed_: release store by the drainer under the root lock after its enqueue (one
//    writer: a load and a store); acquire load by a lone sender in alone_possible().
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "strategy/ck_ring_shim.h"
#include "strategy/factories.hpp"
#include "strategy/locked_queue.hpp"
#include "sync/instance_cache.hpp"
#include "sync/park.hpp"

namespace txpath {

namespace {

constexpr uint32_t kMaxSenders = 1024;     // per-sender rings per queue; more share the fallback
constexpr unsigned kFallbackSlots = 4096;  // the shared fallback ring
constexpr unsigned kPerRing = 64;          // packets taken from one ring per sweep (fairness)
constexpr std::size_t kFlushAt = 256;      // enqueue + run once this many are in hand
constexpr std::size_t kCoalesceBelow = 16; // a sweep that moved fewer naps before the next one
constexpr int kDrainerNice = -10;         // scheduling weight of the drainer thread, see drainer_main()
// The drainer's nap after a sweep that moved packets found nothing more (see nap()): TX
// interrupt coalescing's window (ethtool's tx-usecs), the longest a packet waits for the drainer
// while traffic flows.
constexpr uint64_t kNapNs = 50'000;
// sleeping_: awake; parked until a push wakes it; napping until kNapNs pass or a ring is half full.
constexpr uint32_t kAwake = 0, kParked = 1, kNapping = 2;

struct RingDestroy {
  void operator()(txpath_ck_ring* r) const noexcept { txpath_ck_ring_destroy(r); }
};

// One producer side. Shared by the queue (owners_) and the thread caches that use it.
struct SenderRing {
  SenderRing(unsigned slots, bool is_shared) : ring(txpath_ck_ring_create(slots)), shared(is_shared) {
    if (!ring) throw std::bad_alloc();
  }
  std::unique_ptr<txpath_ck_ring, RingDestroy> ring;
  const bool shared;  // the fallback ring: producers serialise on `producers`
  std::mutex producers;
  // A live thread produces into this ring (per-sender rings only). See the header comment.
  std::atomic<bool> owned{true};
  std::atomic<bool> queue_gone{false};
  // Packets pushed into this ring so far (per-sender rings only): written by the producer alone,
  // a plain field (ownership moves through `owned`, release/acquire). See first_flushed_.
  uint64_t pushed = 0;
};

// The calling thread's ring for the queue it used last (sync/instance_cache.hpp: no TLS init
// guard on the hot path), keyed by queue id.
struct RingCacheTag {};
using RingCache = InstanceCache<RingCacheTag, SenderRing*>;

// Every queue this thread has a ring in (slow path only).
struct SenderCache {
  struct Entry {
    uint64_t queue_id;
    std::shared_ptr<SenderRing> ring;
  };
  std::vector<Entry> entries;

  ~SenderCache() {
    RingCache::clear();
    for (auto& e : entries)
      // release: our pushes happen-before the adopter's acquire CAS in register_sender().
      if (!e.ring->shared) e.ring->owned.store(false, std::memory_order_release);
  }
};
thread_local SenderCache tls_cache;

template <class Lock>
class DrainerQueue : public LockedQueue<Lock> {
 public:
  DrainerQueue(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config)
      : LockedQueue<Lock>(device, std::move(qdisc), config, "drainer"),
        id_(RingCache::new_instance_id()),
        lone_sender_path_(!device.xmit_more_pays()),
        ring_slots_(std::bit_ceil(std::clamp<uint32_t>(config.txqueuelen, 63, 4095) + 1)),
        rings_(std::make_unique<txpath_ck_ring*[]>(kMaxSenders)),
        fallback_(std::make_shared<SenderRing>(kFallbackSlots, true)) {
    owners_.reserve(kMaxSenders);
  }

  ~DrainerQueue() override {
    stop_drainer();  // normally done already by shutdown()
    for (auto& r : owners_) r->queue_gone.store(true, std::memory_order_release);  // see prune
    fallback_->queue_gone.store(true, std::memory_order_release);                 // as above
  }

  // Called by the factory once the object is complete.
  void start_drainer() { drainer_ = std::thread([this] { drainer_main(); }); }

  SendStatus send(Packet* p) noexcept override {
    if (const SendStatus refused = this->admit(p); refused != SendStatus::queued) [[unlikely]]
      return refused;
    SenderRing* r = caller_ring();
    if (!r) return this->drop_unqueued(p);  // no ring could be allocated: the only drop here
    if (alone_possible(*r) && this->root_.try_lock()) {
      if (this->bypass_open()) return alone(p);
      this->root_.unlock();  // the queue is busy: push
    }
    void* const one[] = {p};
    push_all(*r, one, 1);
    return SendStatus::queued;
  }

  // The burst: written into the caller's ring with one publish per kPerRing packets (ring full:
  // what fits, then wait as send() does and go on), one wake-up check per publish. Every packet
  // gets `queued`, as with send().
  std::size_t send_burst(std::span<Packet* const> packets,
                         std::span<SendStatus> status) noexcept override {
    return this->admit_and_hand_off(
        packets, status,
        [this](PacketList& batch, std::span<SendStatus> looked_at, std::size_t) noexcept {
          SenderRing* r = caller_ring();
          if (!r) {  // no ring could be allocated: every packet of the burst is dropped
            this->drop_burst_tail(batch, looked_at);
            return;
          }
          void* chunk[kPerRing];
          while (!batch.empty()) {
            unsigned n = 0;
            while (n < kPerRing && !batch.empty()) chunk[n++] = batch.pop_front();
            push_all(*r, chunk, n);
          }
        });
  }

 private:
  // The lone sender's path (header comment, "A lone sender"): the device's doorbell costs
  // nothing, one sender thread has ever registered — so the caller's ring is rings_[0] — and the
  // drainer has put every packet it ever pushed into the qdisc. acquire: pairs with flush()'s
  // release store of first_flushed_, made under the root lock after the enqueue, so those
  // packets are in the qdisc (or sent) for us as well; the try_lock and bypass_open() that
  // follow then see whether they all left.
  bool alone_possible(const SenderRing& r) const noexcept {
    if (!lone_sender_path_ || r.shared) return false;
    // relaxed: pairs with nothing. Our own registration's store is sequenced before this load,
    // so 1 means our ring is rings_[0]; a later sender's registration seen late only delays the
    // switch to delegation, which our order does not depend on.
    if (nrings_.load(std::memory_order_relaxed) != 1) return false;
    return first_flushed_.load(std::memory_order_acquire) == r.pushed;
  }

  // Root lock held (try_lock) and the queue idle: the packet takes rootlock's path — the bypass
  // — and the lock is released here. Order: every earlier packet of ours was enqueued by the
  // drainer (alone_possible) or sent by us; the qdisc being empty, all of them were sent.
  SendStatus alone(Packet* p) noexcept {
    PacketList batch, to_free;
    batch.push_back(p);
    const Verdict v = this->serialize(this->root_, batch, to_free);
    this->root_.unlock();
    return this->leave(to_free, v);
  }

  SenderRing* caller_ring() noexcept {
    SenderRing* const* cached = RingCache::find(id_);
    return cached ? *cached : attach_caller();
  }

  // Pushes items[0..n) into the caller's ring in order, each push publishing what fits. Ring
  // full: wait for the drainer to move on. Load the sweep count, then retry once: if a sweep
  // emptied some of our ring after the failed push, the retry succeeds; if not, the next sweep
  // that takes from it bumps swept_ after our load and wakes us.
  void push_all(SenderRing& r, void* const* items, unsigned n) noexcept {
    for (;;) {
      unsigned pushed = push(r, items, n);
      if (pushed < n) {
        // acquire: pairs with the release fetch_add in flush().
        const uint32_t seen = swept_.load(std::memory_order_acquire);
        pushed += push(r, items + pushed, n - pushed);
        if (pushed < n) {
          wake_drainer(r);
          spin_then_park(swept_, [seen](uint32_t now) { return now != seen; }, kYieldsBeforePark);
        }
      }
      items += pushed;
      n -= pushed;
      if (n == 0) break;
    }
    wake_drainer(r);
  }

  unsigned push(SenderRing& r, void* const* items, unsigned n) noexcept {
    if (!r.shared) {
      const unsigned pushed = txpath_ck_ring_enqueue_burst_spsc(r.ring.get(), items, n);
      r.pushed += pushed;
      return pushed;
    }
    std::lock_guard lock(r.producers);
    return txpath_ck_ring_enqueue_burst_spsc(r.ring.get(), items, n);
  }

  // After a push into `r`. A parked drainer is woken; a napping one only once `r` is half
  // full (the nap ends by itself within kNapNs otherwise).
  void wake_drainer(const SenderRing& r) noexcept {
    // seq_cst fence: Dekker pair with park() (its seq_cst store of sleeping_ + fence, then the
    // ring re-check): either the drainer sees our packet or we see it sleeping.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // relaxed: ordered by the fence above.
    const uint32_t state = sleeping_.load(std::memory_order_relaxed);
    if (state == kAwake) return;
    if (state == kNapping && txpath_ck_ring_size(r.ring.get()) < ring_slots_ / 2) return;
    // The exchange makes exactly one sender wake it; seq_cst so that notify_one's waiter-count
    // read cannot pass it (park.hpp).
    const uint32_t was = sleeping_.exchange(kAwake, std::memory_order_seq_cst);
    if (was == kParked) sleeping_.notify_one();
    if (was == kNapping) futex_wake_all(sleeping_);
  }

 protected:
  // QueueBase::shutdown(): the drainer must be gone before the qdisc is reset and the rings are
  // purged.
  void stop_workers() noexcept override { stop_drainer(); }

  bool quiescent() noexcept override {
    this->root_.lock();
    bool idle = rings_empty();
    // seq_cst: orders the ring reads before the busy_ read (pairs with begin_take()'s fence).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // acquire: pairs with the release clear in flush() / after an empty sweep.
    idle = idle && !busy_.load(std::memory_order_acquire) && !this->is_running() &&
           this->backlog_packets() == 0;
    this->root_.unlock();
    return idle;
  }

  // A pop that emptied part of a ring before stats() read it is seen here as busy_ (the Dekker
  // pair with begin_take(), as in quiescent()); the packets in hand may then be in no counter yet
  // (in_hand_ is stored after the pop). Root lock held: the drainer cannot be inside flush().
  bool snapshot_complete() const noexcept override {
    // seq_cst: orders stats()'s ring reads before the busy_ read (pairs with begin_take()'s fence).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return !busy_.load(std::memory_order_acquire);  // acquire: pairs with end_take()'s release
  }

  uint64_t strategy_queued() const noexcept override {
    // acquire: pairs with register_sender()'s release store; rings_[0..n) are written.
    const uint32_t n = nrings_.load(std::memory_order_acquire);
    uint64_t total = txpath_ck_ring_size(fallback_->ring.get());
    for (uint32_t i = 0; i < n; ++i) total += txpath_ck_ring_size(rings_[i]);
    // relaxed: a statistic; 0 at quiescence.
    return total + in_hand_.load(std::memory_order_relaxed);
  }

  uint64_t purge_strategy(PacketList& to_free) noexcept override {
    // The drainer thread is gone: shutdown() ran stop_workers() first, so nothing pops with us.
    const std::size_t before = to_free.size();
    void* burst[kPerRing];
    auto purge = [&](txpath_ck_ring* r) {
      for (unsigned got; (got = txpath_ck_ring_dequeue_burst_spsc(r, burst, kPerRing)) > 0;)
        for (unsigned j = 0; j < got; ++j) to_free.push_back(static_cast<Packet*>(burst[j]));
    };
    const uint32_t n = nrings_.load(std::memory_order_acquire);  // acquire: as strategy_queued()
    for (uint32_t i = 0; i < n; ++i) purge(rings_[i]);
    purge(fallback_->ring.get());
    return to_free.size() - before;
  }

 private:
  // Slow path of send(): find or create the calling thread's ring for this queue.
  SenderRing* attach_caller() noexcept {
    try {
      SenderCache& cache = tls_cache;
      // acquire: pairs with ~DrainerQueue's release store; that queue is gone for good.
      std::erase_if(cache.entries, [](const SenderCache::Entry& e) {
        return e.ring->queue_gone.load(std::memory_order_acquire);
      });
      for (const auto& e : cache.entries) {
        if (e.queue_id != id_) continue;
        RingCache::store(id_, e.ring.get());
        return e.ring.get();
      }
      cache.entries.reserve(cache.entries.size() + 1);  // may throw; nothing adopted yet
      std::shared_ptr<SenderRing> r = register_sender();
      SenderRing* const ring = r.get();
      RingCache::store(id_, ring);
      cache.entries.push_back({id_, std::move(r)});
      return ring;
    } catch (...) {
      return nullptr;  // the packet is dropped and counted
    }
  }

  std::shared_ptr<SenderRing> register_sender() {
    std::lock_guard lock(reg_mutex_);
    const uint32_t n = nrings_.load(std::memory_order_relaxed);  // relaxed: written under lock
    for (uint32_t i = 0; i < n; ++i) {
      bool expected = false;
      // acquire: pairs with the exiting owner's release store (~SenderCache): its pushes
      // happen-before ours. relaxed on failure: nothing is read.
      if (owners_[i]->owned.compare_exchange_strong(expected, true, std::memory_order_acquire,
                                                    std::memory_order_relaxed))
        return owners_[i];
    }
    if (n == kMaxSenders) return fallback_;
    auto r = std::make_shared<SenderRing>(ring_slots_, false);
    owners_.push_back(r);  // capacity reserved in the constructor
    rings_[n] = r->ring.get();
    // release: publishes rings_[n] to the drainer's acquire load.
    nrings_.store(n + 1, std::memory_order_release);
    return r;
  }

  bool rings_empty() const noexcept {
    // acquire: pairs with register_sender()'s release store.
    const uint32_t n = nrings_.load(std::memory_order_acquire);
    bool empty = txpath_ck_ring_size(fallback_->ring.get()) == 0;
    for (uint32_t i = 0; i < n && empty; ++i) empty = txpath_ck_ring_size(rings_[i]) == 0;
    return empty;
  }

  // Announce "about to pop": quiescent() must not miss packets between a ring and the qdisc.
  void begin_take() noexcept {
    busy_.store(true, std::memory_order_relaxed);  // relaxed: ordered by the fence below
    // seq_cst: pairs with quiescent()'s fence between its ring reads and its busy_ read.
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }

  // Root lock held, in the critical section that enqueues what was taken: no longer in hand.
  void end_take() noexcept {
    in_hand_.store(0, std::memory_order_relaxed);  // relaxed: a statistic
    // release: pairs with quiescent()'s acquire load; what we enqueued is visible with it.
    busy_.store(false, std::memory_order_release);
  }

  // Steps 3-5 of strategy/serialize.hpp for what the sweep took: enqueue the batch (a lone
  // packet may take the bypass) and run the driver loop under the root lock, then free.
  // `from_first`: how many of the batch came from rings_[0] (see first_flushed_).
  void flush(PacketList& batch, uint64_t from_first) noexcept {
    PacketList to_free;
    this->root_.lock();
    // busy_ is read only under the root lock (quiescent(), snapshot_complete()), and the lock is
    // held until serialize() has the batch in the qdisc or, bypassing, in the hands of the
    // RUNNING owner: no reader sees the batch between busy_ and those places.
    end_take();
    this->serialize(this->root_, batch, to_free);
    if (from_first != 0)
      // One writer (this thread), so a load and a store. release: pairs with the acquire load in
      // alone_possible(); the enqueue above happens-before a sender that reads the new count.
      first_flushed_.store(first_flushed_.load(std::memory_order_relaxed) + from_first,
                           std::memory_order_release);
    this->root_.unlock();
    free_packets(std::move(to_free));  // drop victims, after the lock is released
    // seq_cst: the release half pairs with the acquire load in send()'s full-ring wait; seq_cst
    // so that notify_all's waiter-count read cannot pass it (park.hpp). It wakes the senders
    // parked there (one load when none is).
    swept_.fetch_add(1, std::memory_order_seq_cst);
    swept_.notify_all();
  }

  void drainer_main() noexcept {
    // A DPDK TX core is dedicated; ours shares the CPUs with the senders. With more senders
    // than cores, equal CFS weight gives it 1/9 of a core at 16 senders on 2 cores, and every
    // sender then waits on its full ring. Raise its weight (nice -10, about 9x) when allowed
    // (CAP_SYS_NICE or root); otherwise carry on at normal priority.
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kDrainerNice);
    void* burst[kPerRing];
    uint32_t start = 0;
    bool napped = false;  // the last empty sweep followed a nap
    // acquire: pairs with stop_drainer()'s store.
    while (!stop_.load(std::memory_order_acquire)) {
      // acquire: pairs with register_sender()'s release store; rings_[0..n) are written.
      const uint32_t n = nrings_.load(std::memory_order_acquire);
      const uint32_t total = n + 1;  // index n is the shared fallback ring
      if (start >= total) start = 0;
      PacketList batch;
      uint64_t from_first = 0;  // of `batch`, taken from rings_[0]
      std::size_t moved = 0;  // packets this sweep handed to the qdisc
      begin_take();
      for (uint32_t k = 0; k < total; ++k) {
        const uint32_t i = start + k < total ? start + k : start + k - total;
        txpath_ck_ring* r = i < n ? rings_[i] : fallback_->ring.get();
        const unsigned got = txpath_ck_ring_dequeue_burst_spsc(r, burst, kPerRing);
        if (got == 0) continue;
        if (i == 0 && n > 0) from_first += got;
        for (unsigned j = 0; j < got; ++j) batch.push_back(static_cast<Packet*>(burst[j]));
        in_hand_.store(batch.size(), std::memory_order_relaxed);  // relaxed: a statistic
        if (batch.size() >= kFlushAt) {
          moved += batch.size();
          flush(batch, from_first);
          from_first = 0;
          begin_take();
        }
      }
      ++start;  // the next sweep begins one ring later: no ring is always first
      if (!batch.empty()) {
        moved += batch.size();
        flush(batch, from_first);
      } else {
        busy_.store(false, std::memory_order_release);  // release: as end_take()
      }
      if (moved > 0) {
        napped = false;
        // A trickle (a lone sender, or senders slower than we are): nap before the next sweep,
        // so that the next batch is hundreds, not one or two packets, each paying a sweep, a
        // root-lock round and a device doorbell (an AF_PACKET kick is a system call).
        if (moved < kCoalesceBelow) nap();
      } else if (!napped) {
        nap();  // traffic just stopped or comes in trickles: let it accumulate
        napped = true;
      } else {
        park();  // nothing came during a whole nap: sleep until a push
        napped = false;
      }
    }
  }

  // The coalescing nap: a timed sleep that a push ends only once its ring is half full
  // (wake_drainer()), so a lone sender's packets are taken a few hundred at a time instead of
  // one by one, and its ring's cache lines stay with it meanwhile. A packet pushed during the
  // nap waits kNapNs at most; nothing is stranded, the nap ends by itself. A stop ends it too.
  void nap() noexcept {
    // seq_cst: if our store follows stop_drainer()'s store of kAwake, we see stop_ below.
    sleeping_.store(kNapping, std::memory_order_seq_cst);
    if (!stop_.load(std::memory_order_seq_cst))  // seq_cst: see the store above
      futex_wait_for(sleeping_, kNapping, kNapNs);
    // relaxed: only we wait on the word; a waker's exchange wrote kAwake already.
    sleeping_.store(kAwake, std::memory_order_relaxed);
  }

  // The drainer's sleep: see "Why no packet is stranded" in the header comment.
  void park() noexcept {
    // seq_cst store + fence: Dekker pair with send()'s fence and load, and with stop_drainer().
    sleeping_.store(kParked, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // seq_cst: if our store of 1 follows stop_drainer()'s store of 0, we see stop_ here.
    if (stop_.load(std::memory_order_seq_cst) || !rings_empty()) {
      sleeping_.store(0, std::memory_order_relaxed);  // relaxed: only we wait on it
      return;
    }
    spin_then_park(sleeping_, [](uint32_t v) { return v == kAwake; });
  }

  void stop_drainer() noexcept {
    if (!drainer_.joinable()) return;
    // seq_cst, both: the drainer either sees stop_ in park() or sees the word change.
    stop_.store(true, std::memory_order_seq_cst);
    sleeping_.store(kAwake, std::memory_order_seq_cst);
    sleeping_.notify_all();         // a park (std::atomic::wait)
    futex_wake_all(sleeping_);      // a nap (raw futex)
    drainer_.join();
  }

  const uint64_t id_;          // this instance, for the thread caches (never reused)
  const bool lone_sender_path_;  // !device.xmit_more_pays(): see "A lone sender"
  const unsigned ring_slots_;  // per-sender ring size (power of two)
  std::mutex reg_mutex_;       // registration: owners_, rings_, nrings_ (writers)
  std::vector<std::shared_ptr<SenderRing>> owners_;
  std::unique_ptr<txpath_ck_ring*[]> rings_;  // [0, nrings_) published to the drainer
  std::shared_ptr<SenderRing> fallback_;
  std::atomic<uint32_t> nrings_{0};

  // Written by the drainer, read by quiescent() / stats(); own line, away from sleeping_.
  alignas(64) std::atomic<bool> busy_{false};
  std::atomic<uint64_t> in_hand_{0};
  std::atomic<bool> stop_{false};
  // Read by every sender after each push: its own line, written only around parks.
  alignas(64) std::atomic<uint32_t> sleeping_{0};
  // Packets taken from rings_[0] that flush() has enqueued (or bypassed), under the root lock:
  // a lone sender whose ring's `pushed` equals it has nothing in the ring or in the drainer's
  // hands. Written by the drainer only.
  alignas(64) std::atomic<uint64_t> first_flushed_{0};
  // Flushes done by the drainer (wraps): what a sender with a full ring waits on.
  alignas(64) std::atomic<uint32_t> swept_{0};
  alignas(64) std::thread drainer_;
};

}  // namespace

std::unique_ptr<QueueBase> make_drainer_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                              const TxQueueConfig& config) {
  return with_lock_kind(*parse_lock_kind(config.lock),
                        [&]<class Lock>() -> std::unique_ptr<QueueBase> {
                          auto queue = std::make_unique<Finalized<DrainerQueue<Lock>>>(
                              device, std::move(qdisc), config);
                          queue->start_drainer();
                          return queue;
                        });
}

}  // namespace txpath
