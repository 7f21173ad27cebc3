// The tuner's link classes with a NIC shared by a node's ranks (LinkModel::nicBytesPerUs):
// the between-node messages of a step share their nodes' NICs max-min fairly (the fabric
// model's rule, sim/max_min.hpp), each at most its rank's port. Times worked out by hand:
// latency 10 us, 1 MB messages (+ the 32-byte call header), free local work.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"
#include "errors.hpp"
#include "sim/fabric_network.hpp"
#include "sim/max_min.hpp"
#include "sim/simulate.hpp"
#include "tuner/probe_figures.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <utility>

namespace chorus::sim {
namespace {

using namespace steps;

const double kFree = std::numeric_limits<double>::infinity();
const LinkModel kWithin{1, 10000, kFree, kFree, 0};

LinkModel between(double port, double nic) {
  LinkModel l{10, port, kFree, kFree, 0};
  l.nicBytesPerUs = nic;
  return l;
}

// Each (from, to) pair sends `bytes` once, all at once, on a layout of `nodes` x 2 ranks.
double replayPairs(int nodes, std::initializer_list<std::pair<int, int>> pairs,
                   const LinkModel& inter, size_t bytes = 1000000) {
  const Layout layout = Layout::uniform(nodes, 2);
  std::vector<Schedule> s(2 * nodes);
  for (auto [from, to] : pairs) {
    send(s[from], to, in(0, bytes));
    recv(s[to], from, out(0, bytes));
  }
  LinkClassNetwork net(2 * nodes, kWithin, &layout, &inter);
  const ReplayResult r = replay(s, 1, net);
  EXPECT_FALSE(r.deadlock);
  return r.micros;
}

TEST(SimSharedNic, NodesRanksShareTheirNicOutAndIn) {
  const LinkModel nic = between(1000, 1000);
  // One rank alone across: the whole NIC, 1000032 B / 1000 B/us + 10 us.
  EXPECT_NEAR(replayPairs(2, {{0, 2}}, nic), 1000.032 + 10, 1e-6);
  // Both ranks of node 0 at once: 500 B/us each out of node 0.
  EXPECT_NEAR(replayPairs(2, {{0, 2}, {1, 3}}, nic), 2000.064 + 10, 1e-6);
  // Into one node from two: node 2's NIC in is shared (nodes 0 and 1 each send one).
  EXPECT_NEAR(replayPairs(3, {{0, 4}, {2, 5}}, nic), 2000.064 + 10, 1e-6);
  // Out of and into different nodes: nothing shared.
  EXPECT_NEAR(replayPairs(3, {{0, 2}, {3, 5}}, nic), 1000.032 + 10, 1e-6);
  // Within a node the NIC is not used: 1000032 / 10000 + 1.
  EXPECT_NEAR(replayPairs(2, {{0, 1}, {2, 3}}, nic), 100.0032 + 1, 1e-6);
  // The port binds first (400 < 1000 / 2): 1000032 / 400 + 10.
  EXPECT_NEAR(replayPairs(2, {{0, 2}, {1, 3}}, between(400, 1000)), 2500.08 + 10, 1e-6);
  // No NIC (0): a port per rank, as before.
  EXPECT_NEAR(replayPairs(2, {{0, 2}, {1, 3}}, between(1000, 0)), 1000.032 + 10, 1e-6);
}

// Messages of different steps (ordinals) share the NIC too: rank 1's crossing message is
// its second (after one within the node), rank 0's its first, and they leave node 0 at
// once. The flow sharing sees one ordinal at a time (1000 B/us each); the NIC drains them
// one after the other at its 1000 B/us: 2 x 1000032 / 1000 + 10, not 1000.032 + 10.
TEST(SimSharedNic, MessagesOfDifferentStepsShareTheNic) {
  const Layout layout = Layout::uniform(2, 2);
  std::vector<Schedule> s(4);
  send(s[1], 0, in(0, 1000000));
  recv(s[0], 1, out(0, 1000000));
  send(s[1], 3, in(0, 1000000));
  recv(s[3], 1, out(0, 1000000));
  send(s[0], 2, in(0, 1000000));
  recv(s[2], 0, out(0, 1000000));
  const LinkModel inter = between(1000, 1000);
  LinkClassNetwork net(4, kWithin, &layout, &inter);
  const ReplayResult r = replay(s, 1, net);
  EXPECT_FALSE(r.deadlock);
  EXPECT_NEAR(r.micros, 2000.064 + 10, 1e-6);
  // Without the shared NIC each has its port: 1000.032 + 10.
  const LinkModel unshared = between(1000, 0);
  LinkClassNetwork ports(4, kWithin, &layout, &unshared);
  const ReplayResult p = replay(s, 1, ports);
  EXPECT_NEAR(p.micros, 1000.032 + 10, 1e-6);
}

// A shared rate is charged once: two nodes send into rank 0 at once (a fold's pattern).
// Node 0's NIC in gives each 500 B/us, so both take 2000.064 us on the wire, together;
// rank 0 takes them in at its own 1000 B/us, one after the other, done at 2000.064 too.
// Draining them at the shared 500 B/us one after the other gave 4000.128 + 10.
TEST(SimSharedNic, TheReceiverTakesSharedFlowsAtItsOwnRate) {
  EXPECT_NEAR(replayPairs(3, {{2, 0}, {4, 0}}, between(1000, 1000)), 2000.064 + 10, 1e-6);
}

// Messages through one NIC at one time, of different ordinals and at the same place in
// their schedules (the crossing send each rank's step 1, its receive step 2), drain in an
// order every symmetry map keeps (the lanes on the NIC), so compressed = full. 3 nodes x 2
// ranks, shift-symmetric: local 0 sends to the next node's local 1, local 1 (after a small
// message within its node: ordinal 1) to the node after's local 0; then local 1 copies
// 2 MB at 1000 B/us. Each node's NIC takes two messages at once, out and in: the one from
// lane 0 first (1000.032 us), the other after it (2000.064). Local 1's arrives first:
// 1000.032 + 10 + 2000 = 3010.032. Ordered by step index instead (rank numbers), the full
// replay drains node 0's NIC in the other way round (4010.064) and the compressed one not.
TEST(SimSharedNic, SimultaneousMessagesDrainInTheSameOrderCompressed) {
  const Layout layout = Layout::uniform(3, 2);
  std::vector<Schedule> s(6);
  for (int n = 0; n < 3; ++n) {
    const int next = 2 * ((n + 1) % 3), after = 2 * ((n + 2) % 3);
    recv(s[2 * n], 2 * n + 1, out(0, 8));
    send(s[2 * n], next + 1, in(0, 1000000));
    recv(s[2 * n], next + 1, out(0, 1000000));
    send(s[2 * n + 1], 2 * n, in(0, 8));
    send(s[2 * n + 1], after, in(0, 1000000));
    const int received = recv(s[2 * n + 1], after, out(0, 1000000));
    copy(s[2 * n + 1], in(0, 2000000), scratch(0, 2000000), false, received);
  }
  LinkModel within = kWithin;
  within.copyBytesPerUs = 1000;
  const LinkModel inter = between(1000, 1000);
  LinkClassNetwork fullNet(6, within, &layout, &inter), compressedNet(6, within, &layout, &inter);
  const ReplayResult full = replay(s, 1, fullNet);
  const ReplayResult compressed =
      replay(std::span(s).first(2), 1, compressedNet, 6, kPipelineSliceBytes, Symmetry::Shift);
  EXPECT_FALSE(full.deadlock);
  EXPECT_NEAR(full.micros, 3010.032, 1e-6);
  EXPECT_EQ(compressed.micros, full.micros);
  EXPECT_EQ(compressed.replayed * 3, full.replayed);
}

// Max-min, not equal shares: on a 300 link flows a and b; b also on a 100 link. b gets 100,
// a the 200 left.
TEST(SimSharedNic, MaxMinRatesFillProgressively) {
  const int links[] = {0, 0, 1};
  const size_t begin[] = {0, 1, 3};
  const double capacity[] = {300, 100};
  const std::vector<double> r = maxMinRates(links, begin, capacity);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0], 200);
  EXPECT_DOUBLE_EQ(r[1], 100);
}

