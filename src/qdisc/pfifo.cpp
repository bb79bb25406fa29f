// SPDX-License-Identifier: MIT
// pfifo: packet-limited FIFO with tail drop.
#include "qdisc/fifo.hpp"

namespace txpath {

Verdict PfifoQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  if (q_.size() < limit_) return enqueue_tail(p);
  return drop(p, to_free);
}

}  // namespace txpath
