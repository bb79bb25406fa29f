// SPDX-License-Identifier: MIT
// htb: the hierarchical token bucket (Linux sch_htb semantics), written from
// Linux sch_htb's semantics and tc-htb(8); no kernel or iproute2 code copied.
//
//   qdisc: htb [default MINOR] [r2q N] [direct_qlen P] [offload]
//          MINOR is hexadecimal (tc reads it base 16: "default 10" is minor 0x10); defaults:
//          default 0 (none), r2q 10, direct_qlen = txqueuelen (as it is). "offload" parses
//          but is refused (no device here offers hardware htb).
//   class: htb rate R [ceil R2] [burst B] [cburst B] [prio P] [quantum Q] [mtu M] [mpu B]
//              [overhead O] [linklayer ethernet|atm|adsl]
//          ceil defaults to rate; burst/cburst default to rate/1e9 + mtu bytes (tc with 1 ns
//          ticks: effectively mtu, default 1600); prio 0..7; quantum explicit, else rate / r2q
//          clamped to [1000, 200000] bytes.
//
// Classes form a tree under the qdisc (parent_minor 0 = top level). Leaves have level 0 and a
// child qdisc (default pfifo, limit txqueuelen; graft() replaces it); an inner class has level
// (its parent's level, or 8 at the top) - 1, so the tree is at most 8 levels deep. Adding a
// child to a leaf makes it inner: its queue is purged and its child qdisc destroyed.
//
// Classification of a packet with priority P (skb->priority), H = the handle major:
//   P == H:0                         -> the direct queue;
//   P >> 16 == H and P names a leaf  -> that leaf;
//   else the leaf H:default if it exists (an inner default class does not count);
//   else the direct queue: FIFO, unshaped, limit direct_qlen (tail drop), every packet it takes
//   counted in direct_packets_stat. With H = 0 (no handle) classids 0:m still work, and P == 0
//   goes direct.
//
// Token buckets, per class, hold TIME in ns (tbf's convention, tbf.hpp): l2t(len) is RateCfg's
// (rate.hpp: ceil(wire(len) * 1e9 / rate) with wire = max(len + overhead, mpu), ATM cells for
// linklayer atm/adsl), one RateCfg for rate and one for ceil; buffer and cbuffer are the times
// the configuration gives (HtbClassConfig::buffer_ns: `txpath tc` sets tc's whole psched ticks,
// as the kernel holds them, src/tc/psched.hpp), else burst * 1e9 / rate and cburst * 1e9 / ceil
// (raw bytes). tokens <= buffer, ctokens <= cbuffer; both may go negative,
// down to 1 - mbuffer (60 s), which also caps the elapsed time credited at once.
// Mode: ctokens + elapsed < 0 -> CANT_SEND; else tokens + elapsed >= 0 -> CAN_SEND; else
// MAY_BORROW. A class that is not CAN_SEND is on its level's wait list, keyed by the time its
// mode can change; every entry to CANT_SEND counts an overlimit (class and qdisc).
//
// Scheduling. An active leaf (its child holds packets) has activity bit 1 << prio. A CAN_SEND
// class with activity bit p sits in row (level, p); a MAY_BORROW one sits instead in its
// parent's feed p, and the parent inherits bit p (and is placed by its own mode, recursively);
// a CANT_SEND class is in neither. Dequeue: the direct queue first; then for level 0..7
// (processing due wait-list events of the level first), for prio 0..7 with a non-empty row:
// from the row's DRR pointer descend through the feeds' pointers to a leaf (a pointer past the
// end of its list rewinds and advances the pointer above it), dequeue from the leaf's child,
// deficit[level] -= len and, when negative, += quantum and advance the pointer that chose the
// leaf (the row's at level 0, the parent's feed's above). Charging walks leaf -> root: classes
// at levels >= the serving level pay rate tokens (the one at the serving level counts "lended"),
// those below borrow ("borrowed": their tokens are only credited the elapsed time); all pay
// ceil tokens. Packets longer than the class's mtu count as giants.
// When packets are held but none is eligible, dequeue returns nullptr and watchdog_ns() is the
// earliest wait-list event or child watchdog, at most 5 s ahead.
//
// Data structures: rows, feeds and wait lists are vectors (sorted by minor for the DRR lists,
// unsorted for the wait lists, with a cached earliest key per level) reserved whenever a class
// is added, so the packet path never allocates; the scans are linear in the active classes.
//
// Accounting invariant (on top of Qdisc's): qlen() == sum over leaves of their child's qlen()
// + the direct queue + the packet held by peek(), and the same for backlog(); kept like prio's,
// by folding each child's qlen/backlog change into htb's counters after every call into it
// (this also covers children that drop inside dequeue, e.g. fq_codel). Every drop of a leaf's
// child — on enqueue, the extra victims of a batch drop, and inside dequeue (CoDel) — is also
// counted by the class and by htb, folded in the same way (Linux: qdisc_tree_reduce_backlog()
// adds the drops to every ancestor), so htb's drops cover every packet its subtree dropped. Packets purged by add_class() (a leaf becoming inner)
// and delete_class() are counted as htb and class drops (the kernel counts none; here they
// would otherwise be missing from "sent + dropped") and are handed out by take_dequeue_drops()
// and reset() (and moved onto the next enqueue's to_free).
// stats().packets/bytes count what htb's dequeue handed out (a peeked packet when peeked).
//
// Threading: as every Qdisc, one caller at a time; no atomics, no locks. Statistics are plain
// integers read in the qdisc's serialised context (qdisc.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qdisc/rate.hpp"
#include "txpath/qdisc.hpp"

