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
//
// Ownership: the testbed touches only what it made. It records each testbed (root-only state
// file /run/txpath/testbed/HOST_IF, directory 0700) and marks both interfaces with the alias
// "txpath-testbed ID"; the namespace is recognised by its recorded cookie. A name already in use
// by anything else is refused before any change; down removes only recorded, still-marked
// objects and never a namespace that holds interfaces it did not make. Needs root.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  std::string id;  // the marker id: both interfaces carry the alias "txpath-testbed <id>"
};

// What testbed_down() removed (or testbed_up() replaced) of a testbed txpath made.
struct TestbedRemoval {
  bool recorded = false;       // a state file recorded a testbed on this host interface
  TestbedConfig config;        // its names as recorded (the request's, if none was recorded)
  bool removed_pair = false;   // the veth pair it made was there and is gone
  bool removed_netns = false;  // the namespace it made was there and is gone
  std::vector<std::string> kept;  // why something named stays, one line each (user text escaped)
  explicit operator bool() const { return removed_pair || removed_netns; }
};

// Creates the pair, the namespace, addresses, qdisc and neighbour entries. A testbed txpath made
// on the same host interface is replaced (what was removed goes to *replaced, if given). Throws
// ConfigError for a bad name or address; DeviceError (one line) when not root, when a name is in
// use by something txpath testbed did not make ("... exists and was not made by txpath testbed:
// choose another name with --host-if" / "--netns"), or when the kernel refuses.
TestbedInfo testbed_up(const TestbedConfig& config, TestbedRemoval* replaced = nullptr);

// Removes the testbed recorded on config.host_if: the pair and the namespace it made, and the
// record; nothing else (see TestbedRemoval::kept). Nothing recorded: removes nothing, says why
// in kept if the names are in use. Throws ConfigError / DeviceError as testbed_up().
TestbedRemoval testbed_down(const TestbedConfig& config);

// The testbed whose host end is `host_if`, if one is up (read from its state file and checked
// against the live interfaces); nullopt otherwise.
std::optional<TestbedInfo> find_testbed(std::string_view host_if);

}  // namespace txpath
