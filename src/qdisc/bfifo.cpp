// SPDX-License-Identifier: MIT
// bfifo: byte-limited FIFO with tail drop.
#include "qdisc/fifo.hpp"

namespace txpath {

Verdict BfifoQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  // 64-bit sum: backlog <= limit < 2^32 and len < 2^32, so it cannot wrap.
  if (q_.bytes() + p->len <= limit_) return enqueue_tail(p);
  return drop(p, to_free);
}

}  // namespace txpath
