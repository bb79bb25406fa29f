// SPDX-License-Identifier: MIT
// The queueing-discipline interface, modelled on Linux Qdisc_ops.
//
// Threading: a Qdisc is called by one thread at a time; the contention strategy guarantees it
// (root lock, combiner, drainer ...). A qdisc never frees a packet and never takes a lock:
// victims of enqueue go on the caller-owned `to_free` list, freed after every lock is released.
//
// Accounting invariant, at every point where the qdisc is not being called:
//   qlen()    == number of packets held,
//   backlog() == sum of their lengths,
//   stats().packets/bytes count dequeued packets (bstats; bypassed packets are added by the
//   driver loop via count_bypass()), stats().drops counts every packet the qdisc put on to_free.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "txpath/counter.hpp"
#include "txpath/packet.hpp"
#include "txpath/qdisc_dump.hpp"
#include "txpath/traffic_classes.hpp"

namespace txpath {

// NET_XMIT_SUCCESS / NET_XMIT_DROP / NET_XMIT_CN.
enum class Verdict : uint8_t {
  success,     // the packet was queued
  drop,        // the packet was dropped (it is on to_free)
  congestion,  // the packet was queued, but another one was dropped to make room (on to_free)
};

// tc's generic statistics (gnet_stats_basic + gnet_stats_queue).
struct QdiscStats {
  uint64_t bytes = 0;
  uint64_t packets = 0;
  uint64_t drops = 0;
  uint64_t overlimits = 0;
  uint64_t requeues = 0;
  uint64_t backlog = 0;
  uint64_t qlen = 0;
};

// Adds s's counters into sum, every field (qlen and backlog too: Linux's mq sums its children's).
inline void add_counts(QdiscStats& sum, const QdiscStats& s) noexcept {
  sum.bytes += s.bytes;
  sum.packets += s.packets;
  sum.drops += s.drops;
  sum.overlimits += s.overlimits;
  sum.requeues += s.requeues;
  sum.backlog += s.backlog;
  sum.qlen += s.qlen;
}

// Device facts a qdisc needs to pick its defaults (Linux: dev->tx_queue_len, psched_mtu()).
// make_qdisc(), add_class() and TxQueue::create() refuse an environment outside these ranges
// (check_qdisc_env()): mtu kMinQdiscMtu..kMaxQdiscMtu, tx_queues 1..kMaxTxQueues.
struct QdiscEnv {
  uint32_t txqueuelen = 1000;  // default limit of fifo-like queues
  uint32_t mtu = 1500;         // L3 MTU; psched_mtu() = mtu + Ethernet header (14)
  uint32_t psched_mtu() const noexcept { return mtu + 14; }
  // The clock of time-based qdiscs (shapers, AQM), in ns; steady, monotonic. Tests substitute a
  // simulated clock; nullptr means txpath's now_ns().
  uint64_t (*clock)() = nullptr;
  // The major number of the qdisc's handle (tc "handle 1:"), 0 = none. Classful qdiscs name their
  // classes major:minor and classify a packet whose priority is one of their classids (prio, htb).
  uint16_t handle_major = 0;
  // The device's TX queues (Linux: dev->num_tx_queues): mq and mqprio make one child per queue
  // and are refused on a device with one.
  uint32_t tx_queues = 1;
};

// The MTUs a QdiscEnv may name: IPv4's minimum (68, the kernel's ETH_MIN_MTU) up to 65536, the
// loopback device's (the largest MTU a Linux device has by default; ETH_MAX_MTU is 65535). The
// qdiscs' defaults (quantum = psched_mtu(), fq's 2x and 10x, bfifo's txqueuelen x) are sized
// from it, and stay positive and far from overflow within it.
inline constexpr uint32_t kMinQdiscMtu = 68;
inline constexpr uint32_t kMaxQdiscMtu = 65536;
// Throws ConfigError (one line, "qdisc environment: mtu 0 is out of range (68..65536)", the same
// for tx_queues and 1..kMaxTxQueues) unless `env` is within the ranges above.
void check_qdisc_env(const QdiscEnv& env);

// One class of a classful qdisc (tc class show). Its classid is handle_major:minor.
struct QdiscClassInfo {
  uint16_t minor = 0;
  uint16_t parent_minor = 0;  // 0: a top-level class (its parent is the qdisc itself)
  bool print_root = false;    // tc prints "root" instead of "parent H:" (htb's top-level classes)
  bool leaf = true;           // a leaf class: it has a child qdisc (graft() replaces it)
  bool parent_none = false;   // tc prints "parent none" (mqprio's queue outside every class)
};

class Qdisc;
class QdiscOptions;  // txpath/qdisc_options.hpp: a class's option tokens, for add/change_class

// The class operations of a classful qdisc (the kernel's Qdisc_class_ops): tc class show, add,
// change, del and graft. A classful qdisc derives from Qdisc and ClassOps and hands itself to
// Qdisc::set_class_ops(); a classless one has none (Qdisc::class_ops() is nullptr).
// Threading: like the Qdisc's own members, called in the qdisc's serialised context; the
// changing ones (add, change, delete, graft) only on the control path, never while the data
// path runs (they may allocate).
class ClassOps {
 public:
  // The qdisc's kind ("htb"), for refusals; the classful qdisc's own Qdisc::kind() overrides it.
  virtual std::string_view kind() const noexcept = 0;
  // Every class, parents before children (tc's dump order).
  virtual std::vector<QdiscClassInfo> classes() const = 0;
  // The child qdisc of leaf class `minor`, or nullptr if there is no such leaf class.
  virtual Qdisc* child(uint16_t minor) noexcept = 0;
  // Replaces leaf class `minor`'s child (nullptr: a fresh default child). The old child's packets
  // go to to_free (not counted as drops). Throws ConfigRejected if there is no such leaf class.
  virtual void graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) = 0;
  // The class's tc statistics and xstats (tc -s class show; htb's lended, borrowed, giants,
  // tokens, ctokens); same threading rule as Qdisc::xstats().
  virtual QdiscStats class_stats(uint16_t minor) const = 0;
  virtual Xstats class_xstats(uint16_t minor) const {
    (void)minor;
    return {};
  }
  // Whether tc -s prints counters for the classes (tbf's kernel class reports none: tc prints
  // an empty line instead).
  virtual bool class_has_stats() const noexcept { return true; }
  // The class's options, typed (the kernel's Qdisc_class_ops.dump; txpath/qdisc_dump.hpp), e.g.
  // htb's prio, rate, ceil, buffer ticks; none for prio's, tbf's and mq's classes. tc/ prints
  // them (txpath/tc.hpp, class_options_text()).
  virtual DumpAttrs class_dump(uint16_t minor) const {
    (void)minor;
    return {};
  }
  // A live tc change rebuilt the tree (txpath::tc::LiveStats::apply) and this qdisc replaces
  // `old`, a qdisc of the same kind and handle: each class of this qdisc that `old` has too (the
  // same minor) goes on with old's counters and state, as the kernel changes a class in place
  // (htb: bytes, packets, drops, overlimits, xstats, tokens, ctokens and the time they were
  // last charged). Called before any packet enters this qdisc, in the serialised context.
  // Default: nothing carried (prio's and tbf's classes count through their children).
  virtual void continue_classes(const ClassOps& old) noexcept { (void)old; }
  // The classes in the order the kernel lists them (tc class show); classes() by default.
  virtual std::vector<QdiscClassInfo> listed_classes() const { return classes(); }
  // The warning the kernel gives after adding or changing class `minor` as it is now (tc prints
  // it on stderr, e.g. "Warning: sch_htb: quantum of class 10001 is big. Consider r2q change."),
  // or "" for none.
  virtual std::string class_warning(uint16_t minor) const {
    (void)minor;
    return {};
  }
  // tc class add / change / del. Errors: ConfigError for a bad option (tc's parse error, exit 1),
  // ConfigRejected for a request the qdisc refuses (exit 2: no such parent, class exists, class
  // has children). `options` are the tokens after the class's kind. parent_minor 0 = at the top
  // of the qdisc. Default: the classes are fixed (prio, tbf): ConfigRejected.
  virtual void add_class(uint16_t minor, uint16_t parent_minor, const QdiscOptions& options,
                         const QdiscEnv& env);
  virtual void change_class(uint16_t minor, const QdiscOptions& options, const QdiscEnv& env);
  virtual void delete_class(uint16_t minor);

