// Topology as text for people and as JSON for programs (chorus-topo).
#include "json_text.hpp"
#include "topology/topology.hpp"

#include <cstdio>
#include <sstream>

namespace chorus::topo {
namespace {

std::string cpuList(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(cpus[i]);
    if (j > i) s.append("-").append(std::to_string(cpus[j]));
    i = j + 1;
  }
  return s;
}

std::string speed(int64_t mbps) {
  if (mbps <= 0) return "speed unknown";
  if (mbps % 1000 == 0) return std::to_string(mbps / 1000) + " Gbit/s";
  return std::to_string(mbps) + " Mbit/s";
}

std::string numa(int n) { return n < 0 ? "numa ?" : "numa " + std::to_string(n); }

}  // namespace

std::string toText(const Topology& t) {
  std::ostringstream o;
  o << "host " << t.hostname << ": " << t.packages << " package(s), " << t.numaNodes.size()
    << " NUMA node(s), " << t.cores << " core(s), " << t.pus << " PU(s)\n";
  for (const NumaNode& n : t.numaNodes) {
    o << "  numa " << n.index << ": package " << n.package << ", cpus " << cpuList(n.cpus) << ", "
      << (n.memoryBytes >> 20) << " MiB\n";
  }
  o << "  " << t.pciDevices.size() << " PCI device(s)\n";
  for (const Nic& n : t.nics) {
    o << "  nic " << n.name << ": " << (n.up ? "up" : "down") << ", " << speed(n.speedMbps) << ", "
      << numa(n.numaNode) << ", " << (n.pciBusId.empty() ? "virtual" : "pci ") << n.pciBusId;
    if (!n.rdmaDevice.empty()) o << ", rdma " << n.rdmaDevice;
    o << "\n";
  }
  for (const Gpu& g : t.gpus) {
    o << "  gpu " << g.index << ": " << g.name << ", " << numa(g.numaNode)
      << (g.pciBusId.empty() ? "" : ", pci ") << g.pciBusId << "\n";
  }
  if (t.gpus.empty()) o << "  no GPUs\n";
  for (const GpuLink& l : t.gpuLinks)
    o << "  link gpu " << l.a << " - gpu " << l.b << ": " << l.kind << ", " << l.gbytesPerSec
      << " GB/s\n";
  o << "  from:";
  for (const auto& s : t.sources) o << " [" << s << "]";
  o << "\n";
  return o.str();
}

std::string toJson(const Topology& t) {
  std::ostringstream o;
  o << "{\n  \"hostname\": " << jsonQuoted(t.hostname) << ",\n  \"packages\": " << t.packages
    << ",\n  \"cores\": " << t.cores << ",\n  \"pus\": " << t.pus << ",\n  \"numa_nodes\": [";
  for (size_t i = 0; i < t.numaNodes.size(); ++i) {
    const NumaNode& n = t.numaNodes[i];
    o << (i ? "," : "") << "\n    {\"index\": " << n.index << ", \"package\": " << n.package
      << ", \"cpus\": " << jsonQuoted(cpuList(n.cpus)) << ", \"memory_bytes\": " << n.memoryBytes
      << "}";
  }
  o << "\n  ],\n  \"pci_devices\": [";
  for (size_t i = 0; i < t.pciDevices.size(); ++i) {
    const PciDevice& d = t.pciDevices[i];
    char ids[32];
    std::snprintf(ids, sizeof(ids), "%04x", unsigned(d.classId));
    o << (i ? "," : "") << "\n    {\"bus_id\": " << jsonQuoted(d.busId)
      << ", \"class\": " << jsonQuoted(ids);
    std::snprintf(ids, sizeof(ids), "%04x:%04x", unsigned(d.vendor), unsigned(d.device));
    o << ", \"id\": " << jsonQuoted(ids) << ", \"numa\": " << d.numaNode << "}";
  }
  o << "\n  ],\n  \"nics\": [";
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const Nic& n = t.nics[i];
    o << (i ? "," : "") << "\n    {\"name\": " << jsonQuoted(n.name)
      << ", \"rdma_device\": " << jsonQuoted(n.rdmaDevice)
      << ", \"pci\": " << jsonQuoted(n.pciBusId) << ", \"numa\": " << n.numaNode
      << ", \"speed_mbps\": " << n.speedMbps << ", \"up\": " << (n.up ? "true" : "false") << "}";
  }
  o << "\n  ],\n  \"gpus\": [";
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const Gpu& g = t.gpus[i];
    o << (i ? "," : "") << "\n    {\"index\": " << g.index << ", \"name\": " << jsonQuoted(g.name)
      << ", \"pci\": " << jsonQuoted(g.pciBusId) << ", \"numa\": " << g.numaNode << "}";
  }
  o << "\n  ],\n  \"gpu_links\": [";
  for (size_t i = 0; i < t.gpuLinks.size(); ++i) {
    const GpuLink& l = t.gpuLinks[i];
    o << (i ? "," : "") << "\n    {\"a\": " << l.a << ", \"b\": " << l.b
      << ", \"kind\": " << jsonQuoted(l.kind) << ", \"gbytes_per_sec\": " << l.gbytesPerSec << "}";
  }
  o << "\n  ],\n  \"sources\": [";
  for (size_t i = 0; i < t.sources.size(); ++i) o << (i ? ", " : "") << jsonQuoted(t.sources[i]);
  o << "]\n}\n";
  return o.str();
}

}  // namespace chorus::topo