// The between-node probe runs every pair at once: 2 ranks per node measured 65 B/us each,
// so the NIC carries 130 and one rank alone may use it all; replaying the probe's pattern
// (both ranks of node 0 send 256 KiB across at once) gives back 65 B/us each.
TEST(SimSharedNic, ProbeFigureMapsOntoTheSharedNic) {
  LinkModel inter = between(65, 0);
  nicFromProbe(inter, 2, 0);
  EXPECT_DOUBLE_EQ(inter.nicBytesPerUs, 130);
  EXPECT_DOUBLE_EQ(inter.bytesPerUs, 130);
  EXPECT_NEAR(replayPairs(2, {{0, 2}, {1, 3}}, inter, 256 << 10), (262144 + 32) / 65.0 + 10, 1e-6);
  EXPECT_NEAR(replayPairs(2, {{0, 2}}, inter, 256 << 10), (262144 + 32) / 130.0 + 10, 1e-6);
  // The line rate bounds the NIC: 2 x 80 > 125.
  inter = between(80, 0);
  nicFromProbe(inter, 2, 125);
  EXPECT_DOUBLE_EQ(inter.nicBytesPerUs, 125);
  EXPECT_DOUBLE_EQ(inter.bytesPerUs, 125);
}

// The shared NIC keeps compression exact: compressed (by node, by shift or xor) and full
// replays agree to the bit, on 4 nodes x 4 ranks.
TEST(SimSharedNic, CompressedReplayAgreesWithFull) {
  const Layout layout = Layout::uniform(4, 4);
  const LinkModel inter = between(1000, 1500);
  for (const char* name : {"ring", "rd", "rhd", "hier", "hier_rd"}) {
    const Algorithm* a = findAlgorithm(Collective::AllReduce, name);
    ASSERT_NE(a, nullptr) << name;
    SimOptions options;
    options.layout = &layout;
    LinkClassNetwork compressedNet(16, kWithin, &layout, &inter),
        fullNet(16, kWithin, &layout, &inter);
    const SimResult compressed =
        simulate(*a, Collective::AllReduce, 16, 1 << 20, 4, compressedNet, options);
    options.compress = false;
    const SimResult full = simulate(*a, Collective::AllReduce, 16, 1 << 20, 4, fullNet, options);
    EXPECT_LT(compressed.period, 16) << name;  // compressed indeed
    EXPECT_EQ(compressed.micros, full.micros) << name;
    EXPECT_FALSE(full.deadlock) << name;
  }
}

