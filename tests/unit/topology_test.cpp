// Topology: detection from recorded hwloc XML and sysfs trees, the topology file parser
// (good and malformed input), the cluster view, ring order and NIC choice.
#include "topology/topology.hpp"
#include "bootstrap/bootstrap.hpp"
#include "time_bounds.hpp"
#include "topology/detect_parts.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>

namespace chorus::topo {
namespace {

// An absolute path from the build (__FILE__ is relative under Ninja, and ctest runs the
// tests from the build tree).
const std::string kData = CHORUS_TEST_DATA_DIR "/topology/";

Topology recorded(const std::string& xml, const std::string& sysfs) {
  DetectOptions o;
  o.hwlocXml = kData + xml;
  o.sysfsRoot = sysfs.empty() ? kData + "no-such-sysfs" : kData + sysfs;
  o.topoFile = "";
  return detect(o);
}

const Nic* nic(const Topology& t, const std::string& name) {
  for (const Nic& n : t.nics)
    if (n.name == name) return &n;
  return nullptr;
}

TEST(TopologyDetect, RecordedVm) {
  Topology t = recorded("vm_1socket.xml", "");
  EXPECT_EQ(t.hostname, "vm");
  EXPECT_EQ(t.packages, 1);
  EXPECT_EQ(t.cores, 2);
  EXPECT_EQ(t.pus, 2);
  ASSERT_EQ(t.numaNodes.size(), 1u);
  EXPECT_EQ(t.numaNodes[0].cpus, (std::vector<int>{0, 1}));
  EXPECT_GT(t.numaNodes[0].memoryBytes, 1ull << 30);
  const Nic* eth0 = nic(t, "eth0");  // from hwloc alone: place known, state not
  ASSERT_NE(eth0, nullptr);
  EXPECT_EQ(eth0->pciBusId, "0000:00:03.0");
  EXPECT_EQ(eth0->numaNode, 0);
  EXPECT_FALSE(eth0->up);
  EXPECT_TRUE(t.gpus.empty());
}

TEST(TopologyDetect, TwoSocketsTwoNics) {
  Topology t = recorded("fake_2socket.xml", "sysfs_2nic");
  EXPECT_EQ(t.hostname, "fake2s");
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(t.cores, 8);
  ASSERT_EQ(t.numaNodes.size(), 2u);
  EXPECT_EQ(t.numaNodes[1].package, 1);
  EXPECT_EQ(t.numaNodes[1].cpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(t.pciDevices.size(), 4u);

  EXPECT_EQ(nic(t, "lo"), nullptr);
  const Nic* ib0 = nic(t, "ib0");  // numa from hwloc (sysfs says -1), speed from the port
  ASSERT_NE(ib0, nullptr);
  EXPECT_EQ(ib0->rdmaDevice, "mlx5_0");
  EXPECT_EQ(ib0->numaNode, 0);
  EXPECT_EQ(ib0->speedMbps, 200000);
  EXPECT_TRUE(ib0->up);
  const Nic* eth1 = nic(t, "eth1");
  ASSERT_NE(eth1, nullptr);
  EXPECT_EQ(eth1->numaNode, 1);
  EXPECT_EQ(eth1->speedMbps, 25000);
  EXPECT_EQ(eth1->pciBusId, "0000:b1:00.0");
  const Nic* docker = nic(t, "docker0");
  ASSERT_NE(docker, nullptr);
  EXPECT_FALSE(docker->up);
  EXPECT_TRUE(docker->pciBusId.empty());
  const Nic* rdmaOnly = nic(t, "mlx5_1");  // RDMA device without a netdev
  ASSERT_NE(rdmaOnly, nullptr);
  EXPECT_EQ(rdmaOnly->speedMbps, 100000);
  EXPECT_EQ(rdmaOnly->numaNode, 1);
  EXPECT_TRUE(rdmaOnly->up);

  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].name, "cuda0");
  EXPECT_EQ(t.gpus[0].numaNode, 0);
  EXPECT_EQ(t.gpus[1].pciBusId, "0000:b2:00.0");
  EXPECT_EQ(t.gpus[1].numaNode, 1);

