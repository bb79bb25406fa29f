// SPDX-License-Identifier: MIT
// A transmit queue: contention strategy -> qdisc -> driver loop -> device.
//
//   auto pool = txpath::Pool({});
//   auto dev  = txpath::make_device("nic");
//   auto txq  = txpath::TxQueue::create(*dev, {.strategy = "busylock", .lock = "mcs"});
//   Packet* p = cache.get(); ... fill p->data, p->len ...; txq->send(p);
//   txq->drain(std::chrono::seconds(1));
//
// send() is thread-safe (that is the whole point); every other member is too unless noted.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/device.hpp"
#include "txpath/packet.hpp"
#include "txpath/qdisc.hpp"

namespace txpath {

struct TxQueueConfig {
  std::string strategy = "busylock";  // see strategy_names()
  std::string lock = "ticket";        // see lock_names(); used by lock-based strategies
  std::string qdisc = "pfifo_fast";   // tc-style spec, see make_qdisc()
  // If set, builds the root qdisc instead of `qdisc` (a tc configuration's tree, see tc.hpp).
  std::function<std::unique_ptr<Qdisc>(const QdiscEnv&)> root_qdisc;
  uint32_t txqueuelen = 1000;         // dev->tx_queue_len: default limit of fifo qdiscs
  int quota = 64;                     // dev_tx_weight: packets per driver-loop run
  uint32_t max_burst = 1000;          // qdisc_max_burst: cap of the `llist` defer list
  // How often the per-queue service thread (our net_tx_action) looks for deferred work while
  // senders are active; when idle it sleeps until kicked.
  std::chrono::microseconds service_tick{50};
  // Start the per-queue service thread. Without it, deferred runs and device completions are
  // processed only when the application calls TxQueue::service() (a later send() also runs the
  // qdisc, but never reaps completions): for event-loop applications that own their threads,
  // and for deterministic tests. drain() then needs service() calls meanwhile.
  bool service_thread = true;
  // The CPUs the service thread may run on: the affinity of the queue's TX completion interrupt,
  // whose work (reaping completions, the run a woken queue schedules) the service thread does.
  // The kernel's advice (Documentation/networking/scaling.rst, XPS) is to send on, and take the
  // queue's completions on, the same CPUs: completions then touch packets still in that CPU's
  // cache, and the run after a wake dequeues them there. Empty: any CPU. Best effort: CPUs this
  // process may not use are ignored (none usable: any CPU).
  std::vector<unsigned> service_cpus;
};

// What became of a packet handed to send().
enum class SendStatus : uint8_t {
  queued,      // accepted (NET_XMIT_SUCCESS); the queue owns the packet
  congested,   // accepted, another packet was dropped to make room (NET_XMIT_CN)
  dropped,     // accepted and dropped (NET_XMIT_DROP); the queue freed it
  too_big,     // refused: longer than the device's max frame; the caller still owns the packet
  invalid,     // refused: not a packet the queue can take (nullptr, no pool, len > capacity
               // but within the max frame, else too_big); the caller still owns it, nothing
               // was read past its header (docs/library.md, "Refusals")
  in_flight,   // refused: this packet was already handed over (an earlier send(), or earlier in
               // the same burst) and has not been handed out by its pool again since; the first
               // submission stands, this one changed nothing
};

// Whether a status means the queue took the packet (queued, congested, dropped): the others
// leave it with the caller (too_big, invalid) or with its first submission (in_flight).
constexpr bool is_accepted(SendStatus s) noexcept {
  return s == SendStatus::queued || s == SendStatus::congested || s == SendStatus::dropped;
}

struct TxQueueStats {
  uint64_t submitted = 0;  // packets accepted by send() (all but too_big, invalid, in_flight)
  uint64_t sent = 0;       // accepted by the device
  uint64_t dropped = 0;    // dropped by the qdisc, the strategy, or purged at teardown
  uint64_t queued = 0;     // in the qdisc, the requeue list, or a strategy's hand-off lists
  uint64_t requeues = 0;   // packets put back after the device said busy / stopped mid-batch
  uint64_t bypassed = 0;   // packets sent by the empty-qdisc bypass
  uint64_t runs = 0;       // driver-loop runs (ownership acquisitions)
  uint64_t deferred_runs = 0;  // runs performed by the service thread
  uint64_t batches = 0;    // bulk dequeues handed to the device
  uint64_t lock_waits = 0;    // strategy lock acquisitions that had to wait (root, busylock)
  uint64_t lock_wait_ns = 0;  // time spent waiting in them
  QdiscStats qdisc;        // the root qdisc's tc statistics (requeue list included in qlen/backlog)
  DeviceStats device;
};

class TxQueue {
 public:
  // Throws ConfigError (one line) for an unknown strategy, lock kind or bad qdisc spec.
  static std::unique_ptr<TxQueue> create(Device& device, const TxQueueConfig& config = {});
  virtual ~TxQueue() = default;

  // Hands a packet to the transmit path. Ownership passes to the queue unless refused (too_big,
  // invalid: still the caller's; in_flight: already the queue's). Checked before anything else
  // of the packet is read: nullptr, no pool, len > capacity, a second submission.
  virtual SendStatus send(Packet* p) noexcept = 0;

  // Hands a burst to the transmit path with one serialisation (the role of DPDK's
  // rte_eth_tx_burst() or a batch on AF_XDP's TX ring): the packets enter the queue in order and
  // the driver loop hands them to the device with `more` set until the last one it dequeues, so
  // a burst on an idle queue costs one lock round and one doorbell. status[i] receives
  // packets[i]'s verdict, with send()'s meanings; only the first min(packets.size(),
  // status.size()) packets are looked at (the rest stay with the caller, untouched). A too_big
  // or invalid packet stays with the caller; the same packet twice in a burst (or one already
  // submitted) is in_flight the second time; every other passes to the queue. Returns the
  // number accepted (all but those refusals). Thread-safe, as send(); per-sender order holds across send() and
  // send_burst() calls.
  virtual std::size_t send_burst(std::span<Packet* const> packets,
                                 std::span<SendStatus> status) noexcept = 0;

