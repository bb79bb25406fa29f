// SPDX-License-Identifier: MIT
// A --device spec's TX queues and the XPS maps of a multi-queue device (bench/bench_internal.hpp),
// and --xps itself (parse_xps(), xps_text(): bench.hpp).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "base/topology.hpp"
#include "bench/bench_internal.hpp"
#include "bench/measure.hpp"
#include "core/text.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/netdev.hpp"
#include "txpath/real_device.hpp"
#include "txpath/traffic_classes.hpp"

namespace txpath::bench_detail {

bool names_queues(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view opts = spec.substr(colon + 1);
  while (true) {
    const std::size_t comma = opts.find(',');
    if (opts.substr(0, comma).starts_with("queues=")) return true;
    if (comma == std::string_view::npos) return false;
    opts = opts.substr(comma + 1);
  }
}

std::string kinds_with_queues() {
  std::string list;
  for (const DeviceKind& k : device_kinds())
    if (k.takes_queues) list += (list.empty() ? "" : ", ") + std::string(k.name);
  return list;
}

bool kind_takes_queues(std::string_view spec) {
  const DeviceKind* kind = find_device_kind(spec);
  return kind != nullptr && kind->takes_queues;  // an unknown kind: make_device() says so
}

std::string spec_with_queues(const std::string& spec, uint32_t queues) {
  if (queues == 1 || names_queues(spec)) return spec;
  return spec + (spec.find(':') == std::string::npos ? ":" : ",") + "queues=" + std::to_string(queues);
}

namespace {

// The CPUs senders are pinned to, in the order cpu_for_sender() first reaches them.
std::vector<unsigned> sender_cpu_order(int nodes_in_use) {
  const auto& nodes = topology().cores_by_node;
  std::size_t largest = 0;
  for (const auto& node : nodes) largest = std::max(largest, node.size());
  std::vector<unsigned> order;
  for (std::size_t t = 0; t < nodes.size() * largest; ++t) {
    const int cpu = cpu_for_sender(static_cast<int>(t), nodes_in_use);
    if (cpu >= 0 && std::find(order.begin(), order.end(), static_cast<unsigned>(cpu)) == order.end())
      order.push_back(static_cast<unsigned>(cpu));
  }
  return order;
}

}  // namespace

void apply_xps(NetDevice& device, const BenchConfig& cfg) {
  const uint32_t n = device.num_tx_queues();
  device.clear_xps();
  if (n == 1 || cfg.xps.mode == XpsPolicy::Mode::off) return;
  std::vector<std::vector<unsigned>> cpus_of(n);  // queue -> the CPUs that send on it
  // On an AF_PACKET device whose interface has at least as many TX queues, the map follows the
  // kernel's own CPU -> queue choice for bypass kicks, so txpath queue q is kernel queue q.
  const std::string ifname = link_interface(device.tx_queue(0));
  if (cfg.xps.mode == XpsPolicy::Mode::automatic && device.kind() == "afpacket" &&
      kernel_tx_queue_cpus(ifname).size() >= n && follow_kernel_tx_queues(device))
    return;
  if (cfg.xps.mode == XpsPolicy::Mode::automatic) {
    const std::vector<unsigned> order = sender_cpu_order(cfg.nodes);
    const auto c = static_cast<uint32_t>(order.size());
    for (uint32_t i = 0; i < c; ++i) {
      if (order[i] >= device.cpu_count()) continue;  // hwloc and sysconf disagree: no map
      for (uint32_t q = i % n; q < n; q += c) cpus_of[q].push_back(order[i]);  // q % c == i % n
    }
  } else {
    for (const auto& [cpu, queues] : cfg.xps.cpus) {
      for (const uint32_t q : queues) {
        if (q >= n)
          throw ConfigError("--xps: CPU " + std::to_string(cpu) + " names queue " + std::to_string(q) +
                            ", but with --queues " + std::to_string(n) + " the device has queues 0.." +
                            std::to_string(n - 1));
        cpus_of[q].push_back(cpu);
      }
    }
  }
  for (uint32_t q = 0; q < n; ++q) device.set_xps_cpus(q, cpus_of[q]);
}

void apply_tc_xps(NetDevice& device, const std::vector<std::vector<unsigned>>& xps) {
  const bool any = std::any_of(xps.begin(), xps.end(), [](const auto& cpus) { return !cpus.empty(); });
  if (!any) return;
  device.clear_xps();
  for (uint32_t q = 0; q < xps.size() && q < device.num_tx_queues(); ++q) device.set_xps_cpus(q, xps[q]);
}

}  // namespace txpath::bench_detail

namespace txpath {

XpsPolicy parse_xps(std::string_view text) {
  XpsPolicy xps;
  if (text == "auto") return xps;
  if (text == "off") {
    xps.mode = XpsPolicy::Mode::off;
    return xps;
  }
  xps.mode = XpsPolicy::Mode::map;
  const auto bad = [&](std::string_view why) {
    return ConfigError("--xps: " + txpath::quoted(text) + " " + std::string(why) +
                       " (auto, off, or CPU:QUEUE[+QUEUE...],... e.g. 0:0,1:1+2)");
  };
  const auto number = [&](std::string_view digits, uint32_t limit) {
    uint32_t v = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || v >= limit)
      throw bad("has " + txpath::quoted(digits) + ", not a number below " + std::to_string(limit));
    return v;
  };
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) throw bad("has " + txpath::quoted(item) + ", not CPU:QUEUE");
    const unsigned cpu = number(item.substr(0, colon), 4096);
    for (const auto& [seen, queues] : xps.cpus)
      if (seen == cpu) throw bad("names CPU " + std::to_string(cpu) + " twice");
    std::vector<uint32_t> queues;
    std::string_view rest = item.substr(colon + 1);
    while (true) {
      const std::size_t plus = rest.find('+');
      const uint32_t q = number(rest.substr(0, plus), kMaxTxQueues);
      if (std::find(queues.begin(), queues.end(), q) != queues.end())
        throw bad("names queue " + std::to_string(q) + " twice for CPU " + std::to_string(cpu));
      queues.push_back(q);
      if (plus == std::string_view::npos) break;
      rest = rest.substr(plus + 1);
    }
    xps.cpus.emplace_back(cpu, std::move(queues));
    if (comma == std::string_view::npos) return xps;
    start = comma + 1;
  }
}

std::string xps_text(const XpsPolicy& xps) {
  if (xps.mode == XpsPolicy::Mode::automatic) return "auto";
  if (xps.mode == XpsPolicy::Mode::off) return "off";
  std::string out;  // appended piecewise: GCC 12 warns (-Wrestrict) on "," + ...
  for (const auto& [cpu, queues] : xps.cpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    for (std::size_t i = 0; i < queues.size(); ++i) {
      out += i ? '+' : ':';
      out += std::to_string(queues[i]);
    }
  }
  return out;
}

}  // namespace txpath
