// SPDX-License-Identifier: MIT
// A custom Qdisc: two bands, packets with priority 0 ("urgent") before every other packet, each
// band a FIFO, one packet limit over both. It is plugged into a TxQueue with
// TxQueueConfig::root_qdisc.
//
// What a qdisc must keep (include/txpath/qdisc.hpp): it is called by one thread at a time (the
// strategy serialises it), it never frees a packet and never takes a lock (a dropped packet goes
// on `to_free`, which the caller frees outside every lock), and it keeps qlen/backlog/drops with
// the protected account_* / drop() helpers. It is classless: a classful qdisc would also derive
// from txpath::ClassOps and call set_class_ops(this) (docs/library.md, "A custom Qdisc"). Exit
// status 0 when the order and the counters are right.
#include <txpath/device.hpp>
#include <txpath/pool.hpp>
#include <txpath/qdisc.hpp>
#include <txpath/txqueue.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

namespace {

class UrgentFirst final : public txpath::Qdisc {
 public:
  explicit UrgentFirst(uint32_t limit) : limit_(limit) {}

  std::string_view kind() const noexcept override { return "urgent_first"; }
  // What it reports of itself (tc prints a kind it does not know as "limit 3").
  txpath::DumpAttrs dump_options() const override { return txpath::DumpAttrs().number("limit", limit_); }

  txpath::Verdict enqueue(txpath::Packet* p, txpath::PacketList& to_free) noexcept override {
    if (qlen() >= limit_) return drop(p, to_free);  // tail drop: counted, freed by the caller
    bands_[p->priority == 0 ? 0 : 1].push_back(p);
    account_enqueue(*p);
    return txpath::Verdict::success;
  }
  txpath::Packet* dequeue() noexcept override {
    for (auto& band : bands_) {
      if (txpath::Packet* p = band.pop_front()) {
        account_dequeue(*p);
        return p;
      }
    }
    return nullptr;
  }
  txpath::Packet* peek() noexcept override {
    return bands_[0].empty() ? bands_[1].front() : bands_[0].front();
  }
  void reset(txpath::PacketList& to_free) noexcept override {
    for (auto& band : bands_) {
      while (txpath::Packet* p = band.pop_front()) {
        account_remove(*p);
        to_free.push_back(p);
      }
    }
  }

 private:
  std::array<txpath::PacketList, 2> bands_;
  uint32_t limit_;
};

// The qdisc on its own: urgent packets leave first, the limit drops.
bool check_order(txpath::Pool& pool) {
  UrgentFirst q(3);
  txpath::PacketList to_free;
  txpath::Pool::Cache cache(pool);
  const uint32_t priorities[] = {5, 0, 5, 0};  // the fourth is over the limit
  for (uint32_t prio : priorities) {
    txpath::Packet* p = cache.get();
    if (p == nullptr) return false;
    p->len = 60;
    p->priority = prio;
    q.enqueue(p, to_free);
  }
  bool ok = q.qlen() == 3 && q.stats().drops == 1 && to_free.size() == 1;
  const uint32_t expected[] = {0, 5, 5};
  for (uint32_t prio : expected) {
    txpath::Packet* p = q.dequeue();
    ok = ok && p != nullptr && p->priority == prio;
    if (p != nullptr) to_free.push_back(p);
  }
  txpath::free_packets(std::move(to_free));
  return ok && q.dequeue() == nullptr && q.backlog() == 0;
}

// The qdisc under a TxQueue: its counters are the queue's.
bool check_in_a_queue(txpath::Pool& pool) {
  auto device = txpath::make_device("null");
  txpath::TxQueueConfig config;
  config.strategy = "rootlock";
  config.root_qdisc = [](const txpath::QdiscEnv& env) -> std::unique_ptr<txpath::Qdisc> {
    return std::make_unique<UrgentFirst>(env.txqueuelen);  // limit: the device's txqueuelen
  };
  auto queue = txpath::TxQueue::create(*device, config);
  txpath::Pool::Cache cache(pool);
  for (uint32_t i = 0; i < 1000; ++i) {
    txpath::Packet* p = cache.get();
    if (p == nullptr) return false;
    p->len = 60;
    p->priority = i % 2;
    queue->send(p);
  }
  if (!queue->drain(std::chrono::seconds(5))) return false;
  const txpath::TxQueueStats s = queue->stats();
  std::printf("%s: sent %llu, qdisc dequeued or bypassed %llu, drops %llu\n",
              std::string(queue->qdisc()->kind()).c_str(),
              static_cast<unsigned long long>(s.sent),
              static_cast<unsigned long long>(s.qdisc.packets),
              static_cast<unsigned long long>(s.qdisc.drops));
  return s.sent == 1000 && s.qdisc.packets == 1000 && s.qdisc.qlen == 0;
}

}  // namespace

int main() {
  txpath::Pool pool;  // outlives every queue and device below
  const bool order = check_order(pool);
  const bool queue = check_in_a_queue(pool);
  if (!order) std::fprintf(stderr, "custom_qdisc: wrong order or counters\n");
  if (!queue) std::fprintf(stderr, "custom_qdisc: the queue's counters are wrong\n");
  return order && queue ? 0 : 1;
}
