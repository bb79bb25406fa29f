// SPDX-License-Identifier: MIT
// Reading a running queue's statistics, three ways:
//  * stats(): any thread, any time, cheap; each counter read on its own (not one snapshot);
//  * consistent_stats(): one snapshot taken in the qdisc's serialised context, in which
//    submitted == sent + dropped + queued holds once the senders have returned;
//  * inspect_qdisc(): runs a function on the root qdisc in that context, for the qdisc's own
//    extended statistics (tc -s's xstats) while senders run.
// Exit status 0 when the conservation law holds and fq_codel's xstats were read.
#include <txpath/frame.hpp>
#include <txpath/pool.hpp>
#include <txpath/tc.hpp>
#include <txpath/txqueue.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

int main() {
  txpath::Pool pool;
  // A modelled NIC: 200 ns per packet on the wire model, a 256-descriptor ring.
  auto device = txpath::make_device("nic:pkt=200,doorbell=200,ring=256");
  txpath::TxQueueConfig config;
  config.strategy = "rootlock";
  config.lock = "ticket";
  config.qdisc = "fq_codel limit 2000";
  auto queue = txpath::TxQueue::create(*device, config);

  std::atomic<bool> stop{false};
  const txpath::FrameTemplate frame;
  std::vector<std::thread> senders;
  for (uint32_t id = 0; id < 2; ++id) {
    senders.emplace_back([&, id] {
      txpath::Pool::Cache cache(pool);
      for (uint64_t seq = 0; !stop.load(std::memory_order_relaxed); ++seq) {
        txpath::Packet* p = cache.get();
        if (p == nullptr) {
          std::this_thread::yield();
          continue;
        }
        p->len = static_cast<uint32_t>(frame.write(p->buffer(), id, seq));
        // fq_codel picks a flow with (flow_hash * flows) >> 32: use a well-spread 32-bit hash
        // (1 and 2 would both land in flow 0).
        p->flow_hash = (id + 1) * 0x9e3779b9u;
        queue->send(p);
      }
    });
  }

  // While they run: the cheap reading, from this (non-sender) thread.
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const txpath::TxQueueStats s = queue->stats();
    std::printf("running: submitted %llu sent %llu dropped %llu queued %llu\n",
                static_cast<unsigned long long>(s.submitted),
                static_cast<unsigned long long>(s.sent),
                static_cast<unsigned long long>(s.dropped),
                static_cast<unsigned long long>(s.queued));
  }
  // The qdisc's own statistics, read in its serialised context.
  std::string xstats;
  const bool inspected = queue->inspect_qdisc(
      [&](const txpath::Qdisc& q) { xstats = txpath::tc::xstats_text(q, q.xstats()); },
      std::chrono::seconds(5));
  std::printf("fq_codel xstats:\n%s", xstats.c_str());

  stop = true;
  for (auto& t : senders) t.join();
  // Senders have returned: the snapshot balances (packets may still be queued in it).
  const auto snap = queue->consistent_stats(std::chrono::seconds(5));
  if (!snap) {
    std::fprintf(stderr, "read_statistics: no consistent snapshot within 5 s\n");
    return 1;
  }
  const bool balanced = snap->submitted == snap->sent + snap->dropped + snap->queued;
  std::printf("snapshot: submitted %llu = sent %llu + dropped %llu + queued %llu: %s\n",
              static_cast<unsigned long long>(snap->submitted),
              static_cast<unsigned long long>(snap->sent),
              static_cast<unsigned long long>(snap->dropped),
              static_cast<unsigned long long>(snap->queued), balanced ? "yes" : "NO");
  const bool drained = queue->drain(std::chrono::seconds(10));
  return balanced && drained && inspected && xstats.find("maxpacket") != std::string::npos ? 0 : 1;
}
