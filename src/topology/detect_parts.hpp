// The probes behind detect(), one per source; each fills what it sees.
#pragma once

#include "topology/topology.hpp"

#include <string>
#include <vector>

namespace chorus::topo::detail {

// Packages, NUMA nodes, cores, PCI devices, GPUs and the NICs hwloc sees (no state or
// speed). xmlPath empty: this machine. Throws Error(InvalidArgument) if it cannot load.
void probeHwloc(Topology& t, const std::string& xmlPath);

// NICs under <root>/class/net and <root>/class/infiniband: state, speed, NUMA node, PCI
// address, RDMA device. Merges into t.nics by name.
void probeSysfs(Topology& t, const std::string& root);

// GPUs through NVML (detect_nvml.cpp), where the NVIDIA driver's libnvidia-ml.so.1 loads:
// names, and NVLinks into t.gpuLinks. Nothing where it does not.
void probeGpus(Topology& t);

// One GPU as NVML describes it: its PCI bus id and, per active NVLink, the bus id of the
// device at the other end (another GPU, or an NVSwitch).
struct NvmlGpu {
  std::string name, busId;
  std::vector<std::string> nvlinkPeers;
};
// NVLink 2 to 4 (V100 to H100) carry 25 GB/s per direction per link (H100 SXM: 18 links,
// 450 GB/s); NVML's link version numbering changed across drivers, so it is not read.
inline constexpr double kNvlinkGBytesPerLink = 25;
// Matches `found` to t.gpus by PCI bus id (names taken from NVML; a GPU hwloc missed is
// added) and adds t.gpuLinks: "nvlink" for GPU pairs linked directly (links x 25 GB/s),
// "nvswitch" between every two GPUs with links to switches (the fewer links x 25 GB/s).
void mergeNvmlGpus(Topology& t, const std::vector<NvmlGpu>& found);
std::vector<NvmlGpu> queryNvml();  // empty without the driver's NVML

}  // namespace chorus::topo::detail
