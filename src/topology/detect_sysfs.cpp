// NICs as the kernel shows them: /sys/class/net (state, speed, device) and
// /sys/class/infiniband (RDMA devices, their ports and netdevs). The root is a parameter so
// tests read recorded trees.
#include "topology/detect_parts.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

namespace chorus::topo::detail {
namespace {

namespace fs = std::filesystem;

std::string firstLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// Integer at the start of a file ("25000", "-1", "100 Gb/sec (4X EDR)"), or `fallback`.
long long number(const fs::path& p, long long fallback) {
  std::string s = firstLine(p);
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  return end == s.c_str() ? fallback : v;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// PCI address of a device directory: PCI_SLOT_NAME in its uevent, else the last
// "dddd:bb:dd.f" component of its real path (virtio NICs sit below their PCI function).
std::string pciAddress(const fs::path& device) {
  std::ifstream in(device / "uevent");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("PCI_SLOT_NAME=", 0) == 0) return line.substr(14);
  std::error_code ec;
  fs::path real = fs::canonical(device, ec);
  if (ec) return "";
  static const std::regex bdf("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]");
  std::string found;
  for (const auto& part : real)
    if (std::regex_match(part.string(), bdf)) found = part.string();
  return found;
}

Nic& nicNamed(Topology& t, const std::string& name, const std::string& bus) {
  auto it = std::find_if(t.nics.begin(), t.nics.end(), [&](const Nic& n) {
    return n.name == name || (!bus.empty() && n.pciBusId == bus);
  });
  if (it != t.nics.end()) return *it;
  t.nics.emplace_back().name = name;
  return t.nics.back();
}

void netDevices(Topology& t, const fs::path& root) {
  for (const auto& name : entries(root / "class/net")) {
    fs::path dir = root / "class/net" / name;
    if (name == "lo" || number(dir / "type", 1) == 772) continue;  // ARPHRD_LOOPBACK
    fs::path device = dir / "device";
    std::error_code ec;
    std::string bus = fs::exists(device, ec) ? pciAddress(device) : "";
    Nic& n = nicNamed(t, name, bus);
    n.name = name;
    if (!bus.empty()) n.pciBusId = bus;
    std::string state = firstLine(dir / "operstate");
    // Some virtual devices (tun, dummy) say "unknown" while carrying traffic.
    n.up = state == "up" || (state == "unknown" && number(dir / "carrier", 0) == 1);
    if (long long speed = number(dir / "speed", -1); speed > 0) n.speedMbps = speed;
    if (long long numa = number(device / "numa_node", -1); numa >= 0) n.numaNode = int(numa);
  }
}

void rdmaDevices(Topology& t, const fs::path& root) {
  for (const auto& dev : entries(root / "class/infiniband")) {
    fs::path dir = root / "class/infiniband" / dev;
    auto netdevs = entries(dir / "device/net");
    std::string bus = pciAddress(dir / "device");
    Nic& n = nicNamed(t, netdevs.empty() ? dev : netdevs.front(), bus);
    n.rdmaDevice = dev;
    if (!bus.empty()) n.pciBusId = bus;
    if (long long numa = number(dir / "device/numa_node", -1); numa >= 0) n.numaNode = int(numa);
    // The fastest active port stands for the device when the netdev says nothing.
    for (const auto& port : entries(dir / "ports")) {
      fs::path p = dir / "ports" / port;
      bool active = firstLine(p / "state").find("ACTIVE") != std::string::npos;
      long long gbits = number(p / "rate", 0);
      if (netdevs.empty()) n.up = n.up || active;
      if (active && n.speedMbps == 0) n.speedMbps = gbits * 1000;
    }
  }
}

}  // namespace

void probeSysfs(Topology& t, const std::string& root) {
  netDevices(t, root);
  rdmaDevices(t, root);
  t.sources.push_back("sysfs " + root);
}

}  // namespace chorus::topo::detail
