// SPDX-License-Identifier: MIT
// A network device with one or more TX queues (Linux: struct net_device and its netdev_queue
// array), and the choice of a TX queue for each packet (netdev_pick_tx()).
//
//   auto dev = txpath::make_net_device("nic:queues=4");        // 4 rings sharing one wire
//   dev->set_xps_cpus(0, std::vector<unsigned>{0, 1});         // tx-0/xps_cpus = CPUs 0,1
//   auto tx  = txpath::MultiQueueTx::create(*dev, {});          // txpath/multiqueue.hpp
//
// Each TX queue is a Device (txpath/device.hpp): its own tx lock, stopped/woken state, BQL,
// doorbell and completions, exactly what a single-queue device has; a TxQueue attaches to one.
// A NetDevice with one queue is that one Device and nothing more.
//
// Queue choice (pick_tx_queue, txpath/queue_select.hpp for the pure steps): an explicit queue
// (Packet::tx_queue) wins; else the sending CPU's XPS map (restricted to the packet's
// traffic class when mqprio set traffic classes); else the flow hash over the queues (of the
// class). The flow hash is Packet::flow_hash, else frame_flow_hash() of the frame, stored back
// into the packet (as the kernel stores skb->hash). A flow keeps its queue while it has packets
// in flight (the kernel's ooo_okay rule): every packet picked by hash or XPS holds a count in
// the flow's slot from the pick until it is freed (free_packets(): sent and completed, or
// dropped), and a new queue is chosen only when that count is 0. So changing the XPS map, or a
// sender migrating to another CPU, never reorders a flow. Flows whose hashes share a slot stay
// together while either has packets in flight (a coarser rule, never a reordering).
//
// Threading: pick_tx_queue() is lock-free and allocation-free, from any thread. set_xps_cpus()
// and set_traffic_classes() may run while senders pick (the map's words are updated one by
// one: a pick sees the old or the new map of each CPU word; the in-flight rule keeps order).
// The NetDevice must outlive every TxQueue on it and every packet picked by it (the destructor
// of each queue's Device returns what its ring still holds before the flow slots go away).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/device.hpp"
#include "txpath/packet.hpp"
#include "txpath/traffic_classes.hpp"  // kMaxTxQueues, TrafficClasses

namespace txpath {

class NetDevice {
 public:
  // Takes the device's TX queues (1 .. kMaxTxQueues, none null); `spec` is what describe()
  // answers (the --device spec, e.g. "nic:queues=4"). Throws ConfigError.
  NetDevice(std::vector<std::unique_ptr<Device>> queues, std::string spec);
  ~NetDevice();
  NetDevice(const NetDevice&) = delete;
  NetDevice& operator=(const NetDevice&) = delete;

  uint32_t num_tx_queues() const noexcept { return static_cast<uint32_t>(queues_.size()); }
  Device& tx_queue(uint32_t i) noexcept { return *queues_[i]; }
  const Device& tx_queue(uint32_t i) const noexcept { return *queues_[i]; }
  std::string_view kind() const noexcept { return queues_[0]->kind(); }
  const std::string& describe() const noexcept { return spec_; }
  uint32_t mtu() const noexcept { return queues_[0]->mtu(); }

  // XPS (/sys/class/net/DEV/queues/tx-Q/xps_cpus): the CPUs that send on queue `queue`; an
  // empty set takes the queue out of every CPU's map. CPUs at or above cpu_count() are refused.
  // Throws ConfigError (one line) for a queue or CPU out of range.
  void set_xps_cpus(uint32_t queue, std::span<const unsigned> cpus);
  std::vector<unsigned> xps_cpus(uint32_t queue) const;
  // Every CPU's map emptied: the flow hash decides alone.
  void clear_xps() noexcept;
  // The CPUs an XPS map can name (the machine's configured CPUs).
  unsigned cpu_count() const noexcept { return cpus_; }

  // mqprio's traffic classes (num_tc 0 clears them). Throws ConfigError when a range leaves the
  // device's queues, a class has no queue, or a priority names a class >= num_tc.
  void set_traffic_classes(const TrafficClasses& tcs);
  TrafficClasses traffic_classes() const;

  // netdev_pick_tx() for a packet sent from the calling thread's CPU (see the top of this
  // file). Sets p.flow_hash when it was 0 and the frame has one, and p.flow_in_flight when the
  // choice holds a flow slot. Always < num_tx_queues().
  uint32_t pick_tx_queue(Packet& p) noexcept;
  // The same choice for a packet sent from `cpu` (for tests; pick_tx_queue asks sched_getcpu()).
  uint32_t pick_tx_queue(Packet& p, unsigned cpu) noexcept;
  // Packets picked by hash or XPS and not yet freed (sum over the flow slots; for tests).
  uint64_t flows_in_flight() const noexcept;

 private:
  // A queue for a packet whose flow has nothing in flight: classes, XPS, hash.
  uint32_t choose_queue(const Packet& p, unsigned cpu) const noexcept;

  struct Impl;
  // Declared first, destroyed last: the queues' destructors free what their rings hold, which
  // releases flow slots held here.
  std::unique_ptr<Impl> impl_;  // XPS words, traffic classes, flow slots
  std::vector<std::unique_ptr<Device>> queues_;
  std::string spec_;
  unsigned cpus_ = 1;
};

// Builds a device with its TX queues from a --device spec (make_device()'s grammar plus
// `queues=N`, 1..kMaxTxQueues, on every kind that has more than one queue: null, nic, fault,
// afpacket, udp, tun, afxdp). Throws ConfigError (one line) for a bad spec, DeviceError when a
// real device cannot be opened.
std::unique_ptr<NetDevice> make_net_device(std::string_view spec);

}  // namespace txpath
