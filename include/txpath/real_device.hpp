// SPDX-License-Identifier: MIT
// Queries on the devices whose packets leave the process, for code that works beside one (the
// bench's kernel row and its sink, for instance): where the packets go, and how the device's
// output is completed. Every model device (null, nic, fault) answers "nothing" to each.
#pragma once

#include <sys/socket.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/device.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"

namespace txpath {

// The Ethernet interface a link-layer device (afpacket:IFNAME, afxdp:IFNAME) sends on; empty for
// every other device.
std::string link_interface(const Device& device);

// The pool whose packets `device` transmits from their own buffers, with no copy: afxdp's pool
// over its UMEM (`afxdp:IF,umem=N`: N frames of 2 KiB; nullptr with umem=0). nullptr for every
// other device: it copies each frame (AF_PACKET's TX ring cannot avoid that copy,
// docs/background.md). Take the senders' packets from this pool to save the copy; packets of any
// other pool are still accepted and copied. The pool, and the memory it lies in, lives as long
// as the device or any holder of the returned pointer.
std::shared_ptr<Pool> zero_copy_pool(const Device& device);

// The address a socket device (udp:HOST:PORT) is connected to; nullopt for every other device.
struct SocketPeer {
  sockaddr_storage addr{};
  socklen_t len = 0;
};
std::optional<SocketPeer> socket_peer(const Device& device);

// The CPUs whose AF_PACKET kicks with PACKET_QDISC_BYPASS the kernel sends on each TX queue of
// interface `ifname` (docs/background.md, "Which kernel TX queue an AF_PACKET socket uses"):
// element q lists the CPUs c whose XPS map (/sys/class/net/IF/queues/tx-Q/xps_cpus) names queue q
// alone, or, for a CPU no map names, those with c mod (TX queue count) == q. A CPU that several
// maps name is in none (the kernel spreads it over them by flow hash). One element per TX queue
// of the interface. Where the interface has traffic classes (mqprio) or its driver chooses the
// queue itself (ndo_select_queue), the kernel may choose otherwise. Throws DeviceError (one line)
// when the interface does not exist.
std::vector<std::vector<unsigned>> kernel_tx_queue_cpus(std::string_view ifname);

// Makes the XPS map of an afpacket device follow the kernel's choice above: TX queue q (q < the
// interface's TX queue count) gets the CPUs whose kicks the kernel sends on its queue q, the
// other queues none. A sender pinned to CPU c then picks the txpath queue whose frames its own
// kicks put on the same kernel queue, so txpath queue q lands on kernel queue q whenever the
// thread that kicks it is such a sender (the strategies whose senders run the driver loop).
// Returns false, changing nothing, for any device that is not afpacket:IFNAME. Throws as
// kernel_tx_queue_cpus().
bool follow_kernel_tx_queues(NetDevice& device);

// A device that writes a file (pcap:FILE). finish_output() completes the file once nothing
// transmits any more (the capture is renamed into place) and throws FileError, one line naming
// the file, when it cannot. abandon_output() drops it, leaving FILE untouched: for a device made
// only to check a spec. Both do nothing for a device that writes no file.
void finish_output(Device& device);
void abandon_output(Device& device) noexcept;

}  // namespace txpath
