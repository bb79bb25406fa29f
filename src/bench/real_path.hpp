// SPDX-License-Identifier: MIT
// What the bench needs for real devices: the kernel row's route and senders, and the sink that
// checks arrivals. Private to src/bench, which sees devices through public headers only
// (txpath/device.hpp, txpath/real_device.hpp).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "bench/sender_pools.hpp"
#include "device/netif.hpp"
#include "net/sink.hpp"
#include "txpath/device.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"

namespace txpath::bench_detail {

// An IPv4 address (host order) as "10.77.0.2".
std::string ipv4_text(uint32_t host_order);

// Where the kernel row sends: the device's destination, through the device's interface.
struct KernelRoute {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string bind_device;  // SO_BINDTODEVICE, so the traffic crosses the same link
  std::string text;         // "10.77.0.2:9000 via txp0"
};

// The route for a real device (afpacket, udp); nullopt for a model device (null, nic, ...).
// Throws ConfigError when the device is real but has no destination (afpacket without a
// testbed on its interface).
std::optional<KernelRoute> kernel_route(const Device& device, const FrameSpec& spec);

// One kernel-row sender: its own connected, blocking UDP socket (as netperf UDP_STREAM), with
// IP_RECVERR so that a qdisc drop is reported (ENOBUFS) and counted as dropped.
class KernelSender {
 public:
  explicit KernelSender(const KernelRoute& route);  // throws DeviceError
  enum class Result : uint8_t { sent, dropped };
  Result send(std::span<const std::byte> payload) noexcept;
  int fd() const noexcept { return fd_.get(); }  // for a caller's further socket options

 private:
  netif::Fd fd_;  // the socket, open for the sender's lifetime
};

// When `device` has a zero-copy pool (afxdp: its UMEM's, txpath/real_device.hpp), every sender
// takes its packets from it (its frames are then the senders' one shared budget); else `pools`
// stay the senders' own.
void use_zero_copy_pool(const Device& device, SenderPools& pools);

// The interface of `device` when it is an ifb testbed (a null NIC, net/testbed.hpp), whose
// own counter then checks delivery; empty for every other device.
std::string null_nic_of(const Device& device);

// The sink for `spec_text` ("auto", "none", "IF", "IF@NETNS"); nullopt for none.
std::optional<SinkConfig> resolve_sink(const std::string& spec_text, const Device& device,
                                       const FrameSpec& frames);

// A device made only to check a spec or read its addresses: whatever file it would write
// (pcap:FILE) is dropped on destruction, so checking never creates or replaces FILE.
struct AbandonOutput {
  void operator()(Device* device) const noexcept;
};
using ProbeDevice = std::unique_ptr<Device, AbandonOutput>;
ProbeDevice make_probe_device(const std::string& spec);

// Completes a device's output once its run is over and nothing transmits any more (pcap:FILE is
// renamed into place). Empty, or the failure: one line naming the file.
std::string finish_output(Device& device);

}  // namespace txpath::bench_detail
