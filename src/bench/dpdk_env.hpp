// SPDX-License-Identifier: MIT
// The DPDK peers (docs/bench.md, "The DPDK peers"): which bench devices they can run on and as
// which DPDK virtual device, whether this build and machine have DPDK, and the two rows:
// peer:dpdk (in this process, on DPDK's own rte_ring, mempool and ethdev libraries: row_dpdk.cpp)
// and peer:testpmd (DPDK's own dpdk-testpmd in txonly mode, a process of its own:
// row_testpmd.cpp). Private to src/bench.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bench/bench_internal.hpp"

namespace txpath::bench_detail {

// A bench device as DPDK's driver for the same thing: `null` as net_null, afpacket:IF as
// net_af_packet on IF (qpairs), afxdp:IF as net_af_xdp on IF (queue_count). `instance` makes
// the name unique in the process (DPDK names each probed device once).
struct DpdkDevice {
  std::string name;     // e.g. "net_af_packet3": the ethdev's name
  std::string devargs;  // e.g. "net_af_packet3,iface=txp0,qpairs=1"
  std::string iface;    // the kernel interface (empty for net_null)
};
std::optional<DpdkDevice> dpdk_device(const std::string& device_spec, unsigned instance, uint32_t queues);

// Why peer:dpdk cannot run on `device_spec` here (one phrase: "this build has no DPDK", "DPDK's
// EAL did not start: ...", "DPDK has no driver for nic"), or nullopt when it can. Starts the EAL
// in this process the first time it is asked and DPDK is there (once per process).
std::optional<std::string> dpdk_unavailable(const std::string& device_spec);

// Why peer:testpmd cannot run on `device_spec` here ("no dpdk-testpmd on PATH", ...), or nullopt.
std::optional<std::string> testpmd_unavailable(const std::string& device_spec);

// One run of each peer (bench_internal.hpp's Run, measured as the other rows are).
Run run_dpdk_once(const BenchConfig& cfg, int threads, uint32_t queues, Delivery& delivery);
Run run_testpmd_once(const BenchConfig& cfg, int threads, uint32_t queues, Delivery& delivery);

}  // namespace txpath::bench_detail
