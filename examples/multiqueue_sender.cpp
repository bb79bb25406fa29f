// SPDX-License-Identifier: MIT
// A device with four TX queues: packets are steered by XPS (the CPU the sender runs on), one
// sender's packets are put on queue 3 by the application, and a flow keeps the queue it chose
// while it has packets in flight (so it is never reordered, even when its thread migrates).
// Exit status 0 when every packet was accounted for on every queue.
//
// Lifetimes: the pool, then the device, then the MultiQueueTx (destroyed in the reverse order).
#include <txpath/frame.hpp>
#include <txpath/multiqueue.hpp>
#include <txpath/netdev.hpp>
#include <txpath/pool.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr uint32_t kThreads = 4;
  constexpr uint64_t kPerThread = 20000;

  txpath::Pool pool;
  auto device = txpath::make_net_device("null:queues=4");  // or "nic:queues=4": 4 rings, 1 wire
  // XPS: CPU c sends on queue c % 4 (as /sys/class/net/DEV/queues/tx-Q/xps_cpus would say).
  for (unsigned cpu = 0; cpu < device->cpu_count(); ++cpu) {
    const std::vector<unsigned> one = {cpu};
    device->set_xps_cpus(cpu % 4, one);
  }
  txpath::MultiQueueConfig config;
  config.queue.strategy = "busylock";  // every queue gets its own busylock, qdisc and driver loop
  auto tx = txpath::MultiQueueTx::create(*device, config);

  std::vector<std::thread> senders;
  for (uint32_t id = 0; id < kThreads; ++id) {
    senders.emplace_back([&, id] {
      std::vector<txpath::FrameTemplate> flows;  // eight flows per sender (source ports)
      for (uint16_t f = 0; f < 8; ++f) {
        txpath::FrameSpec spec;
        spec.src_port = static_cast<uint16_t>(10000 + id * 8 + f);
        flows.emplace_back(spec);
      }
      txpath::Pool::Cache cache(pool);
      for (uint64_t seq = 0; seq < kPerThread;) {
        txpath::Packet* p = cache.get();
        if (p == nullptr) {
          std::this_thread::yield();
          continue;
        }
        p->len = static_cast<uint32_t>(flows[seq % 8].write(p->buffer(), id, seq));
        if (id == 0) p->tx_queue = 3;  // the application's own choice wins over XPS
        tx->send(p);
        ++seq;
      }
    });
  }
  for (auto& t : senders) t.join();

  if (!tx->drain(std::chrono::seconds(10))) {
    std::fprintf(stderr, "multiqueue_sender: the queues did not drain in 10 s\n");
    return 1;
  }
  bool ok = true;
  const auto per_queue = tx->queue_stats();
  for (uint32_t q = 0; q < per_queue.size(); ++q) {
    const txpath::TxQueueStats& s = per_queue[q];
    std::printf("queue %u: submitted %llu sent %llu dropped %llu\n", q,
                static_cast<unsigned long long>(s.submitted),
                static_cast<unsigned long long>(s.sent),
                static_cast<unsigned long long>(s.dropped));
    ok = ok && s.sent + s.dropped == s.submitted && s.queued == 0;
  }
  const txpath::TxQueueStats total = tx->stats();
  ok = ok && total.submitted == kThreads * kPerThread && per_queue[3].submitted >= kPerThread;
  return ok ? 0 : 1;
}
