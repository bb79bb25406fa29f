// SPDX-License-Identifier: MIT
// Generic qdisc statistics (gnet_stats_basic + gnet_stats_queue).
#include "txpath/qdisc.hpp"

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

}  // namespace txpath