 protected:
  ~ClassOps() = default;  // owned as the Qdisc it is part of
};

class Qdisc {
 public:
  virtual ~Qdisc() = default;

  virtual std::string_view kind() const noexcept = 0;
  // The qdisc's options, typed (the kernel's Qdisc_ops.dump, TCA_OPTIONS; txpath/qdisc_dump.hpp):
  // e.g. pfifo's {limit: 1000} (packets), tbf's rate, limit and bucket ticks. The text and the
  // JSON tc prints are made from them in tc/ (txpath/tc.hpp, options_text(), options_json()), as
  // iproute2 prints what the kernel dumps. Called in the qdisc's serialised context or on a tree
  // no thread is using, like xstats().
  virtual DumpAttrs dump_options() const = 0;
  // Kind, options and xstats together.
  QdiscDump dump() const { return {std::string(kind()), dump_options(), xstats()}; }

  virtual Verdict enqueue(Packet* p, PacketList& to_free) noexcept = 0;
  // A live tc change (txpath::tc::LiveStats::apply) rebuilt the tree, and this qdisc takes a
  // packet that the qdisc it replaces held, in that qdisc's order. Linux changes a qdisc in
  // place, so its queue stays: a fifo keeps what it holds over a lowered limit and refuses new
  // packets until it is below (sch_fifo.c's change does not trim); codel trims its head to the
  // new limit (codel_change) and fq_codel dequeues down to it (fq_codel_change), which settle()
  // does once every packet is in. A classful qdisc
  // hands the packet to its class's child's adopt(). Default: enqueue() (over the limit: a drop).
  virtual Verdict adopt(Packet* p, PacketList& to_free) noexcept { return enqueue(p, to_free); }
  // After the last adopt(): trim to the limits as the kernel's change does (drops counted), in
  // this qdisc and below it. Default: nothing.
  virtual void settle(PacketList& to_free) noexcept { (void)to_free; }
  // Before adopt(): the live change gave this qdisc other options than the one it replaces had,
  // so the kernel would have called its change operation (red_change swaps in a new child and
  // drops what the old one held). Default: nothing more than adopt() and settle() do.
  virtual void changed_in_place() noexcept {}
  virtual Packet* dequeue() noexcept = 0;
  virtual Packet* peek() noexcept = 0;
  // Removes every queued packet onto to_free (they are not counted as drops); qlen/backlog -> 0.
  virtual void reset(PacketList& to_free) noexcept = 0;

