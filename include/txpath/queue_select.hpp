// SPDX-License-Identifier: MIT
// Picking a TX queue for a packet on a device with several: the building blocks of Linux's
// netdev_pick_tx() (net/core/dev.c): an explicit choice wins, else the sending CPU's XPS map,
// else a hash of the flow over all queues. docs/background.md, "Choosing a TX queue", says what
// each step does in the kernel and where txpath differs.
//
// Both functions are pure (no state, no allocation, no lock): safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace txpath {

// The flow hash of an Ethernet frame, from its addresses and ports: Ethernet II, at most two
// VLAN tags (802.1Q / 802.1ad), then IPv4 or IPv6. The ports of TCP, UDP, UDP-Lite and SCTP are
// included unless the IPv4 packet is a fragment or an IPv6 extension header comes first (then
// only the addresses and the protocol, as the kernel's flow dissector does). Frames that are not
// IP, or too short to read the addresses from, have no flow hash: nullopt. Never 0 (0 means "no
// hash" in Packet::flow_hash). VLAN tags are skipped, not hashed; a third tag is not read
// (nullopt). The same 5-tuple always gives the same hash, in every process: the seed is fixed
// (the kernel keys its hash once per boot, which matters only against flows that pick their
// queue on purpose).
std::optional<uint32_t> frame_flow_hash(std::span<const std::byte> frame) noexcept;

// reciprocal_scale(): maps a 32-bit hash onto [0, n) with a multiply, as the kernel does
// (n > 0). Even spread for hashes spread over all 32 bits.
constexpr uint32_t scale_hash(uint32_t hash, uint32_t n) noexcept {
  return static_cast<uint32_t>((static_cast<uint64_t>(hash) * n) >> 32);
}

// What netdev_pick_tx() knows about one packet.
struct QueuePick {
  uint32_t num_queues = 1;                  // the device's TX queues (> 0)
  std::optional<uint32_t> explicit_queue{};  // the application's choice; used when < num_queues
  // The sending CPU's XPS map as a bitmap: bit q % 64 of word q / 64 names queue q (may be
  // empty; bits past num_queues are ignored).
  std::span<const uint64_t> xps_mask{};
  uint32_t flow_hash = 0;                   // the packet's flow hash (0: none, queue 0's hash)
  // The packet's traffic class's queues, [class_offset, class_offset + class_count) (mqprio);
  // class_count 0: every queue. Clipped to num_queues.
  uint32_t class_offset = 0;
  uint32_t class_count = 0;
};

// The queue for one packet: an explicit queue below num_queues; else, when the CPU's XPS map
// names queues of the packet's class, one of those picked by the flow hash (so one flow stays on
// one queue of the map); else the flow hash scaled over the class's queues (all queues without
// classes). Always < num_queues.
uint32_t pick_tx_queue(const QueuePick& pick) noexcept;

}  // namespace txpath
