// SPDX-License-Identifier: MIT
// LiveStats: the counters of a running TxQueue's qdisc tree, served to `txpath tc -s`.
//
// Each request takes one snapshot inside TxQueue::inspect_qdisc() — the driver-loop owner's
// context, as Linux dumps qdisc statistics under the root lock — so the qdiscs' xstats need no
// atomics and the numbers of one snapshot are consistent with each other.
#include <chrono>
#include <memory>
#include <string>

#include "tc/stats_socket.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::tc {

struct LiveStats::Impl {
  Impl(const std::string& config_path, const std::string& dev, TxQueue& q,
       std::shared_ptr<const Tree> t)
      : txq(q), tree(std::move(t)),
        server(stats_endpoint(config_path, dev), [this] { return snapshot(); }) {}

  std::string snapshot() {
    // The root's generic counters as the TxQueue sees them (requeue list and a nolock qdisc's
    // per-thread counts included); read from counters any thread may read, just before.
    const QdiscStats root = txq.stats().qdisc;
    std::string doc;
    const bool ok = txq.inspect_qdisc(
        [&](const Qdisc&) { doc = stats_document(tree->nodes, root); },
        std::chrono::milliseconds(1000));
    if (!ok) return "{}";  // the queue did not answer: tc shows the idle counters
    return doc;
  }

  TxQueue& txq;
  std::shared_ptr<const Tree> tree;
  StatsServer server;  // last: stops serving before the rest goes
};

LiveStats::LiveStats(const std::string& config_path, const std::string& dev, TxQueue& txq,
                     std::shared_ptr<const Tree> tree)
    : impl_(std::make_unique<Impl>(config_path, dev, txq, std::move(tree))) {}

LiveStats::~LiveStats() = default;

}  // namespace txpath::tc
