// SPDX-License-Identifier: MIT
// TxQueue::create(): strategy name -> factory.
#include <array>
#include <string>

#include "strategy/factories.hpp"
#include "strategy/peer_queue.hpp"
#include "sync/locks.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

template <class Factory>
struct Entry {
  std::string_view name;
  Factory* make;
};

constexpr auto kStrategies = std::to_array<Entry<QueueFactory>>({
    {"busylock", &make_busylock_queue},
    {"rootlock", &make_rootlock_queue},
    {"llist", &make_llist_queue},
    {"mutex", &make_mutex_queue},
    {"nolock", &make_nolock_queue},
    {"combining", &make_combining_queue},
    {"drainer", &make_drainer_queue},
    {"sharded", &make_sharded_queue},
});

// Baselines without a qdisc (see peer_queue.hpp); they ignore `qdisc` and `lock`.
using PeerFactory = std::unique_ptr<PeerQueue>(Device&, const TxQueueConfig&);
constexpr auto kPeers = std::to_array<Entry<PeerFactory>>({
    {"peer:ck_ring", &make_peer_ck_ring},
    {"peer:mutex_deque", &make_peer_mutex_deque},
});

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
    check_qdisc_env(env);  // a custom device's MTU; also before a root_qdisc factory sees it
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
