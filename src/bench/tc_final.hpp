// SPDX-License-Identifier: MIT
// A run's final `tc -s` statistics (BenchPoint::tc_stats): its qdisc tree's counters when it
// ended, in the form `txpath tc -s -j qdisc show` / `class show` prints, kept after the tree is
// gone. Private to src/bench.
#pragma once

#include <string>

#include "bench/bench.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::bench_detail {

// {"qdiscs": [...], "classes": [...]} of a one-queue run's tree, taken after its drain (call it
// before the queue goes): with --tc-config the configuration's device `cfg.tc_dev`, its tree
// `tree`; else the root qdisc of `cfg.qdisc`, shown as tc would show it added as
// `qdisc add dev bench root handle 1: QDISC`. Empty when the queue has no qdisc (peer:*). A
// failure is the document {"error": "..."}: the run's measurement stands.
std::string final_tc_stats(const BenchConfig& cfg, TxQueue& txq, const tc::Tree& tree);

// The same for a multi-queue run: mq's root (the sum of its queues) and each TX queue's tree.
// With --tc-config, `trees` are the device's per-queue trees (nullptr when the tc device has
// another TX queue count than the run: each queue then ran a copy of the root tree, and nothing
// is recorded); without, each queue's root qdisc of `cfg.qdisc` is shown as tc shows
// `qdisc add dev bench root handle 1: mq` with QDISC grafted as handle Q+2: under mq's class 1:Q+1.
std::string final_tc_stats(const BenchConfig& cfg, MultiQueueTx& tx, const tc::QueueTrees* trees);

}  // namespace txpath::bench_detail
