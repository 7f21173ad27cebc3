// The fabric model: max-min fair sharing on hand-worked cases, ECMP collisions and what
// striping over more QPs does to them, oversubscription, fabric files, and the published
// single-node figure (8x H100 ring all-reduce ~370 GB/s busbw with NVLink at 450 GB/s).
#include "algorithms/steps.hpp"
#include "sim/fabric_network.hpp"
#include "sim/max_min.hpp"
#include "sim/simulate.hpp"
#include "tuner/cost_model.hpp"

#include <gtest/gtest.h>
#include <chorus/chorus.hpp>

#include <algorithm>
#include <cmath>

namespace chorus::sim {
namespace {

constexpr double kNic = 400.0 / 8 * 1000;  // 400 Gb/s in bytes per us

// n nodes of one GPU and one NIC under one leaf; every link but the NIC much faster.
Fabric star(int nodes) {
  Fabric f = presetFabric("uniform", nodes);
  f.efficiency = 1;
  f.pcieGBps = 1000;
  return f;
}

TEST(SimFabric, MaxMinSharesTheBottleneckFairly) {
  FabricNetwork net(star(4));
  // Two flows into node 1 share its NIC's downlink; 2 -> 3 has its own links.
  const std::vector<Flow> flows = {{0, 1}, {2, 1}, {3, 0}};
  auto rates = net.shareLinks(flows);
  EXPECT_DOUBLE_EQ(rates[0].bytesPerUs, kNic / 2);
  EXPECT_DOUBLE_EQ(rates[1].bytesPerUs, kNic / 2);
  EXPECT_DOUBLE_EQ(rates[2].bytesPerUs, kNic);
  // Max-min, not proportional: 0 -> 1 and 0 -> 2 split 0's uplink; 3 -> 2 then gets the
  // half of 2's downlink that 0 -> 2 leaves.
  rates = net.shareLinks(std::vector<Flow>{{0, 1}, {0, 2}, {3, 2}});
  EXPECT_DOUBLE_EQ(rates[0].bytesPerUs, kNic / 2);
  EXPECT_DOUBLE_EQ(rates[1].bytesPerUs, kNic / 2);
  EXPECT_DOUBLE_EQ(rates[2].bytesPerUs, kNic / 2);
  // A slower PCIe caps the flow below the NIC.
  Fabric slow = star(2);
  slow.pcieGBps = 20;
  EXPECT_DOUBLE_EQ(FabricNetwork(slow).shareLinks(std::vector<Flow>{{0, 1}})[0].bytesPerUs, 20000);
}

// Flows as a fluid (Fabric::fluid): shares are solved again whenever a message ends, so
// the one left on a shared link speeds up. One link of 100 B/us: a 200-byte and a 100-byte
// transfer each get 50; the short one ends at 2 us, and the long one's last 100 bytes run
// alone at 100: it ends at 3 us (its first share to the end would give 4). Striped: a
// 400-byte transfer over two flows (links 0 and 1) beside a 100-byte one on link 0 runs at
// 50 + 100 until 2 us, then 200: 2.5 us (3.33... at its first rates). Equal bytes: the first
// shares hold.
TEST(SimFabric, FluidFlowSpeedsUpWhenItsSharerEnds) {
  const double capacity[] = {100, 100};
  {
    const int links[] = {0, 0};
    const size_t begin[] = {0, 1, 2};
    const int transfer[] = {0, 1};
    const double bytes[] = {200, 100};
    const std::vector<double> t = maxMinFinish(links, begin, capacity, transfer, bytes);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_DOUBLE_EQ(t[0], 3);
    EXPECT_DOUBLE_EQ(t[1], 2);
    const double same[] = {100, 100};
    EXPECT_EQ(maxMinFinish(links, begin, capacity, transfer, same), (std::vector<double>{2, 2}));
  }
  {
    const int links[] = {0, 1, 0};
    const size_t begin[] = {0, 1, 2, 3};
    const int transfer[] = {0, 0, 1};
    const double bytes[] = {400, 100};
    const std::vector<double> t = maxMinFinish(links, begin, capacity, transfer, bytes);
    EXPECT_DOUBLE_EQ(t[0], 2.5);
    EXPECT_DOUBLE_EQ(t[1], 2);
  }
}

// Shares are solved again only in the components (flows joined by shared links) where a
// transfer ended; the others keep theirs. Links 0, 1, 2 of 100 B/us. Component A: 200 and
// 100 bytes on link 0. Component B, a chain: 100 bytes on link 1, 300 on links 1 and 2,
// 200 on link 2. At 2 us the 100-byte ones end (one in each); A's 200 alone ends at 3; B
// keeps 50 and 50 through that (not solved again: nothing of B ended) until its 200 ends at
// 4, then its 300 alone runs at 100 to 5.
TEST(SimFabric, FluidSolvesAgainOnlyWhereATransferEnded) {
  const double capacity[] = {100, 100, 100};
  const int links[] = {0, 0, 1, 1, 2, 2};
  const size_t begin[] = {0, 1, 2, 3, 5, 6};
  const int transfer[] = {0, 1, 2, 3, 4};
  const double bytes[] = {200, 100, 100, 300, 200};
  EXPECT_EQ(maxMinFinish(links, begin, capacity, transfer, bytes),
            (std::vector<double>{3, 2, 2, 5, 4}));
}

// The same on the fabric and in the replay: nodes 0 and 2 send 2 MB and 1 MB into node 1
// at once (one step, one NIC down): 25,000 B/us each until the 1 MB message ends (40 us),
// then the 2 MB one's last MB alone at 50,000: it ends at 60 us, not 80. With fluid 0
// (each message keeps its first share) 80.
TEST(SimFabric, FluidFlowSpeedsUpOnTheFabricAndInTheReplay) {
  using namespace steps;
  for (bool fluid : {true, false}) {
    Fabric f = star(4);
    f.fluid = fluid;
    FabricNetwork net(f);
    auto rates = net.shareLinks(std::vector<Flow>{{0, 1, 2e6}, {2, 1, 1e6}, {3, 0, 1e6}});
    EXPECT_DOUBLE_EQ(rates[0].bytesPerUs, fluid ? kNic * 2 / 3 : kNic / 2);
    EXPECT_DOUBLE_EQ(rates[1].bytesPerUs, kNic / 2);
    EXPECT_DOUBLE_EQ(rates[2].bytesPerUs, kNic);
    std::vector<Schedule> s(4);
    send(s[0], 1, in(0, 2000000));
    send(s[2], 1, in(0, 1000000));
    recv(s[1], 0, out(0, 2000000));
    recv(s[1], 2, out(2000000, 1000000));
    const ReplayResult r = replay(s, 1, net);
    ASSERT_FALSE(r.deadlock);
    // Wire: 2,000,032 bytes (with the call's header); latency NIC 4 + one switch 0.5;
    // overhead 0.2 at each end; within 0.5 us (the receives' own terms: their last slice).
    const double wire = fluid ? 1000032 / (kNic / 2) + 1000000 / kNic : 2000032 / (kNic / 2);
    EXPECT_NEAR(r.micros, wire + f.nicLatencyUs + f.hopLatencyUs + 2 * f.overheadUs, 0.5)
        << "fluid " << fluid;
  }
}

// Two leaves of 8 one-GPU nodes: 8 uplinks per leaf at the NIC rate. Leaf 0's nodes send
// to leaf 1's: ECMP hashing puts some flows on the same uplink (collisions), so the
// slowest flow falls to half or less of the NIC; striping each transfer over 16 QPs
// spreads the load and brings the slowest back near the NIC rate. No flow ever exceeds
// the NIC, and no uplink carries more than its capacity.
TEST(SimFabric, EcmpCollisionsAndStriping) {
  Fabric f = star(16);
  f.leafNodes = 8;
  f.podLeaves = 2;
  std::vector<Flow> flows;
  for (int i = 0; i < 8; ++i) flows.push_back({i, 8 + i});
  auto slowest = [&](int qps) {
    f.qps = qps;
    auto rates = FabricNetwork(f).shareLinks(flows);
    double total = 0, low = kNic;
    for (auto& r : rates) {
      EXPECT_LE(r.bytesPerUs, kNic * (1 + 1e-12));
      total += r.bytesPerUs;
      low = std::min(low, r.bytesPerUs);
    }
    EXPECT_LE(total, 8 * kNic * (1 + 1e-12));
    return low;
  };
  const double one = slowest(1), sixteen = slowest(16);
  EXPECT_LE(one, kNic / 2 * (1 + 1e-12)) << "seed 1 hashes at least two flows together";
  EXPECT_GT(sixteen, one);
  EXPECT_GT(sixteen, 0.6 * kNic);
  // Latency: NIC + three switches (leaf, spine, leaf) vs one within a leaf.
  auto far = FabricNetwork(f).shareLinks(std::vector<Flow>{{0, 8}})[0];
  auto near = FabricNetwork(f).shareLinks(std::vector<Flow>{{0, 1}})[0];
  EXPECT_DOUBLE_EQ(far.latencyUs, f.nicLatencyUs + 3 * f.hopLatencyUs);
  EXPECT_DOUBLE_EQ(near.latencyUs, f.nicLatencyUs + 1 * f.hopLatencyUs);
}

// Two pods joined at 1:4: all of pod 0 sending to pod 1 at once gets a quarter of the NIC
// rate on average (exactly the core's capacity in total).
TEST(SimFabric, CoreOversubscriptionLimitsCrossPodTraffic) {
  Fabric f = star(16);
  f.leafNodes = 4;
  f.podLeaves = 2;
  f.coreOversub = 4;
  f.qps = 64;  // spread evenly, so only the capacity counts
  std::vector<Flow> flows;
  for (int i = 0; i < 8; ++i) flows.push_back({i, 8 + i});
  double total = 0;
  for (auto& r : FabricNetwork(f).shareLinks(flows)) total += r.bytesPerUs;
  EXPECT_NEAR(total, 8 * kNic / 4, 1e-6 * kNic);
}

// NCCL's published ring all-reduce on 8 H100 (~370 GB/s busbw) against the model of one
// DGX H100 node: NVLink 450 GB/s per direction at LL128's 120/128 payload. Within 15%.
TEST(SimFabric, EightH100RingBusBandwidthNearPublished) {
  const Fabric f = presetFabric("dgx-h100", 1);
  FabricNetwork net(f);
  const Algorithm* ring = findAlgorithm(Collective::AllReduce, "ring");
  ASSERT_NE(ring, nullptr);
  const size_t count = size_t{1} << 28;  // 1 GiB of floats
  const SimResult r = simulate(*ring, Collective::AllReduce, 8, count, 4, net);
  const double busbw = count * 4.0 / r.micros / 1000 * 2 * 7 / 8;  // GB/s
  EXPECT_NEAR(busbw, 370, 0.15 * 370) << busbw;
  EXPECT_LT(busbw, 450 * f.efficiency);  // never above the link
}

TEST(SimFabric, FabricFileOverridesAPresetAndNamesBadLines) {
  const Fabric f = parseFabric("preset meta-roce  # Llama 3's\nnodes 64\nqps 16\nrails 1\n", "t");
  EXPECT_EQ(f.name, "meta-roce");
  EXPECT_EQ(f.nodes, 64);
  EXPECT_EQ(f.qps, 16);
  EXPECT_TRUE(f.rails);
  EXPECT_EQ(f.coreOversub, 7);
  auto error = [](const char* text) {
    try {
      parseFabric(text, "t");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Result::InvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("nodes 4\nwarp_drive 9\n").find("t:2: unknown key 'warp_drive'"),
            std::string::npos);
  EXPECT_NE(error("nodes four\n").find("t:1: bad value"), std::string::npos);
  EXPECT_NE(error("nodes 0\n").find(">= 1"), std::string::npos);
  EXPECT_NE(error("preset nowhere\n").find("unknown fabric preset"), std::string::npos);
  for (const std::string& name : fabricPresets()) EXPECT_GE(presetFabric(name).gpus(), 8);
  EXPECT_EQ(presetFabric("meta-roce").gpus(), 24576);
}

// A test bed's ranks share the host's cores: 6 ranks on 2 cores get a third of one core's
// reduce and copy rates each (the fabric and the tuner's view alike); 8 cores: all of it.
TEST(SimFabric, HostCoresAreSharedByAllRanks) {
  const char* bed = "nodes 3\ngpus_per_node 2\nnics_per_node 1\nreduce_gbps 24\ncopy_gbps 36\n";
  const Fabric shared = parseFabric(std::string(bed) + "host_cores 2\n", "t");
  const FabricNetwork net(shared);
  EXPECT_DOUBLE_EQ(net.reduceBytesPerUs(), 24000.0 / 3);
  EXPECT_DOUBLE_EQ(net.copyBytesPerUs(), 36000.0 / 3);
  EXPECT_DOUBLE_EQ(tunerLinks(shared).inter.reduceBytesPerUs, 24000.0 / 3);
  EXPECT_DOUBLE_EQ(
      FabricNetwork(parseFabric(std::string(bed) + "host_cores 8\n", "t")).reduceBytesPerUs(),
      24000.0);
  EXPECT_DOUBLE_EQ(FabricNetwork(parseFabric(bed, "t")).copyBytesPerUs(), 36000.0);
  EXPECT_THROW(parseFabric("host_cores -1\n", "t"), Error);
}

// The bed's overhead, measured at one share of a core and charged at the call's (6 ranks on
// 2 cores: a third): overhead_us 10 measured at half a core is 15 us in a call, in the
// fabric's replay and in the tuner's classes alike (one formula, LinkModel::callOverheadUs).
TEST(SimFabric, OverheadIsChargedAtTheCallsShareLikeTheTuner) {
  using namespace steps;
  const std::string bed = "nodes 3\ngpus_per_node 2\nnics_per_node 1\nhost_cores 2\n";
  const Fabric measured = parseFabric(bed + "overhead_us 10\noverhead_share 0.5\n", "t");
  const Fabric fifteen = parseFabric(bed + "overhead_us 15\n", "t");
  const Fabric asGiven = parseFabric(bed + "overhead_us 10\n", "t");
  EXPECT_DOUBLE_EQ(tunerLinks(measured).intra.callOverheadUs(), 15);
  EXPECT_DOUBLE_EQ(tunerLinks(measured).inter.callOverheadUs(), 15);
  EXPECT_DOUBLE_EQ(tunerLinks(asGiven).inter.callOverheadUs(), 10);
  // One message within a node and one between nodes.
  std::vector<Schedule> s(6);
  send(s[0], 1, in(0, 64));
  recv(s[1], 0, out(0, 64));
  send(s[2], 4, in(0, 64));
  recv(s[4], 2, out(0, 64));
  auto replayed = [&](const Fabric& f) {
    FabricNetwork net(f);
    return replay(s, 1, net).micros;
  };
  EXPECT_DOUBLE_EQ(replayed(measured), replayed(fifteen));
  EXPECT_NEAR(replayed(measured) - replayed(asGiven), 2 * 5, 1e-9);  // 5 us more at each end
  EXPECT_DOUBLE_EQ(replaySchedules(s, 1, tunerLinks(measured).intra).micros,
                   replaySchedules(s, 1, tunerLinks(fifteen).intra).micros);
  EXPECT_NE(measured.describe().find("10.000 us measured at 0.500 of a core: 15.000 us"),
            std::string::npos);
  EXPECT_THROW(parseFabric("overhead_share 2\n", "t"), Error);
}

// Per-packet framing (nic_packet_payload_bytes, nic_packet_header_bytes): the netns bed's
// TCP segments carry 1448 bytes and the shaper counts 1514 (Ethernet 14, IPv4 20, TCP 20 and
// timestamps 12), so a message of 1,448,000 bytes (1,448,032 on the wire with the call's
// header) between nodes at 1 Gb/s takes 1,448,032 x 1514 / 1448 / 125 = 12,112.2677 us
// (11,584.256 unframed), in the fabric's replay and in the tuner's classes alike; the
// shaper's bucket still empties in its framed bytes' time.
TEST(SimFabric, PacketFramingSlowsTheNicToItsPayloadRate) {
  using namespace steps;
  const std::string bed =
      "nodes 2\ngpus_per_node 1\nnics_per_node 1\nnic_gbps 1\nefficiency 1\npcie_gbps 1000\n"
      "nic_latency_us 0\nhop_latency_us 0\noverhead_us 0\n";
  const Fabric framed =
      parseFabric(bed + "nic_packet_payload_bytes 1448\nnic_packet_header_bytes 66\n", "t");
  const Fabric plain = parseFabric(bed, "t");
  EXPECT_DOUBLE_EQ(framed.nicPayloadShare(), 1448.0 / 1514);
  EXPECT_DOUBLE_EQ(plain.nicPayloadShare(), 1);
  std::vector<Schedule> s(2);
  send(s[0], 1, in(0, 1448000 / 4));  // floats
  recv(s[1], 0, out(0, 1448000 / 4));
  auto replayed = [&](const Fabric& f) {
    FabricNetwork net(f);
    return replay(s, 4, net).micros;
  };
  EXPECT_NEAR(replayed(framed), 1448032.0 * 1514 / 1448 / 125, 1e-6);
  EXPECT_NEAR(replayed(plain), 1448032.0 / 125, 1e-6);
  EXPECT_NEAR(replaySchedules(s, 4, tunerLinks(framed).inter).micros - replayed(framed), 0, 1e-6);
  EXPECT_NEAR(FabricNetwork(parseFabric(bed + "nic_burst_bytes 1514000\nnic_packet_payload_bytes "
                                              "1448\nnic_packet_header_bytes 66\n",
                                        "t"))
                  .nicBurstUs(),
              12112, 1e-6);
  // The presets: IB 4096 + 26 (LRH, BTH, ICRC, VCRC), RoCE v2 4096 + 82.
  EXPECT_DOUBLE_EQ(presetFabric("dgx-h100").nicPayloadShare(), 4096.0 / 4122);
  EXPECT_DOUBLE_EQ(presetFabric("meta-ib").nicPayloadShare(), 4096.0 / 4122);
  EXPECT_DOUBLE_EQ(presetFabric("meta-roce").nicPayloadShare(), 4096.0 / 4178);
  EXPECT_NE(framed.describe().find("1448 payload + 66 header bytes: payload at 0.9564"),
            std::string::npos)
      << framed.describe();
  EXPECT_THROW(parseFabric("nic_packet_header_bytes 66\n", "t"), Error);
}

}  // namespace
}  // namespace chorus::sim
