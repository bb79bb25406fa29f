// SPDX-License-Identifier: MIT
// The smallest complete txpath program: four sender threads, one TX queue, the `null` device.
//
// Lifetimes: the pool outlives the device, and the device outlives the queue (declared in that
// order, destroyed in the reverse). Each sender thread has its own Pool::Cache. Exit status 0 when
// every packet was accounted for (sent + dropped == submitted, nothing left queued).
#include <txpath/frame.hpp>
#include <txpath/pool.hpp>
#include <txpath/txqueue.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr uint32_t kThreads = 4;
  constexpr uint64_t kPerThread = 20000;

  txpath::Pool pool;                              // 1. the pool: every buffer, allocated once
  auto device = txpath::make_device("null");      // 2. the device
  txpath::TxQueueConfig config;                   // strategy_names(), lock_names(), make_qdisc()
  config.strategy = "busylock";
  config.lock = "mcs";
  config.qdisc = "pfifo_fast";
  auto queue = txpath::TxQueue::create(*device, config);  // 3. the queue, last: destroyed first

  const txpath::FrameTemplate frame;  // Ethernet/IPv4/UDP with a sender id and sequence number
  std::vector<std::thread> senders;
  for (uint32_t id = 0; id < kThreads; ++id) {
    senders.emplace_back([&, id] {
      txpath::Pool::Cache cache(pool);  // one per thread; returns its packets when destroyed
      for (uint64_t seq = 0; seq < kPerThread;) {
        txpath::Packet* p = cache.get();
        if (p == nullptr) {  // the pool is exhausted: wait for completions to return buffers
          std::this_thread::yield();
          continue;
        }
        p->len = static_cast<uint32_t>(frame.write(p->buffer(), id, seq));
        queue->send(p);  // the queue owns p now (unless too_big, impossible here)
        ++seq;
      }
    });
  }
  for (auto& t : senders) t.join();

  if (!queue->drain(std::chrono::seconds(10))) {
    std::fprintf(stderr, "minimal_sender: the queue did not drain in 10 s\n");
    return 1;
  }
  const txpath::TxQueueStats s = queue->stats();
  std::printf("submitted %llu sent %llu dropped %llu queued %llu\n",
              static_cast<unsigned long long>(s.submitted), static_cast<unsigned long long>(s.sent),
              static_cast<unsigned long long>(s.dropped), static_cast<unsigned long long>(s.queued));
  const bool ok = s.submitted == kThreads * kPerThread && s.sent + s.dropped == s.submitted &&
                  s.queued == 0;
  return ok ? 0 : 1;
}
