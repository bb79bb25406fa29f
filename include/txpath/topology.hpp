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
};

// Detects the topology with hwloc; falls back to std::thread::hardware_concurrency().
const Topology& topology();

}  // namespace txpath
