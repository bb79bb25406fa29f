// SPDX-License-Identifier: MIT
#include "base/topology.hpp"

#include <hwloc.h>
#include <sched.h>

#include <cctype>
#include <thread>

namespace txpath {

namespace {

Topology detect() {
  Topology t;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return t;
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return t;
  }
  const int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  const int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  const int nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  t.cores = cores > 0 ? cores : (pus > 0 ? pus : 1);
  t.pus = pus > 0 ? pus : t.cores;
  t.numa_nodes = nodes > 0 ? nodes : 1;
  t.cores_by_node.assign(static_cast<std::size_t>(t.numa_nodes), {});
  for (int i = 0; i < cores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, core->cpuset, HWLOC_OBJ_PU, 0);
    if (!pu) continue;
    std::size_t node = 0;
    for (int n = 0; n < nodes; ++n) {
      hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
      if (numa && hwloc_bitmap_isset(numa->cpuset, pu->os_index)) {
        node = static_cast<std::size_t>(n);
        break;
      }
    }
    t.cores_by_node[node].push_back(static_cast<int>(pu->os_index));
  }
  for (int n = 0; n < nodes; ++n) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
    if (!numa) continue;
    unsigned cpu;
    hwloc_bitmap_foreach_begin(cpu, numa->cpuset) {
      if (cpu >= t.node_of_cpu.size()) t.node_of_cpu.resize(cpu + 1, 0);
      t.node_of_cpu[cpu] = n;
    }
    hwloc_bitmap_foreach_end();
  }
  if (hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0)) {
    if (const char* model = hwloc_obj_get_info_by_name(pkg, "CPUModel")) t.cpu_model = model;
  }
  hwloc_topology_destroy(topo);
  return t;
}

}  // namespace

const Topology& topology() {
  static const Topology t = [] {
    Topology d = detect();
    if (d.cores_by_node.empty() || d.cores_by_node[0].empty()) {
      const unsigned n = std::thread::hardware_concurrency();
      d.cores = d.pus = n > 0 ? static_cast<int>(n) : 1;
      d.numa_nodes = 1;
      d.cores_by_node.assign(1, {});
      for (int i = 0; i < d.cores; ++i) d.cores_by_node[0].push_back(i);
    }
    while (!d.cpu_model.empty() && std::isspace(static_cast<unsigned char>(d.cpu_model.back())))
      d.cpu_model.pop_back();
    if (d.cpu_model.empty()) d.cpu_model = "unknown";
    return d;
  }();
  return t;
}

int current_numa_node() noexcept {
  const std::vector<int>& table = topology().node_of_cpu;
  const int cpu = sched_getcpu();
  if (cpu < 0 || static_cast<std::size_t>(cpu) >= table.size()) return 0;
  return table[static_cast<std::size_t>(cpu)];
}

}  // namespace txpath
