// The job's shape from what every rank reports: nodes, local ranks, ring order, NIC choice.
#include "errors.hpp"
#include "topology/topology.hpp"

#include <algorithm>
#include <map>
#include <sstream>

namespace chorus::topo {
namespace {

// "bootid/hostname/netns:N" -> "hostname"; anything else is its own hostname.
std::string hostnameOf(const std::string& id) {
  auto first = id.find('/'), last = id.rfind('/');
  if (first == std::string::npos || first == last) return id;
  return id.substr(first + 1, last - first - 1);
}

}  // namespace

bool ClusterTopology::uniform() const {
  return std::all_of(nodes.begin(), nodes.end(),
                     [&](const auto& n) { return n.size() == nodes.front().size(); });
}

ClusterTopology clusterFromHostIds(const std::vector<std::string>& hostIds,
                                   const TopologyFile* file) {
  const int n = int(hostIds.size());
  // The node key of every rank: a file rule's name, else the host id. Ranks a rule lists
  // beyond this job's size are ignored (one file can serve jobs of several sizes).
  std::vector<std::string> key(n);
  std::map<std::string, std::string> nameOfKey;
  for (int r = 0; r < n; ++r) key[r] = "id:" + hostIds[r];
  if (file != nullptr) {
    for (const NodeRule& rule : file->nodes)
      for (int r = 0; r < n; ++r) {
        bool host = std::any_of(rule.hosts.begin(), rule.hosts.end(), [&](const auto& h) {
          return h == hostIds[r] || h == hostnameOf(hostIds[r]);
        });
        if (host && key[r].rfind("id:", 0) == 0) key[r] = "rule:" + rule.name;
      }
    for (const NodeRule& rule : file->nodes)  // rank lists win over host names
      for (int r : rule.ranks)
        if (r < n) key[r] = "rule:" + rule.name;
  }
  ClusterTopology c;
  c.nodeOf.assign(n, -1);
  c.localRank.assign(n, 0);
  std::map<std::string, int> nodeOfKey;
  for (int r = 0; r < n; ++r) {
    auto [it, added] = nodeOfKey.emplace(key[r], c.nnodes());
    if (added) {
      c.nodes.emplace_back();
      std::string name = key[r].rfind("rule:", 0) == 0 ? key[r].substr(5) : hostnameOf(hostIds[r]);
      if (std::count(c.nodeNames.begin(), c.nodeNames.end(), name) > 0)
        name += "#" + std::to_string(c.nnodes() - 1);  // namespaces of one host, say
      c.nodeNames.push_back(name);
    }
    c.nodeOf[r] = it->second;
    c.localRank[r] = int(c.nodes[it->second].size());
    c.nodes[it->second].push_back(r);
  }
  return c;
}

std::vector<int> ringOrder(const ClusterTopology& c) {
  std::vector<int> order;
  order.reserve(c.nodeOf.size());
  for (const auto& node : c.nodes) order.insert(order.end(), node.begin(), node.end());
  return order;
}

std::vector<int> railRanks(const ClusterTopology& c, int localRank) {
  std::vector<int> ranks;
  for (const auto& node : c.nodes)
    ranks.push_back(localRank >= 0 && localRank < int(node.size()) ? node[localRank] : -1);
  return ranks;
}

int chooseNic(const std::vector<Nic>& nics, int numaNode, int localRank, int channel) {
  std::vector<int> pool;
  for (int i = 0; i < int(nics.size()); ++i)
    if (nics[i].up) pool.push_back(i);
  // Narrow the pool step by step, never to nothing: physical NICs over virtual ones
  // (bridges, docker0), then the rank's NUMA node, then the fastest.
  auto narrow = [&](auto keep) {
    std::vector<int> kept;
    std::copy_if(pool.begin(), pool.end(), std::back_inserter(kept),
                 [&](int i) { return keep(nics[i]); });
    if (!kept.empty()) pool = std::move(kept);
  };
  narrow([](const Nic& x) { return !x.pciBusId.empty(); });
  if (numaNode >= 0) narrow([&](const Nic& x) { return x.numaNode == numaNode; });
  int64_t fastest = 0;
  for (int i : pool) fastest = std::max(fastest, nics[i].speedMbps);
  narrow([&](const Nic& x) { return x.speedMbps == fastest; });
  if (pool.empty()) return -1;
  return pool[size_t(std::max(0, localRank) + std::max(0, channel)) % pool.size()];
}

RankSummary summarize(const Topology& t, const std::string& hostId, int numaNode) {
  RankSummary s{hostId, numaNode, {}};
  for (const Nic& n : t.nics) {
    Nic copy;
    copy.name = n.name;
    copy.speedMbps = n.speedMbps;
    copy.numaNode = n.numaNode;
    copy.up = n.up;
    copy.pciBusId = n.pciBusId.empty() ? "" : "pci";  // only whether it is physical
    s.nics.push_back(copy);
  }
  return s;
}

// One line each: "host ID", "numa N", "nic NAME SPEED NUMA UP PHYSICAL".
std::string encodeSummary(const RankSummary& s) {
  std::ostringstream out;
  out << "host " << s.hostId << "\nnuma " << s.numaNode << "\n";
  for (const Nic& n : s.nics) {
    out << "nic " << n.name << " " << n.speedMbps << " " << n.numaNode << " " << int(n.up) << " "
        << int(!n.pciBusId.empty()) << "\n";
  }
  return out.str();
}

RankSummary decodeSummary(std::string_view text) {
  RankSummary s;
  std::istringstream in{std::string(text)};
  int lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    auto bad = [&] {
      throwInvalid("rank summary line " + std::to_string(lineNo) + ": '" + line + "'");
    };
    if (line.rfind("host ", 0) == 0) {
      s.hostId = line.substr(5);
      continue;
    }
    std::istringstream fields(line);
    std::string kw;
    fields >> kw;
    if (kw == "numa") {
      if (!(fields >> s.numaNode)) bad();
    } else if (kw == "nic") {
      Nic n;
      int up = 0, physical = 0;
      if (!(fields >> n.name >> n.speedMbps >> n.numaNode >> up >> physical)) bad();
      n.up = up != 0;
      n.pciBusId = physical ? "pci" : "";
      s.nics.push_back(n);
    } else if (!kw.empty()) {
      bad();
    }
  }
  if (s.hostId.empty()) throwInvalid("rank summary: no host line");
  return s;
}

}  // namespace chorus::topo
