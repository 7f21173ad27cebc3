// detect(): hwloc, then sysfs, then GPUs, then the topology file on top.
#include "settings/settings.hpp"
#include "topology/detect_parts.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>

namespace chorus::topo {

Topology detect(const DetectOptions& options) {
  Topology t;
  detail::probeHwloc(t, options.hwlocXml);
  detail::probeSysfs(t, options.sysfsRoot);
  detail::probeGpus(t);
  // sysfs says where a NIC sits when hwloc could not (a NIC unknown to the XML, say).
  for (Nic& n : t.nics) {
    if (n.numaNode >= 0 || n.pciBusId.empty()) continue;
    for (const PciDevice& d : t.pciDevices)
      if (d.busId == n.pciBusId) n.numaNode = d.numaNode;
  }
  if (t.hostname.empty() || options.hwlocXml.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) t.hostname = host;
  }
  std::string file = options.topoFile ? *options.topoFile : settings::text("CHORUS_TOPO_FILE");
  if (!file.empty()) {
    applyTopologyFile(t, loadTopologyFile(file));
    t.sources.push_back("file " + file);
  }
  return t;
}

int currentNumaNode() {
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) return -1;
  int node = -1;
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
  hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
  if (hwloc_topology_load(topo) == 0 && hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_PROCESS) == 0) {
    hwloc_cpuset_to_nodeset(topo, cpus, nodes);
    if (hwloc_bitmap_weight(nodes) == 1) node = hwloc_bitmap_first(nodes);
  }
  hwloc_bitmap_free(nodes);
  hwloc_bitmap_free(cpus);
  hwloc_topology_destroy(topo);
  return node;
}

}  // namespace chorus::topo
