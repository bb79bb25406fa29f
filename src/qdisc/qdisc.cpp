// SPDX-License-Identifier: MIT
// Generic qdisc statistics (gnet_stats_basic + gnet_stats_queue).
#include "txpath/qdisc.hpp"

#include <string>

#include "txpath/error.hpp"

namespace txpath {

// requeues stays 0: a qdisc never sees a requeue; the driver loop keeps that count and adds it.
QdiscStats Qdisc::stats() const noexcept {
  QdiscStats s;
  s.bytes = bytes_.get();
  s.packets = packets_.get();
  s.drops = drops_.get();
  s.overlimits = overlimits_.get();
  s.requeues = 0;
  s.backlog = backlog_.get();
  s.qlen = qlen_.get();
  return s;
}

// The class operations of a classless qdisc: the kernel answers EOPNOTSUPP / EINVAL (tc exits 2).
void Qdisc::add_class(uint16_t minor, uint16_t parent_minor, const QdiscOptions& options,
                      const QdiscEnv& env) {
  (void)minor, (void)parent_minor, (void)options, (void)env;
  throw ConfigRejected("qdisc " + std::string(kind()) + " does not support adding classes");
}

void Qdisc::change_class(uint16_t minor, const QdiscOptions& options, const QdiscEnv& env) {
  (void)options, (void)env;
  throw ConfigRejected("qdisc " + std::string(kind()) + " has no changeable class " +
                       std::to_string(minor));
}

void Qdisc::delete_class(uint16_t minor) {
  (void)minor;
  throw ConfigRejected("qdisc " + std::string(kind()) + " does not support deleting classes");
}

void Qdisc::graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) {
  (void)child, (void)to_free;
  throw ConfigRejected("qdisc " + std::string(kind()) + " has no class " + std::to_string(minor) +
                       " to attach a qdisc to");
}

}  // namespace txpath
