// chorus-topo: prints what Chorus sees of this host, or (--cluster, one process per rank
// under a launcher) how the job's ranks group into nodes.
//
//   chorus-topo [--json] [--sysfs ROOT] [--xml FILE] [--topo-file FILE]
//   chorus-run -n 4 --timeout 60 chorus-topo --cluster
#include "bootstrap/bootstrap.hpp"
#include "settings/settings.hpp"
#include "topology/topology.hpp"

#include <chorus/chorus.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr const char* kUsage =
    "usage: chorus-topo [--json] [--sysfs ROOT] [--xml FILE] [--topo-file FILE] [--cluster]\n"
    "  --json       JSON instead of text\n"
    "  --sysfs      read NICs from ROOT/class/{net,infiniband} (default /sys)\n"
    "  --xml        read the host from an hwloc XML file (hwloc-ls --of xml)\n"
    "  --topo-file  apply this topology file (default: CHORUS_TOPO_FILE)\n"
    "  --cluster    run as one rank of a job (chorus-run, torchrun variables): gather every\n"
    "               rank's host identity and print the nodes, local ranks and ring order\n";

// Every rank prints its place; rank 0 also prints the nodes and the ring.
int cluster(const chorus::topo::Topology& local, const std::string& topoFile) {
  auto comm = chorus::Communicator::initFromEnv();
  constexpr size_t kIdBytes = 512;
  std::string id = chorus::hostIdentity();
  std::vector<char> mine(kIdBytes, 0), all(kIdBytes * size_t(comm.size()));
  std::memcpy(mine.data(), id.data(), std::min(id.size(), kIdBytes - 1));
  comm.allGather(mine.data(), all.data(), kIdBytes, chorus::DataType::Uint8).wait();
  std::vector<std::string> ids;
  for (int r = 0; r < comm.size(); ++r) ids.emplace_back(all.data() + size_t(r) * kIdBytes);

  chorus::topo::TopologyFile file;
  if (!topoFile.empty()) file = chorus::topo::loadTopologyFile(topoFile);
  auto c = chorus::topo::clusterFromHostIds(ids, &file);
  const int r = comm.rank();
  int nic = chorus::topo::chooseNic(local.nics, chorus::topo::currentNumaNode(), c.localRank[r]);
  std::printf("rank %d: node %d (%s) of %d nodes, local rank %d of %d, nic %s\n", r, c.nodeOf[r],
              c.nodeNames[c.nodeOf[r]].c_str(), c.nnodes(), c.localRank[r], c.localRanks(r),
              nic >= 0 ? local.nics[nic].name.c_str() : "none");
  if (r == 0) {
    std::string ring;
    for (int x : chorus::topo::ringOrder(c)) ring += " " + std::to_string(x);
    std::printf("cluster: %d ranks, %d nodes%s, ring:%s\n", c.nranks(), c.nnodes(),
                c.uniform() ? " (uniform)" : "", ring.c_str());
  }
  std::fflush(stdout);
  comm.allGather(mine.data(), all.data(), kIdBytes, chorus::DataType::Uint8).wait();  // barrier
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::topo::DetectOptions options;
  bool json = false, asCluster = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool hasValue = i + 1 < argc;
    if (a == "--json") {
      json = true;
    } else if (a == "--cluster") {
      asCluster = true;
    } else if (a == "--sysfs" && hasValue) {
      options.sysfsRoot = argv[++i];
    } else if (a == "--xml" && hasValue) {
      options.hwlocXml = argv[++i];
    } else if (a == "--topo-file" && hasValue) {
      options.topoFile = argv[++i];
    } else {
      std::fprintf(stderr, "chorus-topo: bad argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  try {
    chorus::topo::Topology t = chorus::topo::detect(options);
    if (asCluster) {
      const char* env = chorus::settings::cstr("CHORUS_TOPO_FILE");
      return cluster(t, options.topoFile ? *options.topoFile : (env ? env : ""));
    }
    std::fputs((json ? chorus::topo::toJson(t) : chorus::topo::toText(t)).c_str(), stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-topo: %s\n", e.what());
    return 1;
  }
  return 0;
}
