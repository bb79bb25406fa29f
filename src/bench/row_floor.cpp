// SPDX-License-Identifier: MIT
// The floor row (kFloorStrategy, bench.hpp): the harness's own limit, each sender handing its
// frames straight to a TX queue of the device under its tx lock, no strategy and no qdisc
// between them; its send loop, its counters, and the drain of the device's completions.
// Measured by bench/measure.hpp.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "bench/measure.hpp"
#include "bench/real_path.hpp"
#include "bench/sender_pools.hpp"
#include "txpath/device.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::bench_detail {

namespace {

// Reaps the device's completions once they are due, as the service thread does for a TxQueue.
void poll_if_due(Device& device) noexcept {
  const uint64_t at = device.next_poll_ns();
  if (at != 0 && at <= now_ns()) device.poll();
}

// Hands `batch` (numbered from `seq` on) to `device` under its tx lock, more = true until the
// last packet, whose xmit rings the doorbell. Whatever the device refuses (busy, or its queue
// stopped: it announced what it had accepted before saying so) is handed again once poll() has
// reaped completions; once the run has stopped, for up to kFloorStopGrace (then what is left is
// freed into `cache` and counted dropped: a device that never takes it again cannot hang us).
void floor_xmit(Device& device, std::span<Packet* const> batch, uint64_t seq, bool window,
                const RunFlags& flags, Sender& me, Pool::Cache& cache) {
  constexpr uint64_t kFloorStopGrace = 1'000'000'000;  // ns
  std::size_t done = 0;
  uint64_t give_up_ns = 0;  // set once the run has stopped
  for (;;) {
    {
      std::lock_guard tx(device.tx_lock());
      for (; done < batch.size() && !device.stopped(); ++done) {
        const bool more = done + 1 < batch.size();
        const auto xmit = [&] { return device.xmit_sampled(batch[done], more); };
        if (me.timed(window, seq + done, xmit, 1, &batch[done]) != XmitResult::ok) break;
        if (window) ++me.accepted_in_window;
      }
    }
    poll_if_due(device);
    if (done == batch.size()) return;
    if (!flags.running()) {
      if (give_up_ns == 0) give_up_ns = now_ns() + kFloorStopGrace;
      if (now_ns() >= give_up_ns) break;
    }
    std::this_thread::yield();  // the ring is full or the queue stopped: completions first
  }
  for (std::size_t i = done; i < batch.size(); ++i) cache.put(batch[i]);
  // relaxed (both): see Sender::dropped
  me.dropped.store(me.dropped.load(std::memory_order_relaxed) + (batch.size() - done),
                   std::memory_order_relaxed);
}

// The floor row's send loop: sender t writes kFloorBatch frames into buffers from its cache and
// hands them to TX queue t % queues (floor_xmit).
// Paced, a batch holds the packets due (at most kFloorBatch).
auto floor_send_loop(NetDevice& device, bench_detail::SenderPools& pools,
                     const std::vector<bench_detail::SenderTraffic>& traffic, std::vector<Sender>& senders,
                     const BenchConfig& cfg) {
  return [&device, &pools, &traffic, &senders, &cfg](int t, RunFlags& flags) {
    Sender& me = senders[static_cast<std::size_t>(t)];
    const bench_detail::SenderTraffic& frames = traffic[static_cast<std::size_t>(t)];
    bench_detail::Pacer pacer = pacer_for(cfg, static_cast<int>(traffic.size()), frames);
    Device& queue = device.tx_queue(static_cast<uint32_t>(t) % device.num_tx_queues());
    Pool::Cache cache(pools.of(t));
    std::array<Packet*, kFloorBatch> batch{};
    flags.started();
    if (frames.idle()) return idle_until_stopped(flags);
    pacer.start(now_ns());
    uint64_t seq = 0;
    while (flags.running()) {
      const uint64_t want = due_now(pacer, batch.size(), flags);
      std::size_t n = 0;
      for (; n < want; ++n) {
        Packet* p = cache.get();
        if (!p) break;
        frames.write(*p, seq + n);
        batch[n] = p;
      }
      pacer.take(n);
      if (n == 0) {  // every buffer is in flight: reap completions
        poll_if_due(queue);
        std::this_thread::yield();
        continue;
      }
      // relaxed (both): see Sender::submitted
      me.submitted.store(me.submitted.load(std::memory_order_relaxed) + n,
                         std::memory_order_relaxed);
      floor_xmit(queue, std::span(batch.data(), n), seq, flags.in_window(), flags, me, cache);
      seq += n;
    }
  };
}

// Each TX queue's counters in a floor run: the senders' submitted and dropped (sender t on
// queue t % queues), the device's own accepted count as sent, the device's counters.
std::vector<TxQueueStats> floor_stats(const NetDevice& device, const std::vector<Sender>& senders) {
  std::vector<TxQueueStats> out(device.num_tx_queues());
  for (std::size_t t = 0; t < senders.size(); ++t) {
    TxQueueStats& q = out[t % out.size()];
    q.submitted += senders[t].submitted.load(std::memory_order_relaxed);  // relaxed: see Sender
    q.dropped += senders[t].dropped.load(std::memory_order_relaxed);
  }
  for (uint32_t i = 0; i < device.num_tx_queues(); ++i) {
    out[i].device = device.tx_queue(i).stats();
    out[i].sent = out[i].device.tx_packets;
  }
  return out;
}

// Once the senders have stopped: polls every TX queue until each has completed what it accepted
// (in_flight() 0), up to `timeout`. False if one still has packets in flight.
bool drain_devices(NetDevice& device, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool idle = true;
    for (uint32_t i = 0; i < device.num_tx_queues(); ++i) {
      Device& queue = device.tx_queue(i);
      if (queue.in_flight() == 0) continue;
      idle = false;
      poll_if_due(queue);
    }
    if (idle) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace

Run run_floor_once(const BenchConfig& cfg, int threads, uint32_t queues, Delivery& delivery) {
  bench_detail::SenderPools pools(cfg, threads, queues, delivery.capture);
  auto device = make_net_device(spec_with_queues(cfg.device, queues));  // after the pools, as above
  std::vector<LatencyHistogram> queue_delay(queues);
  log_departures(*device, queue_delay);
  // On several queues each sender is its own flow, as in the multi-queue rows.
  const auto traffic = sender_traffic(cfg, frames_for(device->tx_queue(0), cfg.payload), threads, queues > 1,
                                      delivery.capture);
  delivery.reset();
  auto senders = make_senders(threads);
  const auto w = measure(cfg, threads, delivery, floor_send_loop(*device, pools, traffic, senders, cfg),
                         [&] { return floor_stats(*device, senders); });
  const bool drained = drain_devices(*device, std::chrono::seconds(10));
  Run r = summarize_run("-", drained, floor_stats(*device, senders), senders, w);
  for (const LatencyHistogram& q : queue_delay) r.queue_delay.merge(q);
  delivery.check(r.sent, r);
  for (uint32_t q = 0; q < queues && r.output_error.empty(); ++q)
    r.output_error = bench_detail::finish_output(device->tx_queue(q));
  return r;
}

}  // namespace txpath::bench_detail
