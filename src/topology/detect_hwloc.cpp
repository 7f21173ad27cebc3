// hwloc view of the host: CPUs and memory, PCI devices and the OS devices under them.
#include "errors.hpp"
#include "topology/detect_parts.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <memory>

namespace chorus::topo::detail {
namespace {

using TopologyPtr = std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)>;

TopologyPtr load(const std::string& xmlPath) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throwSystemError("hwloc_topology_init");
  TopologyPtr topo(raw, &hwloc_topology_destroy);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (!xmlPath.empty() && hwloc_topology_set_xml(raw, xmlPath.c_str()) != 0)
    throwInvalid("hwloc: cannot read the XML topology " + xmlPath);
  if (hwloc_topology_load(raw) != 0)
    throwInvalid("hwloc: cannot load the topology " + (xmlPath.empty() ? "of this host" : xmlPath));
  return topo;
}

// The single NUMA node an I/O object hangs off, -1 if none or several.
int numaOf(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (anc == nullptr || anc->nodeset == nullptr || hwloc_bitmap_weight(anc->nodeset) != 1)
    return -1;
  return hwloc_bitmap_first(anc->nodeset);
}

std::string busId(const hwloc_obj_t pci) {
  char buf[32];
  const auto& a = pci->attr->pcidev;
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", unsigned(a.domain), unsigned(a.bus),
                unsigned(a.dev), unsigned(a.func));
  return buf;
}

bool isGpu(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a) {
  // Display controllers (class 03xx) from NVIDIA or AMD; not integrated graphics.
  return (a.class_id >> 8) == 0x03 && (a.vendor_id == 0x10de || a.vendor_id == 0x1002);
}

void cpus(Topology& t, hwloc_topology_t topo) {
  t.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  t.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  t.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  if (const char* host = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "HostName"))
    t.hostname = host;
  t.numaNodes.clear();
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n));) {
    NumaNode node;
    node.index = int(n->os_index);
    node.memoryBytes = n->attr->numanode.local_memory;
    if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, n))
      node.package = int(pkg->os_index);
    unsigned i;
    hwloc_bitmap_foreach_begin(i, n->cpuset) node.cpus.push_back(int(i));
    hwloc_bitmap_foreach_end();
    t.numaNodes.push_back(std::move(node));
  }
}

void pciAndOsDevices(Topology& t, hwloc_topology_t topo) {
  t.pciDevices.clear();
  for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_pcidev(topo, p));) {
    const auto& a = p->attr->pcidev;
    t.pciDevices.push_back({busId(p), a.class_id, a.vendor_id, a.device_id, numaOf(topo, p)});
    if (isGpu(a)) {
      Gpu g{int(t.gpus.size()), "", busId(p), numaOf(topo, p)};
      for (hwloc_obj_t c = p->io_first_child; c && g.name.empty(); c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE) continue;
        auto type = c->attr->osdev.type;
        if (type == HWLOC_OBJ_OSDEV_COPROC || type == HWLOC_OBJ_OSDEV_GPU) g.name = c->name;
      }
      if (g.name.empty()) g.name = "gpu" + std::to_string(g.index);
      t.gpus.push_back(g);
    }
  }
  // NICs: a network OS device, with the OpenFabrics device of the same PCI function.
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(topo, o));) {
    if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK &&
        o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS)
      continue;
    hwloc_obj_t pci = o->parent && o->parent->type == HWLOC_OBJ_PCI_DEVICE ? o->parent : nullptr;
    std::string bus = pci ? busId(pci) : "";
    bool rdma = o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
    auto same = std::find_if(t.nics.begin(), t.nics.end(),
                             [&](const Nic& n) { return !bus.empty() && n.pciBusId == bus; });
    if (same == t.nics.end()) {
      Nic n;
      n.name = o->name;
      n.pciBusId = bus;
      n.numaNode = numaOf(topo, o);
      t.nics.push_back(n);
      same = t.nics.end() - 1;
    }
    if (rdma) {
      same->rdmaDevice = o->name;
    } else {
      same->name = o->name;  // the netdev names the NIC when there is one
    }
  }
}

}  // namespace

void probeHwloc(Topology& t, const std::string& xmlPath) {
  TopologyPtr topo = load(xmlPath);
  cpus(t, topo.get());
  pciAndOsDevices(t, topo.get());
  t.sources.push_back(xmlPath.empty() ? "hwloc" : "hwloc xml " + xmlPath);
}

}  // namespace chorus::topo::detail
