// SPDX-License-Identifier: MIT
// MultiQueueTx: one TxQueue per TX queue of a NetDevice (txpath/multiqueue.hpp). Linux's
// __dev_queue_xmit() picks the netdev_queue and then runs that queue's qdisc under that queue's
// root lock; here each TX queue is a whole TxQueue (strategy, qdisc, driver loop, service
// thread), so queues share nothing but the NetDevice's flow slots and XPS map.
#include "txpath/multiqueue.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "engine/admission.hpp"

namespace txpath {

void add_stats(TxQueueStats& a, const TxQueueStats& b) noexcept {
  a.submitted += b.submitted;
  a.sent += b.sent;
  a.dropped += b.dropped;
  a.queued += b.queued;
  a.requeues += b.requeues;
  a.bypassed += b.bypassed;
  a.runs += b.runs;
  a.deferred_runs += b.deferred_runs;
  a.batches += b.batches;
  a.lock_waits += b.lock_waits;
  a.lock_wait_ns += b.lock_wait_ns;
  add_counts(a.qdisc, b.qdisc);
  a.device.tx_packets += b.device.tx_packets;
  a.device.tx_bytes += b.device.tx_bytes;
  a.device.doorbells += b.device.doorbells;
  a.device.busy += b.device.busy;
  a.device.completed += b.device.completed;
  a.device.stops += b.device.stops;
  a.device.wakes += b.device.wakes;
  a.device.tx_errors += b.device.tx_errors;
}

std::unique_ptr<MultiQueueTx> MultiQueueTx::create(NetDevice& device,
                                                   const MultiQueueConfig& config) {
  std::vector<std::unique_ptr<TxQueue>> queues;
  queues.reserve(device.num_tx_queues());
  for (uint32_t i = 0; i < device.num_tx_queues(); ++i) {
    TxQueueConfig qc = config.queue;
    if (config.service_on_xps_cpus && qc.service_cpus.empty()) qc.service_cpus = device.xps_cpus(i);
    if (config.queue_qdisc) {
      // By value: the queue may keep its config, and `config` is the caller's.
      qc.root_qdisc = [make = config.queue_qdisc, i](const QdiscEnv& env) { return make(i, env); };
    }
    queues.push_back(TxQueue::create(device.tx_queue(i), qc));  // qc.root_qdisc runs in here
  }
  return std::unique_ptr<MultiQueueTx>(new MultiQueueTx(device, std::move(queues)));
}

MultiQueueTx::MultiQueueTx(NetDevice& device, std::vector<std::unique_ptr<TxQueue>> queues)
    : device_(device), queues_(std::move(queues)) {}

MultiQueueTx::~MultiQueueTx() = default;

// Refused before the pick (engine/admission.hpp), which reads the frame and takes a flow slot:
// a packet the caller keeps, or one handed over already, never touches a slot. The claim is held
// across the pick, so that the same packet later in a burst is refused before its own pick, and
// given back just before the chosen queue's send()/send_burst() claims it again.
SendStatus MultiQueueTx::send(Packet* p) noexcept {
  if (const SendStatus refused = admission(p, device_.tx_queue(0).max_frame_len());
      refused != SendStatus::queued) [[unlikely]]
    return refused;
  const uint32_t q = device_.pick_tx_queue(*p);
  unclaim_packet(p);
  return queues_[q]->send(p);
}

std::size_t MultiQueueTx::send_burst(std::span<Packet* const> packets,
                                    std::span<SendStatus> status) noexcept {
  const std::size_t n = std::min(packets.size(), status.size());
  const uint32_t max_len = device_.tx_queue(0).max_frame_len();
  std::size_t accepted = 0;
  std::size_t begin = 0;  // the current run: packets[begin, i), all for queue `run_queue`
  uint32_t run_queue = 0;
  const auto flush = [&](std::size_t end) {
    if (end <= begin) return;
    for (std::size_t j = begin; j < end; ++j) unclaim_packet(packets[j]);  // the queue claims
    accepted += queues_[run_queue]->send_burst(packets.subspan(begin, end - begin),
                                               status.subspan(begin, end - begin));
  };
  for (std::size_t i = 0; i < n; ++i) {
    const SendStatus s = admission(packets[i], max_len);
    if (s != SendStatus::queued) [[unlikely]] {  // refused before the pick, as send()
      flush(i);
      status[i] = s;
      begin = i + 1;
      continue;
    }
    const uint32_t q = device_.pick_tx_queue(*packets[i]);
    if (i > begin && q != run_queue) {
      flush(i);
      begin = i;
    }
    run_queue = q;
  }
  flush(n);
  return accepted;
}

namespace {

// What is left of a timeout shared by the queues, one after the other (never negative).
std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

}  // namespace

bool MultiQueueTx::drain(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool all = true;
  for (auto& q : queues_) all = q->drain(left_until(deadline)) && all;
  return all;
}

bool MultiQueueTx::service() noexcept {
  bool any = false;
  for (auto& q : queues_) any = q->service() || any;
  return any;
}

TxQueueStats MultiQueueTx::stats() const {
  TxQueueStats sum;
  for (const auto& q : queues_) add_stats(sum, q->stats());
  return sum;
}

std::vector<TxQueueStats> MultiQueueTx::queue_stats() const {
  std::vector<TxQueueStats> out;
  out.reserve(queues_.size());
  for (const auto& q : queues_) out.push_back(q->stats());
  return out;
}

std::optional<TxQueueStats> MultiQueueTx::consistent_stats(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  TxQueueStats sum;
  for (auto& q : queues_) {
    const auto one = q->consistent_stats(left_until(deadline));
    if (!one) return std::nullopt;
    add_stats(sum, *one);
  }
  return sum;
}

}  // namespace txpath