  // TCQ_F_CAN_BYPASS: an empty qdisc of this configuration may be skipped by the driver loop.
  virtual bool can_bypass() const noexcept { return false; }

  // The watchdog (qdisc_watchdog_schedule_ns). A shaping qdisc whose dequeue() returned nullptr
  // while it holds packets that become eligible later returns that time here (steady-clock ns,
  // the env clock); 0 when it is not throttled. The driver loop re-runs the qdisc at that time
  // without any further send(), so nothing is stranded and nobody polls. Called by the loop
  // owner right after a dequeue() that returned nullptr.
  virtual uint64_t watchdog_ns() const noexcept { return 0; }

  // Packets the qdisc dropped inside dequeue() (AQM: CoDel), already counted in drops. dequeue()
  // has no to_free list, so such a qdisc keeps them; the driver loop collects them here after
  // every bulk dequeue and frees them once the root lock is released (and before reset() at
  // teardown, so that they are not counted twice). Classful qdiscs forward to their children.
  virtual void take_dequeue_drops(PacketList& out) noexcept { (void)out; }

  // Bytes the qdisc allocated up front for its options, beyond the object itself: flow pools and
  // hash tables (fq, fq_codel), class tables (htb). A tc configuration's tree is built within a
  // budget of these (tc.hpp, kMaxTreeBytes), so that options cannot turn a small file into
  // gigabytes. Classful qdiscs count their classes, not their children (built and counted on
  // their own). Default: 0.
  virtual std::size_t preallocated_bytes() const noexcept { return 0; }

