// What this host looks like (hwloc + sysfs, completed by CHORUS_TOPO_FILE) and how the
// ranks of a job group into nodes. Everything but detect() is a pure function.
// The topology file format is described at the top of topo_file.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::topo {

struct NumaNode {
  int index = 0;
  int package = -1;
  std::vector<int> cpus;  // OS indexes of its processing units
  uint64_t memoryBytes = 0;
};

struct PciDevice {
  std::string busId;  // "0000:17:00.0"
  uint16_t classId = 0, vendor = 0, device = 0;
  int numaNode = -1;
};

struct Nic {
  std::string name;        // netdev ("eth0", "ib0"), or the RDMA device if it has none
  std::string rdmaDevice;  // "mlx5_0" when it is an RDMA device
  std::string pciBusId;    // empty for virtual NICs (veth, bridge)
  int numaNode = -1;       // -1: unknown
  int64_t speedMbps = 0;   // 0: unknown
  bool up = false;
};

struct Gpu {
  int index = 0;
  std::string name, pciBusId;
  int numaNode = -1;
};

struct GpuLink {
  int a = 0, b = 0;
  std::string kind;  // nvlink, xgmi, pcie, ...
  double gbytesPerSec = 0;
};

struct Topology {
  std::string hostname;
  int packages = 0, cores = 0, pus = 0;
  std::vector<NumaNode> numaNodes;
  std::vector<PciDevice> pciDevices;
  std::vector<Nic> nics;
  std::vector<Gpu> gpus;  // from hwloc, NVML (names, NVLinks) and the file
  std::vector<GpuLink> gpuLinks;
  std::vector<std::string> sources;  // what it was built from, for people
};

struct DetectOptions {
  std::string sysfsRoot = "/sys";
  std::string hwlocXml;                 // empty: probe this machine
  std::optional<std::string> topoFile;  // unset: CHORUS_TOPO_FILE; "": none
};

// Throws Error(InvalidArgument) for an unreadable XML or a malformed topology file.
Topology detect(const DetectOptions& options = {});
// NUMA node of the CPUs this process is bound to, -1 if several or unknown.
int currentNumaNode();

std::string toText(const Topology& t);
std::string toJson(const Topology& t);

// --- the topology file ------------------------------------------------------------------
struct NodeRule {
  std::string name;
  std::vector<int> ranks;          // "node NAME ranks 0-3,8"
  std::vector<std::string> hosts;  // "node NAME hosts h1 h2" (hostname or host id)
};
struct NicRule {
  std::string name, host;  // host: only on this hostname ("" every host)
  std::optional<int64_t> speedMbps;
  std::optional<int> numaNode;
  std::optional<bool> up;
  std::optional<std::string> rdmaDevice, pciBusId;
};
struct TopologyFile {
  std::vector<NodeRule> nodes;
  std::vector<NicRule> nics;
  std::vector<Gpu> gpus;  // name "", numa -1, pci "": keep what was detected
  std::vector<GpuLink> gpuLinks;
};

// Throws Error(InvalidArgument) "source:line: message" on the first bad line.
TopologyFile parseTopologyFile(std::string_view text, const std::string& source = "topology");
TopologyFile loadTopologyFile(const std::string& path);
void applyTopologyFile(Topology& t, const TopologyFile& file);

// --- the cluster: every rank's view gathered -------------------------------------------
struct RankSummary {
  std::string hostId;  // hostIdentity(): boot id/hostname/netns
  int numaNode = -1;
  std::vector<Nic> nics;  // name, speed, numa, up; pciBusId "pci" when physical
};
std::string encodeSummary(const RankSummary& s);
RankSummary decodeSummary(std::string_view text);  // throws Error(InvalidArgument)
RankSummary summarize(const Topology& t, const std::string& hostId, int numaNode);

struct ClusterTopology {
  std::vector<int> nodeOf;              // rank -> node
  std::vector<int> localRank;           // rank -> index among its node's ranks
  std::vector<std::vector<int>> nodes;  // node -> its ranks, ascending
  std::vector<std::string> nodeNames;
  int nranks() const { return int(nodeOf.size()); }
  int nnodes() const { return int(nodes.size()); }
  int localRanks(int rank) const { return int(nodes[nodeOf[rank]].size()); }
  bool uniform() const;  // every node has as many ranks
};

// Ranks with equal ids share a node; nodes are numbered by their lowest rank. File rules
// take precedence (rank lists over host rules; ranks beyond the job are ignored).
ClusterTopology clusterFromHostIds(const std::vector<std::string>& hostIds,
                                   const TopologyFile* file = nullptr);
// Node by node, each node's ranks in a row: the ring crosses each node boundary once.
std::vector<int> ringOrder(const ClusterTopology& c);
// The rank with local index `localRank` on every node, in node order (-1 where none).
std::vector<int> railRanks(const ClusterTopology& c, int localRank);
// Index into `nics` for a rank on `numaNode`: among the up NICs, physical over virtual, then
// those on the rank's NUMA node, then the fastest; spread over local ranks and channels.
// -1 if none is up.
int chooseNic(const std::vector<Nic>& nics, int numaNode, int localRank, int channel = 0);

}  // namespace chorus::topo
