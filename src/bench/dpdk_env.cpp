// SPDX-License-Identifier: MIT
// The DPDK peers' devices and whether dpdk-testpmd is there (bench/dpdk_env.hpp); the EAL and
// peer:dpdk are row_dpdk.cpp's, testpmd's run row_testpmd.cpp's.
#include "bench/dpdk_env.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace txpath::bench_detail {

namespace {

// "null", "null:queues=N" only: the null device's other options (costs, refusals) have no DPDK
// twin.
bool plain_null(std::string_view spec) {
  return spec == "null" || (spec.starts_with("null:queues=") && spec.find(',') == std::string_view::npos);
}

}  // namespace

std::optional<DpdkDevice> dpdk_device(const std::string& device_spec, unsigned instance, uint32_t queues) {
  const std::string n = std::to_string(instance), q = std::to_string(queues);
  if (plain_null(device_spec)) return DpdkDevice{"net_null" + n, "net_null" + n, ""};
  const std::size_t colon = device_spec.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string kind = device_spec.substr(0, colon);
  const std::string iface = device_spec.substr(colon + 1, device_spec.find(',', colon) - colon - 1);
  if (iface.empty()) return std::nullopt;
  if (kind == "afpacket")
    return DpdkDevice{"net_af_packet" + n, "net_af_packet" + n + ",iface=" + iface + ",qpairs=" + q, iface};
  if (kind == "afxdp")
    return DpdkDevice{"net_af_xdp" + n, "net_af_xdp" + n + ",iface=" + iface + ",start_queue=0,queue_count=" + q,
                      iface};
  return std::nullopt;
}

std::optional<std::string> testpmd_unavailable(const std::string& device_spec) {
  if (!dpdk_device(device_spec, 0, 1))
    return "DPDK has no driver for " + device_spec + " (peer:testpmd runs on null, afpacket:IF and afxdp:IF)";
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t end = dirs.find(':');
    const std::string dir(dirs.substr(0, end));
    if (!dir.empty() && ::access((dir + "/dpdk-testpmd").c_str(), X_OK) == 0) return std::nullopt;
    dirs = end == std::string_view::npos ? std::string_view() : dirs.substr(end + 1);
  }
  return std::string("no dpdk-testpmd on PATH (Debian: apt-get install dpdk)");
}

}  // namespace txpath::bench_detail
