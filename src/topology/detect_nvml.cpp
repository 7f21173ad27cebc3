// GPUs through NVML, loaded at run time (dlopen of the driver's libnvidia-ml.so.1: no build
// dependency, nothing where there is no NVIDIA driver). NVML names each GPU and says where
// each of its NVLinks goes: to another GPU (a direct link) or to an NVSwitch (every GPU
// with switch links reaches every other through the switches).
#include "topology/detect_parts.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace chorus::topo::detail {
namespace {

// The subset of nvml.h used here (its ABI: these entry points and nvmlPciInfo_t's layout
// are stable across driver releases).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlFeatureEnabled = 1;
constexpr unsigned kNvlinkMaxLinks = 18;

// "00000000:00:06.0" (NVML) and "0000:00:06.0" (hwloc) alike: lower case, a 4-digit domain.
std::string normalBusId(std::string id) {
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4 && id.find_first_not_of('0') >= colon - 4)
    id.erase(0, colon - 4);
  return id;
}

}  // namespace

void mergeNvmlGpus(Topology& t, const std::vector<NvmlGpu>& found) {
  if (found.empty()) return;
  std::vector<int> indexOf;  // found[i] -> t.gpus index
  for (const NvmlGpu& n : found) {
    const std::string id = normalBusId(n.busId);
    auto it = std::find_if(t.gpus.begin(), t.gpus.end(),
                           [&](const Gpu& g) { return normalBusId(g.pciBusId) == id; });
    if (it == t.gpus.end()) {
      t.gpus.push_back(Gpu{int(t.gpus.size()), n.name, id, -1});
      indexOf.push_back(t.gpus.back().index);
    } else {
      if (!n.name.empty()) it->name = n.name;
      indexOf.push_back(it->index);
    }
  }
  std::map<std::string, size_t> byBusId;
  for (size_t i = 0; i < found.size(); ++i) byBusId[normalBusId(found[i].busId)] = i;
  std::map<std::pair<int, int>, int> direct;  // GPU pair -> links (counted from the lower end)
  std::vector<int> switchLinks(found.size(), 0);
  for (size_t i = 0; i < found.size(); ++i)
    for (const std::string& peer : found[i].nvlinkPeers) {
      auto p = byBusId.find(normalBusId(peer));
      if (p == byBusId.end()) {
        ++switchLinks[i];
      } else if (p->second > i) {
        ++direct[{indexOf[i], indexOf[p->second]}];
      }
    }
  for (auto [pair, links] : direct)
    t.gpuLinks.push_back(GpuLink{pair.first, pair.second, "nvlink", links * kNvlinkGBytesPerLink});
  for (size_t i = 0; i < found.size(); ++i)
    for (size_t j = i + 1; j < found.size(); ++j)
      if (switchLinks[i] && switchLinks[j])
        t.gpuLinks.push_back(
            GpuLink{indexOf[i], indexOf[j], "nvswitch",
                    std::min(switchLinks[i], switchLinks[j]) * kNvlinkGBytesPerLink});
}

std::vector<NvmlGpu> queryNvml() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return {};
  auto sym = [&](const char* name) { return dlsym(lib, name); };
  auto init = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlShutdown"));
  auto count = reinterpret_cast<NvmlReturn (*)(unsigned*)>(sym("nvmlDeviceGetCount_v2"));
  auto handle =
      reinterpret_cast<NvmlReturn (*)(unsigned, NvmlDevice*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto name =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, char*, unsigned)>(sym("nvmlDeviceGetName"));
  auto pci =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlPciInfo*)>(sym("nvmlDeviceGetPciInfo_v3"));
  auto linkState =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, unsigned, int*)>(sym("nvmlDeviceGetNvLinkState"));
  auto linkRemote = reinterpret_cast<NvmlReturn (*)(NvmlDevice, unsigned, NvmlPciInfo*)>(
      sym("nvmlDeviceGetNvLinkRemotePciInfo_v2"));
  std::vector<NvmlGpu> found;
  unsigned n = 0;
  if (init && shutdown && count && handle && name && pci && init() == kNvmlSuccess) {
    if (count(&n) == kNvmlSuccess)
      for (unsigned i = 0; i < n; ++i) {
        NvmlDevice d = nullptr;
        NvmlPciInfo info{};
        if (handle(i, &d) != kNvmlSuccess || pci(d, &info) != kNvmlSuccess) continue;
        NvmlGpu g;
        info.busId[sizeof info.busId - 1] = 0;
        g.busId = info.busId;
        char text[96] = {};
        if (name(d, text, sizeof text - 1) == kNvmlSuccess) g.name = text;
        for (unsigned link = 0; linkState && linkRemote && link < kNvlinkMaxLinks; ++link) {
          int active = 0;
          NvmlPciInfo remote{};
          if (linkState(d, link, &active) != kNvmlSuccess) break;  // no NVLink, or no more links
          if (active != kNvmlFeatureEnabled || linkRemote(d, link, &remote) != kNvmlSuccess)
            continue;
          remote.busId[sizeof remote.busId - 1] = 0;
          g.nvlinkPeers.push_back(remote.busId);
        }
        found.push_back(std::move(g));
      }
    shutdown();
  }
  dlclose(lib);
  return found;
}

void probeGpus(Topology& t) {
  const std::vector<NvmlGpu> found = queryNvml();
  if (found.empty()) return;
  mergeNvmlGpus(t, found);
  t.sources.push_back("nvml " + std::to_string(found.size()) + " GPU(s)");
}

}  // namespace chorus::topo::detail
