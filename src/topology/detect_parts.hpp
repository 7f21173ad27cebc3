// The probes behind detect(), one per source; each fills what it sees.
#pragma once

#include "topology/topology.hpp"

namespace chorus::topo::detail {

// Packages, NUMA nodes, cores, PCI devices, GPUs and the NICs hwloc sees (no state or
// speed). xmlPath empty: this machine. Throws Error(InvalidArgument) if it cannot load.
void probeHwloc(Topology& t, const std::string& xmlPath);

// NICs under <root>/class/net and <root>/class/infiniband: state, speed, NUMA node, PCI
// address, RDMA device. Merges into t.nics by name.
void probeSysfs(Topology& t, const std::string& root);

// GPUs through CUDA/NVML: not built here (no CUDA on these machines); the place for it.
void probeGpus(Topology& t);

}  // namespace chorus::topo::detail
