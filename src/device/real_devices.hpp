// SPDX-License-Identifier: MIT
// Devices whose packets leave the process: the configurations make_device() parses out of a
// --device spec, and one factory per kind (each defined in that kind's own file).
//
//   afpacket:IFNAME[,ring=N,bypass=0|1,prio=P,kick=inline|thread]
//                                           AF_PACKET, PACKET_TX_RING (TPACKET_V2)
//   udp:HOST:PORT[,batch=N]                 a connected UDP socket, one sendmmsg per doorbell
//   tun:IFNAME                              a TUN device (IP packets, no Ethernet header)
//   pcap:FILE                               frames appended to a nanosecond pcap file
//   afxdp:IFNAME[:QUEUE][,umem=N]           an AF_XDP socket, TX only; a zero-copy pool of N frames
//
// Each factory opens one TX queue's context. A device spec with `queues=N` (make_net_device(),
// registry.cpp) calls it once per queue: afpacket, udp: one socket (and TX ring) per queue;
// tun: one IFF_MULTI_QUEUE descriptor per queue; afxdp: one XSK (and UMEM) per queue id
// QUEUE .. QUEUE+N-1. pcap has one queue only.
//
// Every factory throws DeviceError (one line naming the spec and the cause: no such interface,
// permission, a socket option the kernel refuses) when the device cannot be opened.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "txpath/device.hpp"

namespace txpath {

struct AfPacketConfig {
  static constexpr std::string_view kKind = "afpacket";
  std::string ifname;
  uint32_t ring = 1024;   // TX ring frames, a power of two in [8, 65536]
  bool bypass = true;     // PACKET_QDISC_BYPASS: straight to the driver, past the kernel's qdisc
  // SO_PRIORITY of the socket (0..15), or -1 to leave the kernel's default (0). With queues=N
  // and prio=P, queue i's socket sends at priority P + i: on an interface whose mqprio classes
  // give each priority one TX queue, txpath queue i lands on kernel queue i (docs/background.md,
  // "Which kernel TX queue an AF_PACKET socket uses").
  int32_t priority = -1;
  // kick=thread: the doorbell wakes a kicker thread of the queue's own that makes the send()
  // kick, as a NIC's doorbell starts its DMA engine and returns; kick=inline (default): the
  // thread that rings the doorbell makes the kick and pays the kernel's path itself.
  bool kick_thread = false;
};
std::unique_ptr<Device> make_afpacket_device(const AfPacketConfig& config);

struct UdpConfig {
  static constexpr std::string_view kKind = "udp";
  std::string host;       // IPv4 dotted quad or IPv6 literal (brackets stripped)
  uint16_t port = 0;
  uint32_t batch = 64;    // messages per sendmmsg at most, in [1, 1024]
};
std::unique_ptr<Device> make_udp_device(const UdpConfig& config);

struct TunConfig {
  std::string ifname;
  // IFF_MULTI_QUEUE: this descriptor is one queue of a multi-queue tun (tun:IFNAME,queues=N
  // opens N of them). false: the single-queue open, as a plain tun:IFNAME.
  bool multi_queue = false;
};
std::unique_ptr<Device> make_tun_device(const TunConfig& config);

struct PcapConfig {
  std::string path;
};
std::unique_ptr<Device> make_pcap_device(const PcapConfig& config);

struct AfXdpConfig {
  static constexpr std::string_view kKind = "afxdp";
  std::string ifname;
  uint32_t queue = 0;
  // 2 KiB frames of the zero-copy pool in the UMEM (umem=N; 0: none, every frame is copied).
  uint32_t umem = 8192;
};
std::unique_ptr<Device> make_afxdp_device(const AfXdpConfig& config);

}  // namespace txpath