// The NIC slows what sends from every rank of a node at once across nodes: on 2 nodes x 4
// ranks with the NIC at one port's rate, rd (every rank crosses in its last steps) loses
// more than ring (one rank per node crosses in each step).
TEST(SimSharedNic, SharingSlowsWhatSendsFromEveryRankAtOnce) {
  const Layout layout = Layout::uniform(2, 4);
  auto micros = [&](const char* name, double nic) {
    const LinkModel inter = between(1000, nic);
    LinkClassNetwork net(8, kWithin, &layout, &inter);
    SimOptions options;
    options.layout = &layout;
    return simulate(*findAlgorithm(Collective::AllReduce, name), Collective::AllReduce, 8, 1 << 22,
                    4, net, options)
        .micros;
  };
  const double ringLoss = micros("ring", 1000) / micros("ring", 0);
  const double rdLoss = micros("rd", 1000) / micros("rd", 0);
  EXPECT_GT(rdLoss, 1.5);
  EXPECT_GT(rdLoss, ringLoss);
}

// A shaped NIC (tc tbf, the netns bed: nic_burst_bytes) banks its idle time and lets a
// message through at once from what it banked (the link under the shaper costs nothing
// here: no transport copies), timed in steady state (a call of many back to back). 2 nodes
// x 1 GPU, the NIC at 1 Gb/s (125 B/us), a bucket of 1.25 MB (10,000 us), latency and
// overheads 0. Rank 0 sends 124,968 B (+ the 32-byte header: 1,000 us at 125 B/us); rank 1
// then copies 3 MB at 1 GB/s (3,000 us, the NICs idle). Unshaped: 1,000 + 3,000 us.
// Shaped: the first call (empty buckets) also takes 4,000 us and leaves 3,000 us banked;
// from then on the message takes 1,000 us of what is banked (the buckets fill to their
// top, 2,000 us more each call) and the call 3,000 us.
// A NIC never idle banks nothing: the message alone, shaped or not, takes 1,000 us a call
// (the burst does not beat the rate in steady state; from a full bucket it would be 0).
TEST(SimSharedNic, AShapedNicLetsBankedBurstsThroughInSteadyState) {
  const std::string bed =
      "nodes 2\ngpus_per_node 1\nnics_per_node 1\nrails 0\nleaf_nodes 2\npod_leaves 1\n"
      "hop_latency_us 0\nnic_latency_us 0\nnvlink_latency_us 0\npcie_gbps 1000\n"
      "efficiency 1\nnic_gbps 1\noverhead_us 0\ncopy_gbps 1\nreduce_gbps 1\n";
  const Fabric unshaped = parseFabric(bed, "t");
  const Fabric shaped = parseFabric(bed + "nic_burst_bytes 1250000\n", "t");
  auto call = [](const Fabric& f, bool idle) {
    std::vector<Schedule> s(2);
    send(s[0], 1, in(0, 124968));
    const int received = recv(s[1], 0, out(0, 124968));
    if (idle) copy(s[1], in(0, 3000000), scratch(0, 3000000), false, received);
    FabricNetwork net(f);
    const ReplayResult r = replay(s, 1, net);
    EXPECT_FALSE(r.deadlock);
    return r.micros;
  };
  EXPECT_NEAR(call(unshaped, true), 4000, 1e-6);
  EXPECT_NEAR(call(shaped, true), 3000, 1e-6);
  EXPECT_NEAR(call(unshaped, false), 1000, 1e-6);
  EXPECT_NEAR(call(shaped, false), 1000, 1e-6);
  EXPECT_THROW(parseFabric("nic_burst_bytes -1\n", "t"), Error);
}

