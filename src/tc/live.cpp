// SPDX-License-Identifier: MIT
// LiveStats: the counters of a running TxQueue's qdisc tree (or of every TX queue of a
// MultiQueueTx, merged into the device's tree), served to `txpath tc -s`.
//
// Each request takes one snapshot inside TxQueue::inspect_qdisc() — the driver-loop owner's
// context, as Linux dumps qdisc statistics under the root lock — so the qdiscs' xstats need no
// atomics and the numbers of one snapshot are consistent with each other; only a copy of the
// counters is made there (the senders wait for no JSON), the document is built after. A snapshot
// that cannot be taken (the queue does not answer in time, the document would be too large) is
// served as {"error": "..."}, never as an empty document a client would show as zero counters.
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "tc/apply.hpp"
#include "tc/control_socket.hpp"
#include "tc/internal.hpp"
#include "tc/stats_socket.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::tc {

namespace {

constexpr std::chrono::milliseconds kSnapshotTimeout{1000};

std::string error_document(const std::string& why) {
  nlohmann::json doc;
  doc["error"] = why;
  return doc.dump();
}

// The document of `counters` on device `dev` of configuration `config`, or an error document past
// the size limit.
std::string finished_document(const TreeCounters& counters, const std::string& dev, const std::string& config) {
  const std::string doc = stats_document(counters, dev, config);
  if (doc.size() > kMaxDocument)
    return error_document("the counters take " + std::to_string(doc.size()) +
                          " bytes, more than the limit of " + std::to_string(kMaxDocument));
  return doc;
}

std::string timed_out(const std::string& what) {
  return error_document(what + " did not answer within " + std::to_string(kSnapshotTimeout.count()) +
                        " ms");
}

// One queue's counters, copied inside its qdisc's serialised context; false if it did not answer.
bool queue_counters(TxQueue& txq, const std::vector<TreeNode>& nodes, TreeCounters& out) {
  std::optional<TreeCounters> got = snapshot_counters(txq, nodes, kSnapshotTimeout);
  if (got) out = std::move(*got);
  return got.has_value();
}

}  // namespace

std::optional<TreeCounters> snapshot_counters(TxQueue& txq, const std::vector<TreeNode>& nodes,
                                              std::chrono::milliseconds timeout,
                                              uint32_t root_handle, uint32_t root_parent) {
  // The root's generic counters as the TxQueue sees them (requeue list and a nolock qdisc's
  // per-thread counts included); read from counters any thread may read, just before.
  const QdiscStats root = txq.stats().qdisc;
  TreeCounters out;
  // Inside: a copy of the counters only; the JSON is built after the qdisc runs again.
  const bool answered = txq.inspect_qdisc(
      [&](const Qdisc& q) {
        if (!nodes.empty()) {
          out = collect_counters(nodes, root, &q);  // q: the root the queue runs (nolock: a twin)
          return;
        }
        append_counters(q, root_handle, root_parent, root, out);
      },
      timeout);
  if (!answered) return std::nullopt;
  return out;
}

struct LiveStats::Impl {
  using Prepare = std::function<PreparedChange(const Config&)>;
  Impl(const std::string& config_path, const std::string& dev, std::function<std::string()> take,
       Prepare prepare_change)
      : snapshot(std::move(take)),
        prepare(std::move(prepare_change)),
        server(stats_endpoint(config_path, dev, /*create=*/true), [this] { return snapshot(); }),
        control(control_endpoint(config_path, dev, /*create=*/true),
                ControlServer::Prepare([this, dev](const std::string& req) {
                  ControlPlan plan = control_plan(req, dev, prepare);
                  if (plan.commit)
                    plan.commit = [this, commit = std::move(plan.commit)] {
                      const std::lock_guard one_at_a_time(apply_mutex);
                      return commit();
                    };
                  return plan;
                })) {}

  void apply_locked(const Config& after) {
    PreparedChange change = prepare(after);
    const std::lock_guard one_at_a_time(apply_mutex);
    change.commit();
  }

  std::function<std::string()> snapshot;  // answers one request
  Prepare prepare;                        // a live change, built (apply.cpp)
  std::mutex apply_mutex;                 // one commit at a time
  StatsServer server;  // holds the endpoint's lock: before the control endpoint
  ControlServer control;  // last: stops serving before the rest goes
};

LiveStats::LiveStats(const std::string& config_path, const std::string& dev, TxQueue& txq,
                     std::shared_ptr<Tree> tree)
    : impl_(std::make_unique<Impl>(
          config_path, dev,
          [&txq, tree, dev, config = endpoint_config_path(config_path)] {
            TreeCounters counters;
            if (!queue_counters(txq, tree->nodes, counters)) return timed_out("the queue");
            return finished_document(counters, dev, config);
          },
          [&txq, tree, dev](const Config& after) { return prepare_queue_change(txq, *tree, after, dev); })) {}

// Each TX queue's snapshot in its own serialised context, one after the other: the sum is not one
// instant's (Linux's mq_dump takes the children's locks one by one as well).
LiveStats::LiveStats(const std::string& config_path, const std::string& dev, MultiQueueTx& tx,
                     std::shared_ptr<QueueTrees> trees)
    : impl_(std::make_unique<Impl>(config_path, dev, [&tx, trees, dev, config = endpoint_config_path(config_path)] {
        std::vector<TreeCounters> queues(tx.num_queues());
        for (uint32_t i = 0; i < tx.num_queues(); ++i) {
          static const std::vector<TreeNode> kNone;
          const auto& nodes = i < trees->queues.size() ? trees->queues[i].nodes : kNone;
          if (!queue_counters(tx.queue(i), nodes, queues[i]))
            return timed_out("TX queue " + std::to_string(i));
        }
        return finished_document(merge_queue_counters(*trees, queues), dev, config);
      }, [&tx, trees, dev](const Config& after) { return prepare_queues_change(tx, *trees, after, dev); })) {}

LiveStats::~LiveStats() = default;

void LiveStats::apply(const Config& after) { impl_->apply_locked(after); }

Config::ShowOptions::LiveDocument fetch_live(const std::string& config_path,
                                             const std::string& dev,
                                             std::chrono::milliseconds timeout) {
  Config::ShowOptions::LiveDocument live;
  try {
    Fetched got = fetch_stats(stats_endpoint(config_path, dev), timeout);
    live.text = std::move(got.document);
    // Endpoints are per effective uid: say whose were looked at (root does not see a user's).
    live.why_not = got.no_server ? "no running txpath bench of uid " + std::to_string(::geteuid()) +
                                       " serves " + txpath::quoted(config_path)
                                 : std::move(got.why_not);
  } catch (const std::exception& e) {  // the endpoint directory is not private (ConfigError), ...
    live.text.reset();
    live.why_not = e.what();
  }
  return live;
}

}  // namespace txpath::tc