  std::string json = toJson(t), text = toText(t);
  EXPECT_NE(json.find("\"rdma_device\": \"mlx5_0\""), std::string::npos);
  EXPECT_NE(text.find("nic eth1: up, 25 Gbit/s, numa 1"), std::string::npos) << text;
}

TEST(TopologyDetect, ThisMachine) {
  DetectOptions o;
  o.topoFile = "";
  Topology t = detect(o);
  EXPECT_GE(t.pus, 1);
  EXPECT_GE(t.numaNodes.size(), 1u);
  EXPECT_FALSE(t.hostname.empty());
  EXPECT_GE(currentNumaNode(), -1);
}

TEST(TopologyDetect, MissingXmlIsAnError) {
  try {
    recorded("no-such.xml", "");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no-such.xml"), std::string::npos);
  }
}

TEST(TopologyFileTest, GoodFileAppliedOnTopOfDetection) {
  DetectOptions o;
  o.hwlocXml = kData + "fake_2socket.xml";
  o.sysfsRoot = kData + "sysfs_2nic";
  o.topoFile = kData + "cluster.topo";
  Topology t = detect(o);
  TopologyFile f = loadTopologyFile(kData + "cluster.topo");
  ASSERT_EQ(f.nodes.size(), 2u);
  EXPECT_EQ(f.nodes[0].ranks, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(f.nodes[1].hosts, (std::vector<std::string>{"fake2s-b", "other-host"}));

  EXPECT_EQ(nic(t, "ib0")->speedMbps, 400000);
  EXPECT_FALSE(nic(t, "eth1")->up);  // "host fake2s" matches this host
  const Nic* rail9 = nic(t, "rail9");
  ASSERT_NE(rail9, nullptr);
  EXPECT_TRUE(rail9->up);
  EXPECT_EQ(rail9->speedMbps, 800);
  EXPECT_EQ(rail9->rdmaDevice, "mlx5_9");
  EXPECT_EQ(rail9->numaNode, 1);
  EXPECT_EQ(t.gpus[0].name, "h100-0");
  EXPECT_EQ(t.gpus[1].name, "cuda1");  // "gpu 1 numa 1" keeps what hwloc found
  EXPECT_EQ(t.gpus[1].pciBusId, "0000:b2:00.0");
  ASSERT_EQ(t.gpuLinks.size(), 1u);  // "1 0" replaces "0 1"
  EXPECT_EQ(t.gpuLinks[0].kind, "nvlink");
  EXPECT_DOUBLE_EQ(t.gpuLinks[0].gbytesPerSec, 400);
}

TEST(TopologyFileTest, RatesAndEmptyInput) {
  auto speed = [](const std::string& s) {
    return *parseTopologyFile("nic x speed " + s).nics.at(0).speedMbps;
  };
  EXPECT_EQ(speed("100G"), 100000);
  EXPECT_EQ(speed("25Gbit"), 25000);
  EXPECT_EQ(speed("400gb/s"), 400000);
  EXPECT_EQ(speed("1.5T"), 1500000);
  EXPECT_EQ(speed("800M"), 800);
  EXPECT_EQ(speed("1000"), 1000);
  EXPECT_TRUE(parseTopologyFile("").nodes.empty());
  EXPECT_TRUE(parseTopologyFile("\n# only a comment\n   \n").nics.empty());
}

void expectError(const std::string& text, const std::string& expected) {
  try {
    parseTopologyFile(text, "t.topo");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << "input: " << text << "\nerror: " << e.what();
  }
}

TEST(TopologyFileTest, MalformedInputNamesTheLine) {
  expectError("bogus 1", "t.topo:1: unknown statement 'bogus'");
  expectError("\n\nnode", "t.topo:3: missing a node name");
  expectError("node a", "t.topo:1: missing 'ranks' or 'hosts'");
  expectError("node a cpus 1", "expected 'ranks' or 'hosts'");
  expectError("node a ranks 3-1", "empty rank range '3-1'");
  expectError("node a ranks 1,,2", "'' is not an integer");
  expectError("node a ranks 1,", "bad rank list");
  expectError("node a ranks -1", "'' is not an integer");
  expectError("node a ranks 0-99999999999", "out of range");
  expectError("node a ranks 0-600000\nnode b ranks 600001-1048576", "t.topo:2: more than 2^20");
  expectError("node a ranks 0-2\nnode b ranks 2,3", "t.topo:2: rank 2 is in two nodes");
  expectError("node a ranks 0\nnode a ranks 1", "node 'a' is defined twice");
  expectError("node a hosts", "missing host names");
  expectError("version 2", "only version 1");
  expectError("nic", "missing a NIC name");
  expectError("nic eth0 speed", "missing a value for 'speed'");
  expectError("nic eth0 speed fast", "bad speed 'fast'");
  expectError("nic eth0 speed 10Q", "bad speed '10Q'");
  expectError("nic eth0 speed 0.0001M", "below 1 Mbit/s");
  expectError("nic eth0 speed 1e300", "bad speed");
  expectError("nic eth0 speed nan", "bad speed");
  expectError("nic eth0 numa x", "'x' is not an integer");
  expectError("nic eth0 state sideways", "state must be up or down");
  expectError("nic eth0 colour red", "unknown attribute 'colour'");
  expectError("gpu", "missing a GPU index");
  expectError("gpu 0 numa", "missing a value for 'numa'");
  expectError("link 0", "missing the second GPU index");
  expectError("link 1 1 nvlink", "two different GPUs");
  expectError("link 0 1", "missing the link kind");
  expectError("link 0 1 nvlink 50Mb", "bandwidth is in GB/s");
  expectError("link 0 1 nvlink 50 extra", "unexpected 'extra'");
  // A NUL and bytes above 127 inside the line (14 characters: the literal's own end excluded).
  expectError(std::string("nic \0\xff speed \x01", 14), "t.topo:1:");
}

TEST(TopologyFileTest, MalformedFiles) {
  for (auto [file, expected] : {std::pair{"bad_speed.topo", "bad_speed.topo:3: bad speed"},
                                {"bad_duplicate_rank.topo", "bad_duplicate_rank.topo:3: rank 2"},
                                {"missing.topo", "cannot open"}}) {
    try {
      loadTopologyFile(kData + file);
      ADD_FAILURE() << file;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

// Random mixtures of valid and invalid tokens: the parser accepts or throws Error, nothing else.
TEST(TopologyFileTest, NeverCrashes) {
  const std::vector<std::string> words = {"node",  "nic",     "gpu",
                                          "link",  "version", "ranks",
                                          "hosts", "speed",   "numa",
                                          "state", "up",      "down",
                                          "rdma",  "pci",     "host",
                                          "name",  "0",       "1",
                                          "-1",    "3-1",     "0-7",
                                          "1,2",   ",",       "100G",
                                          "1e400", "#",       "\n",
                                          "\n",    "x",       "",
                                          "\t",    "\xff",    "99999999999999999999",
                                          "2-"};
  std::mt19937 rng(7);
  int accepted = 0;
  for (size_t i = 0; i < chorus::test::bulk(3000); ++i) {
    std::string text;
    int n = int(rng() % 12);
    for (int w = 0; w < n; ++w) text += words[rng() % words.size()] + " ";
    try {
      parseTopologyFile(text);
      ++accepted;
    } catch (const Error&) {
    }
  }
  EXPECT_GT(accepted, 0);
}

int crossings(const ClusterTopology& c, const std::vector<int>& ring) {
  int n = 0;
  for (size_t i = 0; i < ring.size(); ++i)
    n += c.nodeOf[ring[i]] != c.nodeOf[ring[(i + 1) % ring.size()]];
  return n;
}

TEST(ClusterTopologyTest, NodesFromHostIds) {
  auto c = clusterFromHostIds({"b/h1/netns:1", "b/h2/netns:1", "b/h1/netns:1", "b/h2/netns:1"});
  EXPECT_EQ(c.nnodes(), 2);
  EXPECT_EQ(c.nodeOf, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(c.localRank, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(c.nodes[1], (std::vector<int>{1, 3}));
  EXPECT_EQ(c.nodeNames, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_TRUE(c.uniform());
  EXPECT_EQ(ringOrder(c), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(railRanks(c, 1), (std::vector<int>{2, 3}));

  // Two network namespaces of one machine are two nodes.
  auto ns = clusterFromHostIds({"b/vm/netns:5", "b/vm/netns:6", "b/vm/netns:6"});
  EXPECT_EQ(ns.nnodes(), 2);
  EXPECT_EQ(ns.nodeNames, (std::vector<std::string>{"vm", "vm#1"}));
  EXPECT_FALSE(ns.uniform());
  EXPECT_EQ(ns.localRanks(2), 2);
  EXPECT_EQ(railRanks(ns, 1), (std::vector<int>{-1, 2}));

  auto one = clusterFromHostIds({"same", "same", "same"});
  EXPECT_EQ(one.nnodes(), 1);
  EXPECT_EQ(crossings(one, ringOrder(one)), 0);
  EXPECT_EQ(clusterFromHostIds({}).nnodes(), 0);
}

TEST(ClusterTopologyTest, FileRulesWin) {
  TopologyFile f =
      parseTopologyFile("node left ranks 0-1,4,99\nnode right hosts h9 b/h3/netns:1\n");
  auto c = clusterFromHostIds({"b/h1/netns:1", "b/h1/netns:1", "b/h9/netns:1", "b/h3/netns:1",
                               "b/h9/netns:1", "b/h1/netns:1"},
                              &f);
  EXPECT_EQ(c.nnodes(), 3);
  EXPECT_EQ(c.nodeNames, (std::vector<std::string>{"left", "right", "h1"}));
  EXPECT_EQ(c.nodes[0], (std::vector<int>{0, 1, 4}));  // rank 4 by list, over its host
  EXPECT_EQ(c.nodes[1], (std::vector<int>{2, 3}));
  EXPECT_EQ(c.nodes[2], (std::vector<int>{5}));
}

TEST(ClusterTopologyTest, RingCrossesEachBoundaryOnce) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 1 + int(rng() % 64), hosts = 1 + int(rng() % 8);
    std::vector<std::string> ids;
    for (int r = 0; r < n; ++r) ids.push_back("host" + std::to_string(rng() % hosts));
    auto c = clusterFromHostIds(ids);
    auto ring = ringOrder(c);
    std::vector<int> sorted = ring;
    std::sort(sorted.begin(), sorted.end());
    for (int r = 0; r < n; ++r) ASSERT_EQ(sorted[r], r);  // a permutation
    EXPECT_EQ(crossings(c, ring), c.nnodes() > 1 ? c.nnodes() : 0);
    for (int r = 0; r < n; ++r) EXPECT_EQ(c.nodes[c.nodeOf[r]][c.localRank[r]], r);
  }
}

TEST(ClusterTopologyTest, NicNearTheRank) {
  Topology t = recorded("fake_2socket.xml", "sysfs_2nic");
  auto name = [&](int numa, int local) {
    int i = chooseNic(t.nics, numa, local);
    return i < 0 ? std::string("none") : t.nics[i].name;
  };
  EXPECT_EQ(name(0, 0), "ib0");
  EXPECT_EQ(name(0, 1), "ib0");
  EXPECT_EQ(name(1, 0), "mlx5_1");  // the faster of NUMA 1's two
  EXPECT_EQ(name(-1, 0), "ib0");    // unknown NUMA: the fastest anywhere

  std::vector<Nic> rails(2);  // the test bed: virtual, equal, NUMA unknown
  rails[0].name = "rail0", rails[1].name = "rail1";
  rails[0].up = rails[1].up = true;
  EXPECT_EQ(chooseNic(rails, 0, 0), 0);
  EXPECT_EQ(chooseNic(rails, 0, 1), 1);
  EXPECT_EQ(chooseNic(rails, 0, 1, 1), 0);  // next channel, next rail
  rails[0].up = rails[1].up = false;
  EXPECT_EQ(chooseNic(rails, 0, 0), -1);
}

TEST(ClusterTopologyTest, SummaryRoundTrip) {
  Topology t = recorded("fake_2socket.xml", "sysfs_2nic");
  RankSummary s = summarize(t, "boot/fake2s/netns:42", 1);
  RankSummary back = decodeSummary(encodeSummary(s));
  EXPECT_EQ(back.hostId, "boot/fake2s/netns:42");
  EXPECT_EQ(back.numaNode, 1);
  ASSERT_EQ(back.nics.size(), t.nics.size());
  for (size_t i = 0; i < t.nics.size(); ++i) {
    EXPECT_EQ(back.nics[i].name, t.nics[i].name);
    EXPECT_EQ(back.nics[i].speedMbps, t.nics[i].speedMbps);
    EXPECT_EQ(back.nics[i].up, t.nics[i].up);
    EXPECT_EQ(chooseNic(back.nics, 1, 0), chooseNic(t.nics, 1, 0));
  }
  EXPECT_THROW(decodeSummary("numa 1\n"), Error);
  EXPECT_THROW(decodeSummary("host x\nnic eth0 fast\n"), Error);
}

TEST(HostIdentity, BootHostAndNetworkNamespace) {
  std::string id = hostIdentity();
  struct stat st {};
  ASSERT_EQ(::stat("/proc/self/ns/net", &st), 0);
  EXPECT_NE(id.find("/netns:" + std::to_string(st.st_ino)), std::string::npos) << id;
  EXPECT_EQ(std::count(id.begin(), id.end(), '/'), 2) << id;

  // A child in a new network namespace is another node (needs CAP_SYS_ADMIN).
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string other = ::unshare(CLONE_NEWNET) == 0 ? hostIdentity() : "unshare-failed";
    (void)!::write(fds[1], other.data(), other.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  char buf[512] = {};
  ssize_t n = ::read(fds[0], buf, sizeof(buf) - 1);
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  std::string other(buf, n > 0 ? size_t(n) : 0);
  if (other == "unshare-failed") GTEST_SKIP() << "no permission to create a network namespace";
  EXPECT_NE(other, id);
  EXPECT_EQ(other.substr(0, other.find("/netns:")), id.substr(0, id.find("/netns:")));
}

}  // namespace
}  // namespace chorus::topo

// NVML's view merged into the topology (detect_nvml.cpp): names by PCI bus id in either
// spelling, a GPU hwloc missed added, NVLinks counted once per pair, NVSwitch links making
// every switched pair reachable at the fewer links' rate.
TEST(TopologyNvml, NamesAndLinksMergedByBusId) {
  using chorus::topo::detail::NvmlGpu;
  chorus::topo::Topology t;
  t.gpus = {{0, "gpu0", "0000:1b:00.0", 0}, {1, "gpu1", "0000:1c:00.0", 0}};
  // GPU 0 and 1 share 4 direct links (each seen from both ends); 2 (not in hwloc's list)
  // has 2 links to a switch, and so does 1.
  const std::vector<NvmlGpu> found = {
      {"NVIDIA H100",
       "00000000:1B:00.0",
       {"00000000:1C:00.0", "00000000:1C:00.0", "00000000:1C:00.0", "00000000:1C:00.0"}},
      {"NVIDIA H100",
       "00000000:1C:00.0",
       {"00000000:1B:00.0", "00000000:1B:00.0", "00000000:1B:00.0", "00000000:1B:00.0",
        "00000000:E0:00.0", "00000000:E0:00.0"}},
      {"NVIDIA H100",
       "00000000:2A:00.0",
       {"00000000:E0:00.0", "00000000:E1:00.0", "00000000:E1:00.0"}}};
  chorus::topo::detail::mergeNvmlGpus(t, found);
  ASSERT_EQ(t.gpus.size(), 3u);
  EXPECT_EQ(t.gpus[0].name, "NVIDIA H100");
  EXPECT_EQ(t.gpus[0].numaNode, 0);  // kept from hwloc
  EXPECT_EQ(t.gpus[2].pciBusId, "0000:2a:00.0");
  EXPECT_EQ(t.gpus[2].numaNode, -1);
  ASSERT_EQ(t.gpuLinks.size(), 2u);
  EXPECT_EQ(t.gpuLinks[0].a, 0);
  EXPECT_EQ(t.gpuLinks[0].b, 1);
  EXPECT_EQ(t.gpuLinks[0].kind, "nvlink");
  EXPECT_DOUBLE_EQ(t.gpuLinks[0].gbytesPerSec, 4 * 25.0);
  EXPECT_EQ(t.gpuLinks[1].a, 1);
  EXPECT_EQ(t.gpuLinks[1].b, 2);
  EXPECT_EQ(t.gpuLinks[1].kind, "nvswitch");
  EXPECT_DOUBLE_EQ(t.gpuLinks[1].gbytesPerSec, 2 * 25.0);
}

TEST(TopologyNvml, EightGpusOnSwitchesAreAllPairs) {
  using chorus::topo::detail::NvmlGpu;
  chorus::topo::Topology t;
  std::vector<NvmlGpu> found;
  for (int g = 0; g < 8; ++g) {
    NvmlGpu n{"NVIDIA H100 80GB HBM3", "00000000:" + std::to_string(10 + g) + ":00.0", {}};
    for (int l = 0; l < 18; ++l)
      n.nvlinkPeers.push_back("00000000:a" + std::to_string(l % 4) + ":00.0");
    found.push_back(n);
  }
  chorus::topo::detail::mergeNvmlGpus(t, found);
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.gpuLinks.size(), 28u);  // 8 choose 2
  for (const auto& l : t.gpuLinks) {
    EXPECT_EQ(l.kind, "nvswitch");
    EXPECT_DOUBLE_EQ(l.gbytesPerSec, 450.0);  // 18 links: the H100's figure
  }
}

TEST(TopologyNvml, NothingFoundChangesNothing) {
  chorus::topo::Topology t;
  t.gpus = {{0, "gpu0", "0000:1b:00.0", 0}};
  chorus::topo::detail::mergeNvmlGpus(t, {});
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].name, "gpu0");
  EXPECT_TRUE(t.gpuLinks.empty());
  // Here (no NVIDIA driver) NVML is absent: the query finds nothing, without an error.
  if (access("/dev/nvidiactl", F_OK) != 0) EXPECT_TRUE(chorus::topo::detail::queryNvml().empty());
}
