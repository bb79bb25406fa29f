// SPDX-License-Identifier: MIT
// pfifo_head_drop: packet-limited FIFO that drops the oldest packet to admit a new one.
#include "qdisc/fifo.hpp"

namespace txpath {

Verdict PfifoHeadDropQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  if (q_.size() < limit_) return enqueue_tail(p);
  // limit 0: there is no head to sacrifice; the new packet itself is the victim.
  if (limit_ == 0) return drop(p, to_free);
  // Full (qlen == limit >= 1): the head leaves unsent and counts as a drop; the new packet is
  // queued, so the caller sees NET_XMIT_CN rather than a drop of its own packet.
  Packet* victim = q_.pop_front();
  account_remove(*victim);
  drop(victim, to_free);
  enqueue_tail(p);
  return Verdict::congestion;
}

}  // namespace txpath
