// SPDX-License-Identifier: MIT
// device_kinds(): the kinds make_device() (registry.cpp) builds, for help texts and error lists.
#include <array>
#include <span>

#include "txpath/device.hpp"

namespace txpath {

namespace {

constexpr std::array<DeviceKind, 8> kKinds = {{
    {"null", "null[:mtu=N]", "accepts every packet at no cost, completes it at the doorbell"},
    {"nic", "nic[:pkt=NS,doorbell=NS,ring=N,rate=GBIT,clean=N,bql=0|1,irq=NS,mtu=N]",
     "a modelled NIC: descriptor and doorbell costs, a TX ring, completions, BQL"},
    {"fault", "fault[:busy=P,stop=P,stop_ns=NS,seed=N,mtu=N]",
     "answers busy and stops its queue at random (for testing the driver loop)"},
    {"pcap", "pcap:FILE", "frames appended to a nanosecond pcap file"},
    {"tun", "tun:IFNAME", "a TUN interface (IP packets, no Ethernet header)"},
    {"afpacket", "afpacket:IFNAME[,ring=N,bypass=0|1]",
     "AF_PACKET TX ring (PACKET_TX_RING), past the kernel's qdisc unless bypass=0"},
    {"udp", "udp:HOST:PORT[,batch=N]", "a connected UDP socket, one sendmmsg per doorbell"},
    {"afxdp", "afxdp:IFNAME[:QUEUE]", "an AF_XDP socket, TX only"},
}};

}  // namespace

std::span<const DeviceKind> device_kinds() noexcept { return kKinds; }

}  // namespace txpath