  // Waits, without sending anything, until every accepted packet has been sent or dropped and
  // the device has completed it. Returns false on timeout. Senders should have stopped.
  virtual bool drain(std::chrono::milliseconds timeout) = 0;

  // One round of the service thread's work, on the calling thread: reap device completions that
  // are due, and perform a pending deferred driver-loop run. Returns true if a run was pending.
  // Thread-safe; needed only with service_thread = false.
  virtual bool service() noexcept = 0;

  // Reads every counter on its own, without stopping anything: cheap, and any thread may call
  // it while senders run. The fields are not one snapshot: while a driver-loop run is in flight
  // (the service thread, or a peer's drainer, can still be moving the last batch after every
  // sender has returned) a batch taken from the qdisc but not yet counted as sent is in neither
  // `queued` nor `sent`, so submitted == sent + dropped + queued may not hold at that instant.
  // It holds after drain(), and always in consistent_stats().
  virtual TxQueueStats stats() const = 0;
  // One consistent snapshot, taken where Linux dumps qdisc statistics: in the qdisc's serialised
  // context (root lock held, RUNNING owned; for the peers, by their drainer between bursts), so
  // no batch is between the qdisc and the device. Once every sender has returned from send(),
  // submitted == sent + dropped + queued holds in it. Waits up to `timeout` (the queue stops for
  // the time of one stats() read); nullopt on timeout or while the queue is being destroyed.
  // Without the service thread it is served by the next send() or service() call. Throws
  // UsageError when called from inside this queue's inspect_qdisc()/edit_qdisc() callback.
  virtual std::optional<TxQueueStats> consistent_stats(std::chrono::milliseconds timeout) = 0;
  virtual std::string_view strategy() const noexcept = 0;
  virtual std::string_view lock_kind() const noexcept = 0;
  // The root qdisc; nullptr for the peer baselines ("peer:..."), which have none.
  virtual const Qdisc* qdisc() const noexcept = 0;
  // Runs fn(root qdisc) in the qdisc's serialised context — the driver-loop owner's, root lock
  // held (Linux dumps qdisc stats under the root lock) — so that a reading of statistics and
  // xstats is consistent while senders run. Any thread except one inside fn. Waits up to
  // `timeout`; false on timeout or for a strategy without a qdisc (peer:*). Without the service
  // thread it is served by the next send() or service() call.
  // Concurrent calls are served one after the other (each within its own timeout); a queue being
  // destroyed answers false. fn runs on a thread of the queue (sender, service or drainer
  // thread) and should be short: the qdisc is stopped meanwhile. An exception thrown by fn is
  // rethrown here. With strategy `nolock` the senders' enqueues into the lockless rings are not
  // excluded (as in Linux), only the driver loop; its qlen/backlog live in the rings' per-thread
  // counters, not in Qdisc::stats(). Called from inside fn (or an edit_qdisc() callback) of the
  // same queue it would wait for itself: it throws UsageError at once instead (docs/library.md).
  virtual bool inspect_qdisc(const std::function<void(const Qdisc&)>& fn,
                             std::chrono::milliseconds timeout) = 0;
  virtual Device& device() noexcept = 0;

  // A change of the running qdisc tree (tc qdisc|class add|change|replace|del on a running
  // queue: txpath::tc::LiveStats::apply builds on it). fn(root, edit) runs in the same serialised
  // context as inspect_qdisc() — the driver-loop owner's, root lock held, as Linux changes a
  // qdisc under the root lock — so the senders and the loop see the tree before or after, never
  // in between, and the next dequeue runs the new one. fn may change `root` in place, or hand a
  // new root in edit.root (the old one is destroyed after; whatever it still holds is dropped).
  // Every packet fn takes out of the tree for good goes on edit.freed, and edit.dropped says how
  // many of those are new drops (queued packets that will never be sent: trimmed by a lower
  // limit, purged with a replaced or deleted qdisc). The packets are freed after, on the
  // caller's thread; TxQueueStats::dropped grows by exactly edit.dropped (whatever part of it the
  // root's own drops counter holds), so submitted == sent + dropped + queued keeps holding.
  // Waits up to `timeout`; false on timeout, for a queue without a qdisc (peer:*), and for
  // strategy `nolock` (its senders enqueue into the root without the root lock). An exception
  // thrown by fn is rethrown here (fn must then leave the tree as it found it). Any thread except
  // one inside fn: from inside this queue's edit_qdisc()/inspect_qdisc() callback it throws
  // UsageError (for a strategy whose tree is editable).
  struct QdiscEdit {
    std::unique_ptr<Qdisc> root;  // a new root, or nullptr: the root stays
    PacketList freed;             // packets taken out of the tree for good, freed after
    uint64_t dropped = 0;         // how many of `freed` are new drops
    // The root qdisc goes (deleted, or replaced by another kind or handle), not merely rebuilt:
    // the driver loop's requeue list (packets dequeued and refused by the device) goes with it,
    // dropped and counted in `dropped`, as Linux's qdisc_reset() of the old root frees its
    // gso_skb / skb_bad_txq lists. false: they stay and are sent first (the root stays).
    bool root_goes = false;
  };
  virtual bool edit_qdisc(const std::function<void(Qdisc& root, QdiscEdit& edit)>& fn,
                          std::chrono::milliseconds timeout) = 0;
};

std::vector<std::string> strategy_names();
std::vector<std::string> lock_names();

}  // namespace txpath
