// SPDX-License-Identifier: MIT
// txpath/real_device.hpp: the queries answered from the device classes themselves.
#include "txpath/real_device.hpp"

#include <cstring>

#include "device/afpacket_device.hpp"
#include "device/afxdp_device.hpp"
#include "device/pcap_device.hpp"
#include "device/udp_device.hpp"

namespace txpath {

std::string link_interface(const Device& device) {
  if (const auto* af = dynamic_cast<const AfPacketDevice*>(&device)) return af->config().ifname;
  if (const auto* xdp = dynamic_cast<const AfXdpDevice*>(&device)) return xdp->config().ifname;
  return {};
}

std::optional<SocketPeer> socket_peer(const Device& device) {
  const auto* udp = dynamic_cast<const UdpDevice*>(&device);
  if (!udp) return std::nullopt;
  SocketPeer peer;
  std::memcpy(&peer.addr, &udp->remote(), udp->remote_len());
  peer.len = udp->remote_len();
  return peer;
}

void finish_output(Device& device) {
  if (auto* pcap = dynamic_cast<PcapDevice*>(&device)) pcap->finish();
}

void abandon_output(Device& device) noexcept {
  if (auto* pcap = dynamic_cast<PcapDevice*>(&device)) pcap->abandon();
}

}  // namespace txpath
