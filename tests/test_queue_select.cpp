// SPDX-License-Identifier: MIT
// frame_flow_hash() and pick_tx_queue() (txpath/queue_select.hpp): which fields decide a flow's
// hash, what has none, and the order netdev_pick_tx() follows (explicit, XPS, hash).
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "txpath/frame.hpp"
#include "txpath/queue_select.hpp"

using namespace txpath;

namespace {

std::vector<std::byte> udp_frame(uint16_t src_port, uint32_t sender = 0, uint64_t seq = 0,
                                 uint32_t src_ip = 0x0a000001) {
  FrameSpec spec;
  spec.src_port = src_port;
  spec.src_ip = src_ip;
  const FrameTemplate t(spec);
  std::vector<std::byte> f(t.size());
  t.write(f, sender, seq);
  return f;
}

void put16(std::vector<std::byte>& f, std::size_t at, uint16_t v) {
  f[at] = std::byte(v >> 8);
  f[at + 1] = std::byte(v & 0xff);
}

// An IPv6 frame: next header `next`, ports at the start of the payload, 8 payload bytes.
std::vector<std::byte> ipv6_frame(uint8_t next, uint16_t src_port, uint8_t last_src_byte = 1) {
  std::vector<std::byte> f(14 + 40 + 8);
  put16(f, 12, 0x86dd);
  f[14] = std::byte{0x60};
  put16(f, 14 + 4, 8);
  f[14 + 6] = std::byte{next};
  f[14 + 8 + 15] = std::byte{last_src_byte};  // source ::1 (or ::N)
  f[14 + 24 + 15] = std::byte{2};              // destination ::2
  put16(f, 54, src_port);
  put16(f, 56, 9000);
  return f;
}

std::vector<std::byte> vlan_tagged(const std::vector<std::byte>& f, int tags) {
  std::vector<std::byte> out(f.begin(), f.begin() + 12);
  for (int i = 0; i < tags; ++i) {
    const std::array<std::byte, 4> tag = {std::byte{0x81}, std::byte{0x00}, std::byte{0x00},
                                          std::byte(10 + i)};
    out.insert(out.end(), tag.begin(), tag.end());
  }
  out.insert(out.end(), f.begin() + 12, f.end());
  return out;
}

}  // namespace

TEST(FlowHash, TheFiveTupleDecidesNotThePayload) {
  const auto a = frame_flow_hash(udp_frame(1000, 1, 1));
  ASSERT_TRUE(a.has_value());
  EXPECT_NE(*a, 0u);
  EXPECT_EQ(a, frame_flow_hash(udp_frame(1000, 7, 12345)));  // other sender id and sequence
  EXPECT_NE(a, frame_flow_hash(udp_frame(1001, 1, 1)));      // another source port
  EXPECT_NE(a, frame_flow_hash(udp_frame(1000, 1, 1, 0x0a000009)));  // another source address
}

TEST(FlowHash, VlanTagsAreSkippedNotHashed) {
  const auto plain = udp_frame(2000);
  EXPECT_EQ(frame_flow_hash(plain), frame_flow_hash(vlan_tagged(plain, 1)));
  EXPECT_EQ(frame_flow_hash(plain), frame_flow_hash(vlan_tagged(plain, 2)));
  EXPECT_FALSE(frame_flow_hash(vlan_tagged(plain, 3)).has_value());  // a third tag: not IP to us
}

TEST(FlowHash, Ipv4FragmentsHashTheAddressesOnly) {
  auto a = udp_frame(3000), b = udp_frame(3001);
  ASSERT_NE(frame_flow_hash(a), frame_flow_hash(b));
  put16(a, 14 + 6, 0x2000);  // more fragments
  put16(b, 14 + 6, 0x2000);
  EXPECT_EQ(frame_flow_hash(a), frame_flow_hash(b));
  put16(b, 14 + 6, 0x0010);  // a later fragment (offset 16): still the same flow
  EXPECT_EQ(frame_flow_hash(a), frame_flow_hash(b));
}

TEST(FlowHash, Ipv6PortsCountUnlessAnExtensionHeaderComesFirst) {
  const auto udp = frame_flow_hash(ipv6_frame(17, 4000));
  ASSERT_TRUE(udp.has_value());
  EXPECT_NE(udp, frame_flow_hash(ipv6_frame(17, 4001)));
  EXPECT_NE(udp, frame_flow_hash(ipv6_frame(17, 4000, 9)));  // another source address
  EXPECT_EQ(frame_flow_hash(ipv6_frame(0, 4000)), frame_flow_hash(ipv6_frame(0, 4001)));
}

