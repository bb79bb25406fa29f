// SPDX-License-Identifier: MIT
// txpath/real_device.hpp: the queries answered from the device classes themselves.
#include "txpath/real_device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/cpu_mask.hpp"
#include "core/text.hpp"
#include "device/afpacket_device.hpp"
#include "device/afxdp_device.hpp"
#include "device/netif.hpp"
#include "device/pcap_device.hpp"
#include "device/udp_device.hpp"

namespace txpath {

std::string link_interface(const Device& device) {
  if (const auto* af = dynamic_cast<const AfPacketDevice*>(&device)) return af->config().ifname;
  if (const auto* xdp = dynamic_cast<const AfXdpDevice*>(&device)) return xdp->config().ifname;
  return {};
}

std::shared_ptr<Pool> zero_copy_pool(const Device& device) {
  if (const auto* xdp = dynamic_cast<const AfXdpDevice*>(&device)) return xdp->pool();
  return nullptr;
}

std::optional<SocketPeer> socket_peer(const Device& device) {
  const auto* udp = dynamic_cast<const UdpDevice*>(&device);
  if (!udp) return std::nullopt;
  SocketPeer peer;
  std::memcpy(&peer.addr, &udp->remote(), udp->remote_len());
  peer.len = udp->remote_len();
  return peer;
}

std::vector<std::vector<unsigned>> kernel_tx_queue_cpus(std::string_view ifname) {
  const std::string name(ifname);
  const std::string spec = "afpacket:" + name;
  netif::lookup(spec, name);  // DeviceError: no such interface, a bad name
  const std::string queues_dir = "/sys/class/net/" + name + "/queues/tx-";
  uint32_t count = 0;
  while (count < kMaxTxQueues && ::access((queues_dir + std::to_string(count)).c_str(), F_OK) == 0)
    ++count;
  if (count == 0) netif::fail(spec, "no TX queues under /sys/class/net/" + escape_user_text(name));
  const auto cpus = static_cast<unsigned>(std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF)));
  // How many XPS maps name each CPU, and the last queue that did.
  std::vector<uint32_t> maps(cpus, 0), queue_of(cpus, 0);
  for (uint32_t q = 0; q < count; ++q) {
    std::ifstream in(queues_dir + std::to_string(q) + "/xps_cpus");
    std::string mask;  // unreadable or missing (a single-queue device): no map
    if (!in || !std::getline(in, mask)) continue;
    for (const unsigned c : parse_cpu_mask(mask).value_or(std::vector<unsigned>{})) {
      if (c >= cpus) continue;
      ++maps[c];
      queue_of[c] = q;
    }
  }
  std::vector<std::vector<unsigned>> by_queue(count);
  for (unsigned c = 0; c < cpus; ++c) {
    if (maps[c] == 0) by_queue[c % count].push_back(c);   // skb_tx_hash on the CPU's number
    else if (maps[c] == 1) by_queue[queue_of[c]].push_back(c);  // the CPU's XPS queue
  }
  return by_queue;
}

bool follow_kernel_tx_queues(NetDevice& device) {
  const auto* af = dynamic_cast<const AfPacketDevice*>(&device.tx_queue(0));
  if (!af) return false;
  const auto by_queue = kernel_tx_queue_cpus(af->config().ifname);
  for (uint32_t q = 0; q < device.num_tx_queues(); ++q) {
    std::vector<unsigned> cpus;  // none for a queue the interface does not have
    if (q < by_queue.size()) cpus = by_queue[q];
    std::erase_if(cpus, [&](unsigned c) { return c >= device.cpu_count(); });
    device.set_xps_cpus(q, cpus);
  }
  return true;
}

void finish_output(Device& device) {
  if (auto* pcap = dynamic_cast<PcapDevice*>(&device)) pcap->finish();
}

void abandon_output(Device& device) noexcept {
  if (auto* pcap = dynamic_cast<PcapDevice*>(&device)) pcap->abandon();
}

}  // namespace txpath