// A send pipelined behind its producer (a copy of its bytes, element by element) finishes
// no earlier than the copy plus its last slice (the whole message here: it is under the
// engine's 256 KiB slice), and that last slice passes the buckets too. Same bed: a
// 124,968-element copy at 1 GB/s (124.968 us), then the message (1,000 us at the NIC's
// rate). Unshaped: 124.968 + 1,000 us. Shaped, steady state: the NIC idles while the
// copy runs, banks those 124.968 us, and the message takes them at once: 1,000 us a call,
// the NIC's rate (charging the last slice its whole wire time gave 1,124.968 here too).
TEST(SimSharedNic, APipelinedSendsLastSlicePassesTheBucket) {
  const std::string bed =
      "nodes 2\ngpus_per_node 1\nnics_per_node 1\nrails 0\nleaf_nodes 2\npod_leaves 1\n"
      "hop_latency_us 0\nnic_latency_us 0\nnvlink_latency_us 0\npcie_gbps 1000\n"
      "efficiency 1\nnic_gbps 1\noverhead_us 0\ncopy_gbps 1\nreduce_gbps 1\n";
  auto call = [](const Fabric& f) {
    std::vector<Schedule> s(2);
    const int copied = copy(s[0], in(0, 124968), scratch(0, 124968));
    send(s[0], 1, scratch(0, 124968), copied);
    recv(s[1], 0, out(0, 124968));
    FabricNetwork net(f);
    const ReplayResult r = replay(s, 1, net);
    EXPECT_FALSE(r.deadlock);
    return r.micros;
  };
  EXPECT_NEAR(call(parseFabric(bed, "t")), 1124.968, 1e-6);
  EXPECT_NEAR(call(parseFabric(bed + "nic_burst_bytes 1250000\n", "t")), 1000, 1e-6);
}

// The shaper's drains keep compression exact: a bed of 4 nodes x 2 ranks (one shaped NIC
// each), every all-reduce that compresses on it, compressed = full to the bit.
TEST(SimSharedNic, ShapedNicsKeepCompressionExact) {
  const Fabric bed = parseFabric(
      "nodes 4\ngpus_per_node 2\nnics_per_node 1\nrails 0\nleaf_nodes 4\npod_leaves 1\n"
      "nic_gbps 1\nnvlink_gbps 1.2\npcie_gbps 1000\nefficiency 1\noverhead_us 10\n"
      "reduce_gbps 24\ncopy_gbps 40\nhost_cores 2\ntransport_gbps 2.2\n"
      "nic_burst_bytes 1250000\n",
      "t");
  const Layout layout = Layout::uniform(4, 2);
  for (const char* name : {"ring", "twoshot", "hier", "hier_rd", "hier_rhd"}) {
    const Algorithm* a = findAlgorithm(Collective::AllReduce, name);
    ASSERT_NE(a, nullptr) << name;
    for (size_t count : {16384u, 1u << 20}) {
      SimOptions options;
      options.layout = &layout;
      FabricNetwork compressedNet(bed), fullNet(bed);
      const SimResult compressed =
          simulate(*a, Collective::AllReduce, 8, count, 4, compressedNet, options);
      options.compress = false;
      const SimResult full = simulate(*a, Collective::AllReduce, 8, count, 4, fullNet, options);
      EXPECT_LT(compressed.period, 8) << name;
      EXPECT_EQ(compressed.micros, full.micros) << name << " " << count;
      EXPECT_FALSE(full.deadlock) << name;
    }
  }
}

}  // namespace
}  // namespace chorus::sim