TEST(FlowHash, WhatIsNotIpOrIsCutShortHasNone) {
  auto arp = udp_frame(5000);
  put16(arp, 12, 0x0806);
  EXPECT_FALSE(frame_flow_hash(arp).has_value());
  const auto f = udp_frame(5000);
  for (std::size_t len : {0u, 13u, 14u, 33u})
    EXPECT_FALSE(frame_flow_hash(std::span(f).first(len)).has_value()) << len;
  auto bad_ihl = f;
  bad_ihl[14] = std::byte{0x44};  // IHL 4 words: shorter than an IPv4 header
  EXPECT_FALSE(frame_flow_hash(bad_ihl).has_value());
  // Cut right after the addresses: the hash is the addresses' (the ports cannot be read).
  EXPECT_TRUE(frame_flow_hash(std::span(f).first(34)).has_value());
}

TEST(FlowHash, SpreadsFlowsOverQueues) {
  std::array<int, 4> per_queue{};
  for (uint16_t port = 1024; port < 1024 + 4096; ++port) {
    const auto h = frame_flow_hash(udp_frame(port));
    ASSERT_TRUE(h.has_value());
    ++per_queue[pick_tx_queue({.num_queues = 4, .flow_hash = *h})];
  }
  for (int n : per_queue) EXPECT_GT(n, 4096 / 4 * 8 / 10) << "a queue got too few flows";
}

TEST(PickTxQueue, ExplicitThenXpsThenHash) {
  const std::array<uint64_t, 1> only_two = {1u << 2};
  const std::array<uint64_t, 1> some = {(1u << 1) | (1u << 3) | (1u << 5)};
  const std::array<uint64_t, 1> gone = {1u << 9};
  const uint32_t hash = 0x9000'0000;
  EXPECT_EQ(pick_tx_queue({.num_queues = 8, .explicit_queue = 6, .xps_mask = only_two,
                           .flow_hash = hash}), 6u);
  // An explicit queue the device does not have is ignored: XPS decides.
  EXPECT_EQ(pick_tx_queue({.num_queues = 8, .explicit_queue = 8, .xps_mask = only_two,
                           .flow_hash = hash}), 2u);
  // Several queues in the CPU's map: the hash picks one of them, always the same for one flow.
  const uint32_t q = pick_tx_queue({.num_queues = 8, .xps_mask = some, .flow_hash = hash});
  const std::array<uint32_t, 3> listed = {1, 3, 5};
  EXPECT_EQ(q, listed[scale_hash(hash, 3)]);
  std::set<uint32_t> used;
  for (uint32_t h = 0; h < 64; ++h)
    used.insert(pick_tx_queue({.num_queues = 8, .xps_mask = some, .flow_hash = h << 26}));
  EXPECT_EQ(used, (std::set<uint32_t>{1, 3, 5}));
  // A map naming a queue the device does not have, or no map: the hash over all queues.
  EXPECT_EQ(pick_tx_queue({.num_queues = 8, .xps_mask = gone, .flow_hash = hash}),
            scale_hash(hash, 8));
  EXPECT_EQ(pick_tx_queue({.num_queues = 8, .flow_hash = hash}), 4u);  // 0x9/0x10 of 8 queues
  EXPECT_EQ(pick_tx_queue({.num_queues = 1, .flow_hash = hash}), 0u);
}

TEST(PickTxQueue, AQueueBeyondTheFirstWordOfTheMap) {
  const std::array<uint64_t, 2> high = {0, 1u << 6};  // queue 70 only
  EXPECT_EQ(pick_tx_queue({.num_queues = 100, .xps_mask = high, .flow_hash = 12345}), 70u);
  // The device has 70 queues: queue 70 is not one of them, the hash decides.
  EXPECT_EQ(pick_tx_queue({.num_queues = 70, .xps_mask = high, .flow_hash = 0x8000'0000}), 35u);
}

TEST(PickTxQueue, TheTrafficClassBoundsXpsAndTheHash) {
  // Class queues [4, 8): the hash spreads over those four only.
  std::set<uint32_t> used;
  for (uint32_t h = 0; h < 64; ++h)
    used.insert(pick_tx_queue({.num_queues = 8, .flow_hash = h << 26, .class_offset = 4,
                               .class_count = 4}));
  EXPECT_EQ(used, (std::set<uint32_t>{4, 5, 6, 7}));
  // XPS names queues 1 and 6: only 6 is in the class.
  const std::array<uint64_t, 1> map = {(1u << 1) | (1u << 6)};
  EXPECT_EQ(pick_tx_queue({.num_queues = 8, .xps_mask = map, .flow_hash = 7, .class_offset = 4,
                           .class_count = 4}), 6u);
  // XPS names none of the class's queues: the hash over the class.
  const std::array<uint64_t, 1> other = {1u << 1};
  EXPECT_EQ(pick_tx_queue({.num_queues = 8, .xps_mask = other, .flow_hash = 0x8000'0000,
                           .class_offset = 4, .class_count = 4}), 6u);
  // A class reaching past the device is clipped to it.
  EXPECT_EQ(pick_tx_queue({.num_queues = 6, .flow_hash = 0xffff'ffff, .class_offset = 4,
                           .class_count = 4}), 5u);
}
