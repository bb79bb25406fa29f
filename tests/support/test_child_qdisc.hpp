// SPDX-License-Identifier: MIT
// A FIFO child qdisc for tests of classful parents (prio, htb, tbf): it can report a watchdog
// time, refuse to dequeue (throttled), or drop `drop_on_dequeue` head packets inside dequeue()
// onto its own `dropped` list, like an AQM; take_dequeue_drops() hands that list out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "txpath/packet.hpp"
#include "txpath/qdisc.hpp"

namespace txpath::test {

class TestChildQdisc final : public Qdisc {
 public:
  std::string_view kind() const noexcept override { return "test"; }
  DumpAttrs dump_options() const override { return {}; }
  Verdict enqueue(Packet* p, PacketList&) noexcept override {
    q_.push_back(p);
    account_enqueue(*p);
    return Verdict::success;
  }
  Packet* dequeue() noexcept override {
    for (; drop_on_dequeue > 0 && !q_.empty(); --drop_on_dequeue) {
      Packet* d = q_.pop_front();
      account_remove(*d);
      count_drop();
      dropped.push_back(d);
    }
    if (throttled) return nullptr;
    Packet* p = q_.pop_front();
    if (p) account_dequeue(*p);
    return p;
  }
  Packet* peek() noexcept override { return throttled ? nullptr : q_.front(); }
  void reset(PacketList& to_free) noexcept override {
    while (Packet* p = q_.pop_front()) {
      account_remove(*p);
      to_free.push_back(p);
    }
  }
  uint64_t watchdog_ns() const noexcept override { return watchdog; }
  void take_dequeue_drops(PacketList& out) noexcept override { out.splice_back(dropped); }

  uint64_t watchdog = 0;
  bool throttled = false;
  int drop_on_dequeue = 0;
  PacketList dropped;

 private:
  PacketList q_;
};

}  // namespace txpath::test
