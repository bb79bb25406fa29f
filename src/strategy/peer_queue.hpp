// SPDX-License-Identifier: MIT
// Peer baselines for `txpath bench`: what a userspace datapath does without a qdisc layer.
// Senders push into a multi-producer queue; ONE dedicated drainer thread (a DPDK-style TX core)
// pops bursts of up to 64 and hands them to the same device with the same xmit_more batching.
// No qdisc, no priorities, no BQL budget: the comparison shows what the qdisc layer costs.
//
// Invariants: only the drainer touches the device's xmit side and `pending_` (packets popped
// but refused by the device, retried first, in order); a full queue drops the new packet
// (counted); submitted = sent + dropped + queued at quiescence, where quiescence is confirmed
// by the drainer itself (drain() posts a request number, the drainer acknowledges it once it has
// seen the queue and pending_ empty after reading that number).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "base/per_thread_counter.hpp"
#include "txpath/counter.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {

class PeerQueue : public TxQueue {
 public:
  PeerQueue(Device& device, std::string_view name);
  ~PeerQueue() override;

  SendStatus send(Packet* p) noexcept override;
  // The burst: admitted packets pushed kBurst at a time, each push_burst() one multi-producer
  // operation (one ring reservation, or one mutex hold) taking what fits; the rest are dropped,
  // as send() drops on a full queue.
  std::size_t send_burst(std::span<Packet* const> packets,
                         std::span<SendStatus> status) noexcept override;
  bool drain(std::chrono::milliseconds timeout) override;
  bool service() noexcept override { return false; }  // the drainer does all the work
  TxQueueStats stats() const override;
  // Served by the drainer between bursts (it alone moves packets from the queue to the device).
  std::optional<TxQueueStats> consistent_stats(std::chrono::milliseconds timeout) override;
  std::string_view strategy() const noexcept override { return name_; }
  std::string_view lock_kind() const noexcept override { return "-"; }
  const Qdisc* qdisc() const noexcept override { return nullptr; }
  // No qdisc to inspect or edit.
  bool inspect_qdisc(const std::function<void(const Qdisc&)>&, std::chrono::milliseconds) override {
    return false;
  }
  bool edit_qdisc(const std::function<void(Qdisc&, QdiscEdit&)>&, std::chrono::milliseconds) override {
    return false;
  }
  Device& device() noexcept override { return device_; }

  // Starts the drainer; called by the factory once the most-derived object exists.
  void start_drainer();
  // Stops the drainer and frees whatever is still queued (counted as dropped). Called by the
  // most-derived destructor, while push()/pop_burst() still work.
  void shutdown() noexcept;

 protected:
  static constexpr std::size_t kBurst = 64;
  // Multi-producer push; false when full.
  virtual bool push(Packet* p) noexcept = 0;
  // Multi-producer push of ps[0..n) in order, as one operation: pushes the first k that fit and
  // returns k (the caller keeps the rest).
  virtual std::size_t push_burst(Packet* const* ps, std::size_t n) noexcept = 0;
  // Single-consumer pop of up to n packets.
  virtual std::size_t pop_burst(Packet** out, std::size_t n) noexcept = 0;
  // Packets in the queue (a racy hint while running, exact at quiescence).
  virtual uint64_t size() const noexcept = 0;

 private:
  void drainer_main();
  // Pushes admitted[0..n) (status entries at[0..n)); those that do not fit are dropped.
  void push_or_drop(Packet* const* admitted, const std::size_t* at, std::size_t n,
                    std::span<SendStatus> status) noexcept;
  int xmit_pending() noexcept;
  void serve_snapshot() noexcept;

  Device& device_;
  const std::string name_;
  PerThreadCounter submitted_, dropped_;
  SingleWriterCounter sent_, purged_, pending_count_;  // written by the drainer only
  PacketList pending_;                                 // drainer-private
  alignas(64) std::atomic<uint64_t> drain_req_{0};
  std::atomic<uint64_t> drain_ack_{0};
  std::atomic<bool> stop_{false};
  // consistent_stats() requests: a caller bumps snapshot_req_ and waits on snapshot_cv_; the
  // drainer answers between bursts. snapshot_, snapshot_served_ under snapshot_mutex_.
  std::atomic<uint64_t> snapshot_req_{0};
  std::mutex snapshot_mutex_;
  std::condition_variable snapshot_cv_;
  TxQueueStats snapshot_;
  uint64_t snapshot_served_ = 0;
  std::thread drainer_;
  bool shut_down_ = false;
};

template <class Peer>
class FinalizedPeer final : public Peer {
 public:
  using Peer::Peer;
  ~FinalizedPeer() override { this->shutdown(); }
};

std::unique_ptr<PeerQueue> make_peer_ck_ring(Device& device, const TxQueueConfig& config);
std::unique_ptr<PeerQueue> make_peer_mutex_deque(Device& device, const TxQueueConfig& config);

}  // namespace txpath
