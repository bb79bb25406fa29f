// SPDX-License-Identifier: MIT
// mq and mqprio: the root of a multi-queue device, one class and one child qdisc per TX queue
// (Linux sch_mq.c and sch_mqprio.c semantics, written from their behaviour; tc text from
// iproute2's behaviour, in src/tc/qdisc_mq.cpp).
//
//   mq                                        no options; class MAJ:N is TX queue N-1
//   mqprio num_tc T map P0..P15 queues C@O ... hw 0
//                                             the same per-queue classes, plus one class per
//                                             traffic class t, MAJ:ffe0+t, the parent of its
//                                             queues' classes
//
// In Linux neither qdisc queues a packet: the device's TX queue i runs child i as its own root
// (dev_queue->qdisc), and mq's statistics are the sum of its children's, read when dumped. In
// txpath, MultiQueueTx does the same: each TxQueue gets its child through a tc::Config factory
// (tc.hpp, Config::multiqueue), and this object only describes the tree (tc show, class show)
// and sums the children's counters (children_stats). Used as the root of ONE TxQueue (a program
// that asks for a single queue of an mq configuration) it still works: a packet goes to child
// Packet::tx_queue when that names a queue, else (mqprio) to the first queue of its priority's
// traffic class, else to child 0; dequeue serves the children round robin.
//
// Invariants (on top of Qdisc's): qlen() and backlog() are the sums of the children's, and drops
// include every child's drop, after every call (the seen_ pattern of prio.hpp).
// Threading: as every Qdisc; no allocation on the packet path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/qdisc.hpp"
#include "txpath/traffic_classes.hpp"

namespace txpath {

class MqQdisc final : public Qdisc, public ClassOps {
 public:
  // The first class id minor of mqprio's traffic classes (Linux TC_H_MIN_PRIORITY).
  static constexpr uint16_t kTcClassBase = 0xFFE0;
  static constexpr std::size_t kMaxTrafficClasses = 16;  // TC_QOPT_MAX_QUEUE
  // mqprio's mapping (validated by make_mqprio); num_tc == 0 means plain mq.
  using Mapping = TrafficClasses;

  // One default child per TX queue (pfifo_fast of env.txqueuelen), `queues` >= 1.
  MqQdisc(uint32_t queues, const Mapping& mapping, const QdiscEnv& env);
  ~MqQdisc() override;

  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  Packet* dequeue() noexcept override;
  Packet* peek() noexcept override;
  void reset(PacketList& to_free) noexcept override;
  void take_dequeue_drops(PacketList& out) noexcept override;
  uint64_t watchdog_ns() const noexcept override;

  std::string_view kind() const noexcept override { return mapping_.num_tc ? "mqprio" : "mq"; }
  // mq: none. mqprio (its dump with per-class entries): num_tc, map (priority -> traffic
  // class), queue_first and queue_last (each class's TX queue range). Printed by
  // src/tc/qdisc_mq.cpp.
  DumpAttrs dump_options() const override;

  uint32_t queues() const noexcept { return static_cast<uint32_t>(children_.size()); }
  const Mapping& mapping() const noexcept { return mapping_; }
  // The traffic class of TX queue q, or -1 when no class's range holds it (mqprio; mq: 0).
  int queue_class(uint32_t q) const noexcept;
  // What Linux's dump reports as the root's counters: the sum of every child's.
  QdiscStats children_stats() const noexcept;
  // Whether class `minor` is one of mqprio's traffic classes.
  bool is_tc_class(uint16_t minor) const noexcept {
    return minor >= kTcClassBase && static_cast<uint32_t>(minor - kTcClassBase) < mapping_.num_tc;
  }

  // ---- ClassOps: per-queue classes 1..queues (leaf), mqprio's traffic classes (no leaf) ----
  std::vector<QdiscClassInfo> classes() const override;
  Qdisc* child(uint16_t minor) noexcept override;
  // A null child installs a fresh default (pfifo_fast).
  void graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) override;
  // Hands out TX queue minor-1's child (a fresh default takes its place): MultiQueueTx runs it as
  // that queue's root. Control path; nullptr for no such class.
  std::unique_ptr<Qdisc> take_child(uint16_t minor);
  // A queue's class: its child's; a traffic class: the sum of its queues' children.
  QdiscStats class_stats(uint16_t minor) const override;

 private:
  struct Seen {
    uint64_t qlen = 0;
    uint64_t backlog = 0;
    uint64_t drops = 0;
  };
  void sync_child(std::size_t i) noexcept;
  std::size_t pick(const Packet& p) const noexcept;

  Mapping mapping_;
  QdiscEnv env_;
  std::vector<std::unique_ptr<Qdisc>> children_;
  std::vector<Seen> seen_;
  std::size_t next_ = 0;  // round-robin position of dequeue
};

}  // namespace txpath
