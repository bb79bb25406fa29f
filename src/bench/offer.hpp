// SPDX-License-Identifier: MIT
// `txpath offer`: a fixed schedule of flows sent through one real device, either by the kernel
// (one UDP socket per flow, each with its SO_PRIORITY / IP_TOS, into the kernel's own qdisc on
// the interface) or by txpath (afpacket:IF, the kernel's qdisc bypassed, through a TxQueue whose
// tree is a tc configuration's device), so that the two transmit paths are offered exactly the
// same packets at the same times (scripts/qdisc_conform.py compares what arrives; see
// docs/conformance.md).
//
// A flow's packets are due at start + k * frame_bytes / rate, k = 0, 1, ... while before its
// stop: the same count on both paths, whatever the machine does. One thread sends every flow, in
// the order their packets fall due (a tie: the lower flow first); a packet sent late is sent as
// soon as it can be, never skipped. Flow f is the sink's stream f (frame.hpp: its sender id), so
// the receiver tells flows apart and checks their order.
//
// Priority as the kernel gives a socket's packets (skb->priority = sk->sk_priority): setting
// IP_TOS sets it to rt_tos2priority(tos) (include/net/route.h, ip_tos2prio in
// net/ipv4/route.c), SO_PRIORITY then overrides it. txpath's packets get the same value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace txpath::bench_detail {

struct OfferFlow {
  uint64_t rate_bytes_per_s = 0;     // frame bytes per second (tc's rate units); > 0
  std::size_t frame_bytes = 1000;    // the whole Ethernet frame: 42 bytes of headers + payload
  std::optional<uint32_t> priority;  // SO_PRIORITY; none: rt_tos2priority(tos)
  uint8_t tos = 0;                   // IP_TOS (the IPv4 header's TOS byte)
  double start_s = 0;                // first packet due (seconds from the run's start)
  double stop_s = -1;                // no packet due from here on; < 0: the run's duration
  uint32_t queue = 0;                // the TX queue (a device with several; see offer.cpp)
};

enum class OfferVia { txpath, kernel };

struct OfferConfig {
  std::string device;          // afpacket:IF on a testbed's host end
  OfferVia via = OfferVia::txpath;
  std::string strategy = "busylock";
  std::string tc_config;       // txpath: the tree (required); kernel: not read
  std::string tc_dev;          // the configuration's device (empty: its only one)
  std::vector<OfferFlow> flows;
  double duration_s = 2;
  // Called once, just before the first packet is due (1 ms ahead): a caller that times changes
  // against the schedule (a live tc change at +1 s) starts its clock here.
  std::function<void()> on_start;
};

struct OfferFlowCounts {
  uint64_t offered = 0;   // packets due and handed to the path
  uint64_t accepted = 0;  // the path took them (send() returned; txpath: queued or congested)
  uint64_t dropped = 0;   // the path refused or dropped them at once
  uint64_t bytes = 0;     // frame bytes offered
};

struct OfferReport {
  std::vector<OfferFlowCounts> flows;
  double seconds = 0;          // the schedule's run, first due to last sent
  uint64_t max_late_ns = 0;    // the latest a packet was sent after it fell due
  std::string tc_stats_json;   // txpath: `txpath tc -s -j` of the tree when the schedule ended
};

// The kernel's priority of a socket whose IP_TOS is `tos` and that has no SO_PRIORITY.
uint32_t tos_to_priority(uint8_t tos) noexcept;

// One --flow: comma-separated key=value, e.g. "rate=10mbit,size=1000,prio=1:10,start=0.5".
// Keys: rate (tc units, required), size (frame bytes, 60..1514, default 1000), prio (a number or
// a class id MAJ:MIN in hex, as tc's classid), tos (0..255, decimal or 0x hex), start, stop
// (seconds), queue. Throws ConfigError naming the flow and the key.
OfferFlow parse_offer_flow(std::string_view text);

// Runs the schedule; throws ConfigError / DeviceError before anything is sent.
OfferReport run_offer(const OfferConfig& config);

}  // namespace txpath::bench_detail
