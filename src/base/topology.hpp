// SPDX-License-Identifier: MIT
// The machine as hwloc sees it: cores, NUMA nodes, CPU model, and a core list per node.
#pragma once

#include <string>
#include <vector>

namespace txpath {

struct Topology {
  int cores = 1;         // physical cores
  int pus = 1;           // hardware threads (processing units)
  int numa_nodes = 1;
  std::string cpu_model;
  // OS CPU ids, one per core (the first PU of each core), grouped by NUMA node.
  std::vector<std::vector<int>> cores_by_node;
  // NUMA node index of every OS CPU id (all PUs); empty when unknown (then everything is node 0).
  std::vector<int> node_of_cpu;
};

// Detects the topology with hwloc; falls back to std::thread::hardware_concurrency().
const Topology& topology();

// The NUMA node index of the CPU the caller runs on now (sched_getcpu() + node_of_cpu): a hint,
// the thread may migrate right after. 0 when unknown.
int current_numa_node() noexcept;

}  // namespace txpath
