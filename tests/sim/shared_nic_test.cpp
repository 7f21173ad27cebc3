// The tuner's link classes with a NIC shared by a node's ranks (LinkModel::nicBytesPerUs):
// the between-node messages of a step share their nodes' NICs max-min fairly (the fabric
// model's rule, sim/max_min.hpp), each at most its rank's port. Times worked out by hand:
// latency 10 us, 1 MB messages (+ the 32-byte call header), free local work.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"
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

}  // namespace
}  // namespace chorus::sim