namespace txpath {

struct HtbClassConfig {
  uint64_t rate = 0;      // bytes per second, > 0
  uint64_t ceil = 0;      // bytes per second, > 0
  uint64_t burst = 0;     // bytes
  uint64_t cburst = 0;    // bytes
  // The bucket depths as the kernel holds them, in ns (none: burst at rate, cburst at ceil). tc
  // sends them as psched ticks (src/tc/psched.hpp), so the tc layer sets them to whole ticks.
  std::optional<uint64_t> buffer_ns;
  std::optional<uint64_t> cbuffer_ns;
  uint32_t prio = 0;      // 0..7
  uint32_t quantum = 0;   // effective DRR quantum in bytes
  uint32_t mtu = 1600;    // tc's mtu: default bursts, giants
  uint32_t mpu = 0;
  uint32_t overhead = 0;
  bool atm = false;
};

// Classes by minor id. Two levels of 256 slots, the second allocated when the first class of its
// range is added (control path): an htb qdisc costs 2 KiB of table until it has classes, not the
// 512 KiB of a flat 65536-slot table — which a tc file of many small htb qdiscs would multiply
// into gigabytes. A lookup (classify, on every enqueue) is two dependent loads.
template <class T>
class MinorTable {
 public:
  T* get(uint16_t minor) const noexcept {
    const auto& page = pages_[minor >> 8];
    return page ? (*page)[minor & 0xffu] : nullptr;
  }
  // Allocates the slot's page if needed (may throw); call before anything else changes.
  void reserve(uint16_t minor) {
    auto& page = pages_[minor >> 8];
    if (!page) page = std::make_unique<std::array<T*, 256>>();  // value-initialised: all null
  }
  void set(uint16_t minor, T* value) noexcept { (*pages_[minor >> 8])[minor & 0xffu] = value; }
  void clear(uint16_t minor) noexcept {
    if (auto& page = pages_[minor >> 8]) (*page)[minor & 0xffu] = nullptr;
  }
  // Bytes allocated for pages so far.
  std::size_t page_bytes() const noexcept {
    std::size_t n = 0;
    for (const auto& page : pages_) n += page ? sizeof(*page) : 0;
    return n;
  }

 private:
  std::array<std::unique_ptr<std::array<T*, 256>>, 256> pages_;
};

class HtbQdisc final : public Qdisc, public ClassOps {
 public:
  static constexpr int kLevels = 8;   // TC_HTB_MAXDEPTH
  static constexpr int kPrios = 8;    // TC_HTB_NUMPRIO
  static constexpr uint64_t kMbufferNs = 60'000'000'000ull;  // cap on credited elapsed time
  static constexpr uint64_t kMaxWatchdogAheadNs = 5'000'000'000ull;

  // defcls: the default class minor as given (u32; its low 16 bits name the class).
  HtbQdisc(uint32_t defcls, uint32_t r2q, uint32_t direct_qlen, const QdiscEnv& env);
  ~HtbQdisc() override;

  // ---- data path (can_bypass(): false, the default) ----
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  Verdict adopt(Packet* p, PacketList& to_free) noexcept override;  // into the leaf's adopt()
  void settle(PacketList& to_free) noexcept override;               // every leaf's settle()
  Packet* dequeue() noexcept override;
  Packet* peek() noexcept override;
  void reset(PacketList& to_free) noexcept override;
  void take_dequeue_drops(PacketList& out) noexcept override;
  uint64_t watchdog_ns() const noexcept override { return watchdog_; }

