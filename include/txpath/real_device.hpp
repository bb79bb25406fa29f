// SPDX-License-Identifier: MIT
// Queries on the devices whose packets leave the process, for code that works beside one (the
// bench's kernel row and its sink, for instance): where the packets go, and how the device's
// output is completed. Every model device (null, nic, fault) answers "nothing" to each.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>

#include "txpath/device.hpp"

namespace txpath {

// The Ethernet interface a link-layer device (afpacket:IFNAME, afxdp:IFNAME) sends on; empty for
// every other device.
std::string link_interface(const Device& device);

// The address a socket device (udp:HOST:PORT) is connected to; nullopt for every other device.
struct SocketPeer {
  sockaddr_storage addr{};
  socklen_t len = 0;
};
std::optional<SocketPeer> socket_peer(const Device& device);

// A device that writes a file (pcap:FILE). finish_output() completes the file once nothing
// transmits any more (the capture is renamed into place) and throws FileError, one line naming
// the file, when it cannot. abandon_output() drops it, leaving FILE untouched: for a device made
// only to check a spec. Both do nothing for a device that writes no file.
void finish_output(Device& device);
void abandon_output(Device& device) noexcept;

}  // namespace txpath
