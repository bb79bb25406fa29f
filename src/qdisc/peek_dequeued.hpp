// SPDX-License-Identifier: MIT
// PeekDequeued: dequeue() and peek() of a qdisc that picks its next packet only while dequeuing
// (fq, fq_codel, codel), the kernel's qdisc_peek_dequeued(): peek() dequeues the head and holds
// it, and the next dequeue() hands out the held packet. The held packet stays in qlen()/backlog()
// (it is still queued as far as Qdisc's accounting goes) until dequeue() counts it as sent.
//
// The qdisc derives from PeekDequeued<Itself> and implements `Packet* do_dequeue() noexcept`
// (its scheduler; no accounting), reachable from this base (public or a friend). Statically
// bound: no virtual call beyond Qdisc::dequeue()'s own. Threading: as every Qdisc.
#pragma once

#include <utility>

#include "txpath/qdisc.hpp"

namespace txpath {

template <class Derived>
class PeekDequeued : public Qdisc {
 public:
  Packet* dequeue() noexcept final {
    Packet* p = peeked_ ? std::exchange(peeked_, nullptr) : self().do_dequeue();
    if (p) account_dequeue(*p);
    return p;
  }
  Packet* peek() noexcept final {
    if (peeked_ == nullptr) peeked_ = self().do_dequeue();
    return peeked_;
  }

 protected:
  // A live change's settle() as fq_change and fq_codel_change trim: dequeue and drop while
  // `over()` holds (the packets count as dequeued, then dropped, as the kernel's bstats do);
  // stops when nothing can be dequeued now.
  template <class Over>
  void drop_dequeued_while(Over over, PacketList& to_free) noexcept {
    while (over()) {
      Packet* p = dequeue();
      if (!p) return;
      drop(p, to_free);
    }
  }
  // For reset(): the held packet goes to to_free (not counted as a drop).
  void purge_peeked(PacketList& to_free) noexcept {
    if (peeked_ == nullptr) return;
    account_remove(*peeked_);
    to_free.push_back(std::exchange(peeked_, nullptr));
  }

  Packet* peeked_ = nullptr;  // the head peek() took out, or nullptr

 private:
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
};

}  // namespace txpath
