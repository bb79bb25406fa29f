// SPDX-License-Identifier: MIT
// Generic qdisc statistics (gnet_stats_basic + gnet_stats_queue).
#include "txpath/qdisc.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "txpath/error.hpp"

namespace txpath {

// requeues stays 0: a qdisc never sees a requeue; the driver loop keeps that count and adds it.
QdiscStats Qdisc::stats() const noexcept {
  return {.bytes = bytes_.get(),
          .packets = packets_.get(),
          .drops = drops_.get(),
          .overlimits = overlimits_.get(),
          .requeues = 0,
          .backlog = backlog_.get(),
          .qlen = qlen_.get()};
}

namespace {

[[noreturn]] void refuse_add(const std::string& kind) {
  throw ConfigRejected("qdisc " + kind + " does not support adding classes");
}

[[noreturn]] void refuse_graft(const std::string& kind, uint16_t minor) {
  throw ConfigRejected("qdisc " + kind + " has no class " + std::to_string(minor) +
                       " to attach a qdisc to");
}

}  // namespace

// Fixed classes (prio, tbf): the kernel answers EOPNOTSUPP / EINVAL (tc exits 2).
void ClassOps::add_class(uint16_t minor, uint16_t parent_minor, const QdiscOptions& options,
                         const QdiscEnv& env) {
  (void)minor, (void)parent_minor, (void)options, (void)env;
  refuse_add(std::string(kind()));
}

void ClassOps::change_class(uint16_t minor, const QdiscOptions& options, const QdiscEnv& env) {
  (void)options, (void)env;
  throw ConfigRejected("qdisc " + std::string(kind()) + " has no changeable class " +
                       std::to_string(minor));
}

void ClassOps::delete_class(uint16_t minor) {
  (void)minor;
  throw ConfigRejected("qdisc " + std::string(kind()) + " does not support deleting classes");
}

namespace {

void check_env_range(std::string_view what, uint32_t value, uint32_t low, uint32_t high) {
  if (value >= low && value <= high) [[likely]] return;
  throw ConfigError("qdisc environment: " + std::string(what) + " " + std::to_string(value) +
                    " is out of range (" + std::to_string(low) + ".." + std::to_string(high) + ")");
}

}  // namespace

void check_qdisc_env(const QdiscEnv& env) {
  check_env_range("mtu", env.mtu, kMinQdiscMtu, kMaxQdiscMtu);
  check_env_range("tx_queues", env.tx_queues, 1, kMaxTxQueues);
}

void add_class(Qdisc& q, uint16_t minor, uint16_t parent_minor, const QdiscOptions& options,
               const QdiscEnv& env) {
  check_qdisc_env(env);  // a class's leaf qdisc and quantum are sized from it
  ClassOps* ops = q.class_ops();
  if (!ops) refuse_add(std::string(q.kind()));
  ops->add_class(minor, parent_minor, options, env);
}

void graft(Qdisc& q, uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) {
  ClassOps* ops = q.class_ops();
  if (!ops) refuse_graft(std::string(q.kind()), minor);
  ops->graft(minor, std::move(child), to_free);
}

}  // namespace txpath
