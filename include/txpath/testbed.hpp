// SPDX-License-Identifier: MIT
// The veth testbed: a veth pair whose peer end lives in its own network namespace, so that
// frames txpath transmits on the host end really cross a link and can be counted on the other.
//
//   host netns                       netns `txpath-peer`
//   txp0 10.77.0.1/24  <== veth ==>  txp1 10.77.0.2/24     (defaults; all configurable)
//
// testbed_up() also: sets the root qdisc of the host end (pfifo_fast by default; a fresh veth has
// noqueue, which would bypass the kernel's qdisc in the `kernel` bench row), adds static
// neighbour entries both ways (no ARP traffic during a measurement), turns IPv6 off on both ends
// (no router solicitations), and records the configuration in a state file under
// /run/txpath/testbed/ so that `txpath bench` can find the peer of a host interface.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace txpath {

struct TestbedConfig {
  std::string host_if = "txp0";
  std::string peer_if = "txp1";
  std::string netns = "txpath-peer";
  std::string host_addr = "10.77.0.1/24";  // IPv4 address/prefix of the host end
  std::string peer_addr = "10.77.0.2/24";  // IPv4 address/prefix of the peer end
  std::string qdisc = "pfifo_fast";        // root qdisc of the host end; "noqueue": veth default
  uint32_t mtu = 1500;
};

struct TestbedInfo {
  TestbedConfig config;
  std::array<uint8_t, 6> host_mac{};
  std::array<uint8_t, 6> peer_mac{};
  uint32_t host_ip = 0;  // host byte order
  uint32_t peer_ip = 0;
};

// Creates the pair, the namespace, addresses, qdisc and neighbour entries; replaces a testbed of
// the same names that is already up. Throws ConfigError for a bad name or address, DeviceError
// (one line) when the kernel refuses (not root, a name taken by something else).
TestbedInfo testbed_up(const TestbedConfig& config);

// Removes the pair and the namespace (and the state file). Returns false if nothing was there.
bool testbed_down(const TestbedConfig& config);

// The testbed whose host end is `host_if`, if one is up (read from its state file and checked
// against the live interfaces); nullopt otherwise.
std::optional<TestbedInfo> find_testbed(std::string_view host_if);

}  // namespace txpath