  // ---- dumps (printed by src/tc/qdisc_htb.cpp) ----
  std::string_view kind() const noexcept override { return "htb"; }
  // The kernel's htb_dump (TCA_HTB_INIT): r2q, default (the default class's minor),
  // direct_packets_stat, ver ("3.17", sch_htb.c's HTB_VER), direct_qlen.
  DumpAttrs dump_options() const override;
  // htb_dump_class (TCA_HTB_PARMS): level, prio and quantum (leaves), rate and ceil in bytes/s,
  // overhead, linklayer "ethernet"/"atm", buffer and cbuffer as psched ticks, mpu. None for a
  // minor that is not a class.
  DumpAttrs class_dump(uint16_t minor) const override;
  // The kernel's order: its class hash (net/sched/sch_api.c qdisc_class_hash_*), see htb.cpp.
  std::vector<QdiscClassInfo> listed_classes() const override;
  // "Warning: sch_htb: quantum of class CLASSID is small|big. Consider r2q change." for a leaf
  // whose quantum rate / r2q was clamped to [1000, 200000] (no explicit quantum).
  std::string class_warning(uint16_t minor) const override;

  // ---- class operations (ClassOps) ----
  std::vector<QdiscClassInfo> classes() const override;
  QdiscStats class_stats(uint16_t minor) const override;
  Xstats class_xstats(uint16_t minor) const override;
  // tc class add / change: parse `options` (src/tc/qdisc_htb.cpp), then the two below.
  void add_class(uint16_t minor, uint16_t parent_minor, const QdiscOptions& options,
                 const QdiscEnv& env) override;
  void change_class(uint16_t minor, const QdiscOptions& options, const QdiscEnv& env) override;
  // A class of a parsed configuration (quantum 0: rate / r2q) under parent_minor (0: the top),
  // its default child a pfifo of child_limit packets. Throws ConfigRejected (minor 0, the class
  // exists, no such parent, tree too deep) before changing anything.
  void add_configured_class(uint16_t minor, uint16_t parent_minor, const HtbClassConfig& cfg,
                            uint32_t child_limit);
  // Throws ConfigRejected if there is no class `minor`.
  void change_configured_class(uint16_t minor, const HtbClassConfig& cfg);
  void delete_class(uint16_t minor) override;
  // Counters, xstats, tokens, ctokens, t_c, deficits and mode of every class `old` (an htb) has
  // too; direct_packets_stat. A class not in `old` starts as a new class does (full buckets).
  void continue_classes(const ClassOps& old) noexcept override;
  Qdisc* child(uint16_t minor) noexcept override;
  void graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) override;

  // For tests and tools.
  uint64_t direct_packets() const noexcept { return direct_pkts_; }
  uint64_t direct_qlen() const noexcept { return direct_.size(); }
  uint32_t r2q() const noexcept { return r2q_; }
  uint32_t default_minor() const noexcept { return defcls_; }
  // The class's level (0 = leaf), or -1 if there is no such class.
  int class_level(uint16_t minor) const noexcept;
  // The class's configuration (quantum included), or nullptr.
  const HtbClassConfig* class_config(uint16_t minor) const noexcept;
  // The class table's pages and the classes (their default pfifo children not included).
  std::size_t preallocated_bytes() const noexcept override;

 private:
  struct Class;
  enum class Mode : uint8_t { cant_send, may_borrow, can_send };

  // A DRR list: classes sorted by minor and a round-robin pointer (index; == size: past the
  // end, rewound by the next lookup). A feed (an inner class's list of borrowing children) also
  // remembers which class its pointer named when that class left the feed (the kernel's
  // last_ptr_id, htb_deactivate_prios): the next lookup points at that class again if it is back
  // by then (a class that turned green and yellow again keeps its DRR turn), else at the next
  // one above it (htb_id_find_next_upper). A row moves its pointer on at once instead
  // (htb_remove_class_from_row).
  struct DrrList {
    std::vector<Class*> v;
    std::size_t ptr = 0;
    bool lost = false;        // ptr is not valid: recover() it from lost_minor
    uint16_t lost_minor = 0;
    void insert(Class* c);
    // `remember`: a feed's removal (above); otherwise a row's.
    void remove(Class* c, bool remember = false) noexcept;
    void recover() noexcept;
    void advance() noexcept {
      recover();
      if (ptr < v.size()) ++ptr;
    }
    void clear() noexcept {
      v.clear();
      ptr = 0;
      lost = false;
    }
  };

