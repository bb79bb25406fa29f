// SPDX-License-Identifier: MIT
// The testbeds: links txpath can really transmit on, made and removed by `txpath testbed`.
//
// kind veth (the default): a veth pair whose peer end lives in its own network namespace, so
// that frames txpath transmits on the host end really cross a link and can be counted on the
// other.
//
//   host netns                       netns `txpath-peer`
//   txp0 10.77.0.1/24  <== veth ==>  txp1 10.77.0.2/24     (defaults; all configurable)
//
// kind ifb: one ifb device, a "null NIC" inside the kernel: a device with real TX queues and a
// real qdisc whose transmit function frees each frame and counts it (rx_dropped: see
// null_nic_frames). No peer, no namespace, no sink; the kernel row sends UDP to the target
// address, a second address in the device's subnet that no interface has.
//
//   host netns
//   txpifb0 10.88.0.1/24   -> target 10.88.0.2 (static neighbour)   (defaults; configurable)
//
// With queues = N > 1 each end (veth: both; ifb: the one) has N TX and N RX queues, and the host
// end's root qdisc is mq with `qdisc` on each of its N queues, as the kernel gives a
// multi-queue NIC (a veth's own default is noqueue, one queue or many).
//
// testbed_up() also: sets the root qdisc of the host end (pfifo_fast by default; a fresh veth has
// noqueue, which would bypass the kernel's qdisc in the `kernel` bench row), adds static
// neighbour entries (veth: both ways; ifb: the target, at the device's own MAC; no ARP traffic
// during a measurement), turns IPv6 off on every end (no router solicitations), gives an ifb
// txqueuelen 1000 (as a veth has; the driver's own 32 would size pfifo_fast at 32 packets), and
// records the configuration in a state file under /run/txpath/testbed/ so that `txpath bench`
// can find the peer (or the target) of a host interface.
//
// Ownership: the testbed touches only what it made. It records each testbed (root-only state
// file /run/txpath/testbed/HOST_IF, directory 0700) and marks its interfaces with the alias
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

#include "txpath/frame.hpp"  // FrameSpec

namespace txpath {

enum class TestbedKind { veth, ifb };

// "veth" / "ifb".
const char* testbed_kind_name(TestbedKind kind) noexcept;

// The most TX (and RX) queues a testbed interface gets.
inline constexpr uint32_t kMaxTestbedQueues = 256;

struct TestbedConfig {
  TestbedKind kind = TestbedKind::veth;
  std::string host_if = "txp0";
  std::string peer_if = "txp1";        // veth only (an ifb testbed has none: ignored, left empty)
  std::string netns = "txpath-peer";   // veth only, likewise
  std::string host_addr = "10.77.0.1/24";  // IPv4 address/prefix of the host end
  // veth: the peer end's IPv4 address/prefix. ifb: the target, which must lie in host_addr's
  // subnet (not its network or broadcast address): the address the kernel row sends to.
  std::string peer_addr = "10.77.0.2/24";
  // Root qdisc of the host end (tc syntax), or with queues > 1 the qdisc under mq on each queue
  // (then without a handle). "noqueue": none (a veth's default; an ifb gets it set).
  std::string qdisc = "pfifo_fast";
  uint32_t mtu = 1500;
  uint32_t queues = 1;  // TX and RX queues of each end, 1..kMaxTestbedQueues
};

// The defaults of an ifb testbed: txpifb0, 10.88.0.1/24, target 10.88.0.2/24, no peer or netns.
TestbedConfig ifb_testbed_config();

struct TestbedInfo {
  TestbedConfig config;               // ifb: peer_if and netns empty
  std::array<uint8_t, 6> host_mac{};
  std::array<uint8_t, 6> peer_mac{};  // ifb: the target's (static neighbour), = host_mac
  uint32_t host_ip = 0;  // host byte order
  uint32_t peer_ip = 0;  // ifb: the target
  std::string id;  // the marker id: its interfaces carry the alias "txpath-testbed <id>"
};

// What testbed_down() removed (or testbed_up() replaced) of a testbed txpath made.
struct TestbedRemoval {
  bool recorded = false;       // a state file recorded a testbed on this host interface
  TestbedConfig config;        // its names as recorded (the request's, if none was recorded)
  bool removed_pair = false;   // the veth pair (or the ifb) it made was there and is gone
  bool removed_netns = false;  // the namespace it made was there and is gone
  std::vector<std::string> kept;  // why something named stays, one line each (user text escaped)
  explicit operator bool() const { return removed_pair || removed_netns; }
};

// Creates the pair and the namespace (or the ifb), addresses, qdiscs and neighbour entries. A testbed txpath made
// on the same host interface is replaced (what was removed goes to *replaced, if given). Throws
// ConfigError for a bad name or address; DeviceError (one line) when not root, when a name is in
// use by something txpath testbed did not make ("... exists and was not made by txpath testbed:
// choose another name with --host-if" / "--netns"), or when the kernel refuses.
TestbedInfo testbed_up(const TestbedConfig& config, TestbedRemoval* replaced = nullptr);

// Removes the testbed recorded on config.host_if, of whichever kind the record says: the pair
// and the namespace it made (or the ifb), and the record; nothing else (see
// TestbedRemoval::kept). Nothing recorded: removes nothing, says why in kept if the names are in
// use. Throws ConfigError / DeviceError as testbed_up().
TestbedRemoval testbed_down(const TestbedConfig& config);

// The testbed whose host end is `host_if`, if one is up (read from its state file and checked
// against the live interfaces); nullopt otherwise. Records of older txpath versions read as
// veth with one queue.
std::optional<TestbedInfo> find_testbed(std::string_view host_if);

// Frames sent on the host end `host_if` of a testbed (find_testbed()): the peer's MAC as
// destination, the host's and the peer's IPv4 addresses. Returns false and leaves `spec` as it
// is when no testbed of ours is up on `host_if`.
bool address_to_testbed(FrameSpec& spec, std::string_view host_if);

// --- the ifb testbed as a null NIC: the bench's delivery check -----------------------------------

// The ifb testbed whose device is `ifname`, if one is up; nullopt for anything else (a veth
// testbed's host end included). For a device: find_null_nic(link_interface(device))
// (txpath/real_device.hpp), i.e. `afpacket:IF` and `afxdp:IF` on an ifb testbed.
std::optional<TestbedInfo> find_null_nic(std::string_view ifname);

// The frames the null NIC `ifname` consumed since it was made: its rx_packets counter, which
// the ifb driver raises for every frame handed to its transmit function (rx_dropped too, for
// those tc did not redirect to it, but as a racy device-wide increment that loses counts when
// several TX queues transmit at once) (AF_PACKET with or without PACKET_QDISC_BYPASS, AF_XDP, UDP sockets; frames
// the qdisc dropped never reach it). Read it before and after a run: the difference is what the
// kernel really transmitted (docs/background.md, "ifb: a null NIC"). Throws DeviceError, one
// line, if the counter cannot be read.
uint64_t null_nic_frames(std::string_view ifname);

}  // namespace txpath
