// SPDX-License-Identifier: MIT
// TxQueue::create(): strategy name -> factory.
#include <array>
#include <string>

#include "strategy/locked_queue.hpp"
#include "strategy/peer_queue.hpp"
#include "sync/locks.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

using Factory = std::unique_ptr<QueueBase> (*)(Device&, std::unique_ptr<Qdisc>,
                                               const TxQueueConfig&);
struct Entry {
  std::string_view name;
  Factory make;
};
constexpr std::array kStrategies{
    Entry{"busylock", &make_busylock_queue},
    Entry{"rootlock", &make_rootlock_queue},
    Entry{"llist", &make_llist_queue},
    Entry{"mutex", &make_mutex_queue},
    Entry{"nolock", &make_nolock_queue},
    Entry{"combining", &make_combining_queue},
    Entry{"drainer", &make_drainer_queue},
    Entry{"sharded", &make_sharded_queue},
};

using PeerFactory = std::unique_ptr<PeerQueue> (*)(Device&, const TxQueueConfig&);
struct PeerEntry {
  std::string_view name;
  PeerFactory make;
};
// Baselines without a qdisc (see peer_queue.hpp); they ignore `qdisc` and `lock`.
constexpr std::array kPeers{
    PeerEntry{"peer:ck_ring", &make_peer_ck_ring},
    PeerEntry{"peer:mutex_deque", &make_peer_mutex_deque},
};

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& e : kStrategies) names.emplace_back(e.name);
  for (const auto& e : kPeers) names.emplace_back(e.name);
  return names;
}

std::vector<std::string> lock_names() {
  std::vector<std::string> names;
  for (const LockKind k : kAllLockKinds) names.emplace_back(lock_kind_name(k));
  return names;
}

std::unique_ptr<TxQueue> TxQueue::create(Device& device, const TxQueueConfig& config) {
  if (!parse_lock_kind(config.lock))
    throw ConfigError("unknown lock kind \"" + config.lock + "\" (known: " + join(lock_names()) + ")");
  for (const auto& e : kStrategies) {
    if (e.name != config.strategy) continue;
    QdiscEnv env;
    env.txqueuelen = config.txqueuelen;
    env.mtu = device.mtu();
    std::unique_ptr<Qdisc> root =
        config.root_qdisc ? config.root_qdisc(env) : make_qdisc(config.qdisc, env);
    if (!root) throw ConfigError("the root qdisc factory built no qdisc");
    std::unique_ptr<QueueBase> queue = e.make(device, std::move(root), config);
    queue->start_service();
    return queue;
  }
  for (const auto& e : kPeers) {
    if (e.name != config.strategy) continue;
    std::unique_ptr<PeerQueue> queue = e.make(device, config);
    queue->start_drainer();
    return queue;
  }
  throw ConfigError("unknown strategy \"" + config.strategy + "\" (known: " +
                    join(strategy_names()) + ")");
}

}  // namespace txpath