  struct Class {
    uint16_t minor = 0;
    Class* parent = nullptr;
    std::vector<Class*> children;
    int level = 0;
    HtbClassConfig cfg;
    bool quantum_given = false;       // cfg.quantum was given, not rate / r2q
    RateCfg rate, ceil;               // cfg's rate and ceil with cfg's framing
    int64_t buffer = 0, cbuffer = 0;  // ns
    int64_t tokens = 0, ctokens = 0;  // ns
    uint64_t t_c = 0;
    Mode mode = Mode::can_send;
    uint8_t activity = 0;  // prio_activity bit mask
    // Leaf.
    std::unique_ptr<Qdisc> q;
    bool default_child = true;
    uint64_t seen_qlen = 0, seen_backlog = 0;
    uint64_t seen_drops = 0;  // the child's drops already counted by the class and htb
    std::array<int64_t, kLevels> deficit{};
    // Inner.
    std::array<DrrList, kPrios> feed;
    // Wait list position (-1: not waiting) and event time.
    std::ptrdiff_t wait_pos = -1;
    uint64_t pq_key = 0;
    // Statistics.
    uint64_t bytes = 0, packets = 0, drops = 0, overlimits = 0;
    uint64_t lends = 0, borrows = 0, giants = 0;
  };

  // enqueue() and adopt(): classify, then the leaf's enqueue() or (Adopt) adopt().
  template <bool Adopt>
  Verdict enqueue_as(Packet* p, PacketList& to_free) noexcept;
  uint64_t now() const noexcept;
  Class* find(uint16_t minor) const noexcept { return by_minor_.get(minor); }
  Class* classify(uint32_t priority) const noexcept;
  void apply_config(Class& c, const HtbClassConfig& cfg);
  std::unique_ptr<Qdisc> default_child() const;

  // Counters.
  void sync_leaf(Class& c) noexcept;          // fold the child's qlen/backlog change
  void update_activity(Class& c) noexcept;    // activate / deactivate by the child's qlen
  void purge_leaf(Class& c) noexcept;         // child's packets -> parked_, counted as drops

  // Activation (rows and feeds).
  void activate(Class& c) noexcept;
  void deactivate(Class& c) noexcept;
  void activate_prios(Class& c) noexcept;
  void deactivate_prios(Class& c) noexcept;
  void add_to_row(Class& c, unsigned mask) noexcept;
  void remove_from_row(Class& c, unsigned mask) noexcept;
  Mode class_mode(const Class& c, int64_t& diff) const noexcept;
  void change_mode(Class& c, int64_t& diff) noexcept;
  void wait_add(Class& c, uint64_t key) noexcept;
  void wait_remove(Class& c) noexcept;
  void do_events(int level, uint64_t t) noexcept;
  void charge(Class& leaf, int level, uint32_t len, uint64_t t) noexcept;

  // Dequeue.
  Class* lookup_leaf(int level, int prio) noexcept;
  Packet* dequeue_tree(int level, int prio, uint64_t t) noexcept;
  Packet* dequeue_internal() noexcept;

  void reserve_all(Class* parent);  // after add_class(): capacity for every list a class enters
  void detach_wait_and_rows(Class& c) noexcept;

  uint64_t (*const clock_)();
  uint32_t defcls_;
  uint32_t r2q_;
  uint32_t direct_qlen_;
  uint32_t child_limit_;
  uint16_t handle_major_;

  std::vector<std::unique_ptr<Class>> classes_;
  MinorTable<Class> by_minor_;
  std::vector<Class*> custom_children_;  // leaves whose child is not the default pfifo
  std::array<std::array<DrrList, kPrios>, kLevels> row_;
  std::array<uint8_t, kLevels> row_mask_{};
  std::array<std::vector<Class*>, kLevels> wait_;
  std::array<uint64_t, kLevels> next_event_{};  // earliest wait key per level (UINT64_MAX: none)

  PacketList direct_;
  uint64_t direct_pkts_ = 0;
  PacketList parked_;        // purged by class changes, counted as drops, not yet handed out
  Packet* peeked_ = nullptr;
  uint64_t watchdog_ = 0;
  uint64_t child_watchdog_ = 0;  // earliest watchdog of a child that returned nothing
};

}  // namespace txpath
