// SPDX-License-Identifier: MIT
// The transmit path of a device with several TX queues: one TxQueue (strategy, root qdisc or mq
// child, driver loop) per TX queue of a NetDevice, and a send() that picks the queue as Linux's
// __dev_queue_xmit() does (NetDevice::pick_tx_queue()).
//
//   auto dev = txpath::make_net_device("nic:queues=4");
//   auto tx  = txpath::MultiQueueTx::create(*dev, {.queue = {.strategy = "busylock"}});
//   tx->send(p);              // explicit p->tx_queue, else XPS, else the flow hash
//   tx->drain(std::chrono::seconds(1));
//   auto per_queue = tx->queue_stats();  // tx->stats() is their sum (mq's statistics)
//
// Thread-safety: as TxQueue (send() from any number of threads; the rest from any thread).
// The NetDevice must outlive the MultiQueueTx.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "txpath/netdev.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {

struct MultiQueueConfig {
  // Every TX queue's strategy, lock, qdisc, txqueuelen, quota and service thread. Its
  // root_qdisc, when set, builds each queue's root (called once per queue).
  TxQueueConfig queue;
  // The root qdisc of TX queue `index` (mq's child for that queue, e.g. from a tc configuration
  // with an mq or mqprio root); when set it wins over queue.qdisc and queue.root_qdisc.
  std::function<std::unique_ptr<Qdisc>(uint32_t index, const QdiscEnv&)> queue_qdisc;
  // Each queue's service thread runs on the CPUs the device's XPS map names for that queue (its
  // completion interrupt's affinity following XPS, TxQueueConfig::service_cpus), when the map
  // names any and queue.service_cpus names none. The map as it is at create().
  bool service_on_xps_cpus = false;
};

class MultiQueueTx {
 public:
  // One TxQueue per TX queue of `device`. Throws ConfigError (one line) as TxQueue::create().
  static std::unique_ptr<MultiQueueTx> create(NetDevice& device, const MultiQueueConfig& config);
  ~MultiQueueTx();
  MultiQueueTx(const MultiQueueTx&) = delete;
  MultiQueueTx& operator=(const MultiQueueTx&) = delete;

  // Picks the TX queue (NetDevice::pick_tx_queue) and sends on it. Ownership as TxQueue::send:
  // the queue owns the packet unless refused (too_big, invalid, in_flight: checked before the
  // pick).
  SendStatus send(Packet* p) noexcept;
  // TxQueue::send_burst on a device with several queues: picks each packet's queue as send()
  // does and hands each run of consecutive packets for the same queue to that queue's
  // send_burst() (a burst whose packets all go to one queue is one call). Verdicts, ownership
  // and the return value as TxQueue::send_burst; a refused packet (too_big, invalid, in_flight)
  // is refused before its pick.
  std::size_t send_burst(std::span<Packet* const> packets, std::span<SendStatus> status) noexcept;

  uint32_t num_queues() const noexcept { return static_cast<uint32_t>(queues_.size()); }
  TxQueue& queue(uint32_t index) noexcept { return *queues_[index]; }
  const TxQueue& queue(uint32_t index) const noexcept { return *queues_[index]; }
  NetDevice& device() noexcept { return device_; }

  // Every queue drained (TxQueue::drain), within `timeout` in all.
  bool drain(std::chrono::milliseconds timeout);
  // TxQueue::service() on every queue; true if any had a run pending.
  bool service() noexcept;
  // The sum over the queues (what mq reports for its root), and each queue's own.
  TxQueueStats stats() const;
  std::vector<TxQueueStats> queue_stats() const;
  // Each queue's consistent snapshot (TxQueue::consistent_stats), summed; nullopt if any queue
  // times out. Conservation holds in the sum once every sender has returned.
  std::optional<TxQueueStats> consistent_stats(std::chrono::milliseconds timeout);

 private:
  MultiQueueTx(NetDevice& device, std::vector<std::unique_ptr<TxQueue>> queues);
  NetDevice& device_;
  std::vector<std::unique_ptr<TxQueue>> queues_;
};

// Adds b's counters into a (every field of TxQueueStats, QdiscStats and DeviceStats that is a
// count; qlen and backlog too, as mq sums its children).
void add_stats(TxQueueStats& a, const TxQueueStats& b) noexcept;

}  // namespace txpath
