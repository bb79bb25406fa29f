// SPDX-License-Identifier: MIT
// A run's final tc -s statistics (tc_final.hpp): the counters are copied as LiveStats copies them
// (tc::snapshot_counters, inside the queue's inspect_qdisc), then shown with the configuration's
// (or, for --qdisc, an equivalent configuration's) `tc -s -j` show.
#include "bench/tc_final.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <sstream>
#include <vector>

#include "bench/bench_internal.hpp"

namespace txpath::bench_detail {

namespace {

constexpr std::chrono::milliseconds kSnapshotTimeout{1000};
constexpr uint32_t kRootHandle = 0x10000;  // 1:
constexpr const char* kDev = "bench";      // the device of the configuration made for --qdisc

std::string error_document(const std::string& why) {
  nlohmann::json doc;
  doc["error"] = why;
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> words(const std::string& spec) {
  std::istringstream in(spec);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The configuration tc would hold for the bench's --qdisc on `queues` TX queues: device "bench"
// with root `QDISC` as 1:, or on several queues an mq 1: with QDISC as Q+2: under class 1:Q+1.
tc::Config spec_config(const BenchConfig& cfg, uint32_t queues) {
  tc::Config c;
  std::ostringstream ignored;
  const auto run = [&](std::vector<std::string> args) { c.execute(args, ignored, {}); };
  std::vector<std::string> link = {"link", "add", "dev", kDev, "txqueuelen", std::to_string(cfg.txqueuelen)};
  if (queues > 1) link.insert(link.end(), {"numtxqueues", std::to_string(queues)});
  run(link);
  const std::vector<std::string> spec = words(cfg.qdisc);
  if (queues == 1) {
    std::vector<std::string> add = {"qdisc", "add", "dev", kDev, "root", "handle", tc::format_handle(kRootHandle)};
    add.insert(add.end(), spec.begin(), spec.end());
    run(add);
    return c;
  }
  run({"qdisc", "add", "dev", kDev, "root", "handle", tc::format_handle(kRootHandle), "mq"});
  for (uint32_t q = 0; q < queues; ++q) {
    std::vector<std::string> add = {"qdisc", "add", "dev", kDev, "parent", tc::format_handle(kRootHandle | (q + 1)),
                                    "handle", tc::format_handle((q + 2) << 16)};
    add.insert(add.end(), spec.begin(), spec.end());
    run(add);
  }
  return c;
}

// The configuration the run's tree is (its last live change's, else the one it was built from):
// its kinds label the counters, whatever the file says now. The file only for a tree that does
// not know it (none should).
tc::Config running_config(const BenchConfig& cfg, const std::shared_ptr<const tc::Config>& running) {
  return running ? *running : tc::Config::load(cfg.tc_config);
}

const char* kNoAnswer = "the queue did not answer for its final tc statistics";

// `doc`, unless it is over kMaxFinalTcStats: then an error document saying so (the row stands;
// `txpath tc -s` shows such a tree while the bench runs).
std::string bounded(std::string doc) {
  if (doc.size() <= kMaxFinalTcStats) return doc;
  return error_document("the final tc statistics take " + std::to_string(doc.size()) +
                        " bytes, more than the limit of " + std::to_string(kMaxFinalTcStats >> 20) +
                        " MiB for a row: left out (txpath tc -s shows them while the bench runs)");
}

}  // namespace

std::string final_tc_stats(const BenchConfig& cfg, TxQueue& txq, const tc::Tree& tree) {
  if (!txq.qdisc()) return {};
  try {
    if (!cfg.tc_config.empty()) {
      const auto counters = tc::snapshot_counters(txq, tree.nodes, kSnapshotTimeout);
      if (!counters) return error_document(kNoAnswer);
      return bounded(running_config(cfg, tree.config).show_stats_json(cfg.tc_dev, *counters));
    }
    const auto counters = tc::snapshot_counters(txq, {}, kSnapshotTimeout, kRootHandle, tc::kRoot);
    if (!counters) return error_document(kNoAnswer);
    return spec_config(cfg, 1).show_stats_json(kDev, *counters);
  } catch (const std::exception& e) {  // a configuration changed or removed since the run began
    return error_document(e.what());
  }
}

std::string final_tc_stats(const BenchConfig& cfg, MultiQueueTx& tx, const tc::QueueTrees* trees) {
  if (tx.num_queues() == 0 || !tx.queue(0).qdisc()) return {};
  if (!cfg.tc_config.empty() && !trees) return {};
  try {
    std::vector<tc::TreeCounters> queues;
    for (uint32_t q = 0; q < tx.num_queues(); ++q) {
      static const std::vector<tc::TreeNode> kNone;
      const auto& nodes = trees && q < trees->queues.size() ? trees->queues[q].nodes : kNone;
      auto counters = trees ? tc::snapshot_counters(tx.queue(q), nodes, kSnapshotTimeout)
                            : tc::snapshot_counters(tx.queue(q), {}, kSnapshotTimeout, (q + 2) << 16,
                                                    kRootHandle | (q + 1));
      if (!counters) return error_document(kNoAnswer);
      queues.push_back(std::move(*counters));
    }
    if (trees) {
      const tc::TreeCounters merged = tc::merge_queue_counters(*trees, queues);
      return bounded(running_config(cfg, trees->config).show_stats_json(cfg.tc_dev, merged));
    }
    tc::QueueTrees mq;
    mq.root_kind = "mq";
    mq.root_handle = kRootHandle;
    return spec_config(cfg, tx.num_queues()).show_stats_json(kDev, tc::merge_queue_counters(mq, queues));
  } catch (const std::exception& e) {
    return error_document(e.what());
  }
}

}  // namespace txpath::bench_detail