  // ---- tc -s: extended statistics ----
  // The qdisc's xstats. Like every member, called in the qdisc's serialised context: a running
  // TxQueue reads them through TxQueue::inspect_qdisc() (the driver-loop owner's context), so
  // they need no atomics. Default: none.
  virtual Xstats xstats() const { return {}; }

  // ---- tc class ----
  // The class operations (ClassOps), or nullptr for a classless qdisc. Not a virtual call: the
  // qdisc registers them once, at construction (set_class_ops).
  ClassOps* class_ops() noexcept { return class_ops_; }
  const ClassOps* class_ops() const noexcept { return class_ops_; }

  uint64_t qlen() const noexcept { return qlen_.get(); }
  uint64_t backlog() const noexcept { return backlog_.get(); }
  uint64_t drops() const noexcept { return drops_.get(); }  // stats().drops, one load
  QdiscStats stats() const noexcept;

  // A live tc change (txpath::tc::LiveStats::apply) rebuilds the tree: a qdisc that stays goes
  // on with the counters of the one it replaces (bytes, packets, drops, overlimits; the root's
  // drops plus those of a purged qdisc below it, qdisc_tree_reduce_backlog). Serialised context
  // only.
  void continue_counters(const QdiscStats& old) noexcept {
    bytes_.add(old.bytes);
    packets_.add(old.packets);
    drops_.add(old.drops);
    overlimits_.add(old.overlimits);
  }

  // A packet sent by the empty-queue bypass still counts as sent by the qdisc (bstats).
  void count_bypass(const Packet& p) noexcept {
    bytes_.add(p.len);
    packets_.add(1);
  }

 protected:
  // Helpers for implementations; they keep the accounting invariant above.
  void account_enqueue(const Packet& p) noexcept {
    qlen_.add(1);
    backlog_.add(p.len);
  }
  void account_dequeue(const Packet& p) noexcept {
    qlen_.sub(1);
    backlog_.sub(p.len);
    bytes_.add(p.len);
    packets_.add(1);
  }
  // A queued packet removed without being sent (head drop, reset).
  void account_remove(const Packet& p) noexcept {
    qlen_.sub(1);
    backlog_.sub(p.len);
  }
  // qdisc_drop(): the packet goes to to_free and counts as a drop.
  Verdict drop(Packet* p, PacketList& to_free) noexcept {
    to_free.push_back(p);
    drops_.add(1);
    return Verdict::drop;
  }
  void count_drop() noexcept { drops_.add(1); }
  // A classful parent folds its children's changes into its own counters, the userspace form of
  // qdisc_tree_reduce_backlog(): packets and bytes that appeared or left (dq, db; negative =
  // left) and the children's drops (every drop of a descendant is every ancestor's drop too).
  void account_adjust(int64_t dq, int64_t db) noexcept {
    qlen_.add(static_cast<uint64_t>(dq));  // two's complement: adding -n subtracts n
    backlog_.add(static_cast<uint64_t>(db));
  }
  void count_drops(uint64_t n) noexcept { drops_.add(n); }
  void count_overlimit() noexcept { overlimits_.add(1); }
  // A classful qdisc's constructor registers its class operations (usually `this`).
  void set_class_ops(ClassOps* ops) noexcept { class_ops_ = ops; }

 private:
  SingleWriterCounter qlen_, backlog_, bytes_, packets_, drops_, overlimits_;
  ClassOps* class_ops_ = nullptr;
};

// tc class add and graft on any qdisc, through its class_ops(); a classless qdisc refuses
// (ConfigRejected, tc's exit 2, the kernel's EOPNOTSUPP / EINVAL).
void add_class(Qdisc& q, uint16_t minor, uint16_t parent_minor, const QdiscOptions& options,
               const QdiscEnv& env);
void graft(Qdisc& q, uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free);

// Builds a qdisc from a tc-style spec: "KIND [OPTIONS...]", e.g. "pfifo_fast", "pfifo limit 100",
// "bfifo limit 30000", "pfifo_head_drop limit 5". Throws ConfigError (one line) on a bad spec or
// an environment check_qdisc_env() refuses.
std::unique_ptr<Qdisc> make_qdisc(std::string_view spec, const QdiscEnv& env = {});

}  // namespace txpath
