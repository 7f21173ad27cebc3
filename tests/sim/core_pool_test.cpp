// The host's cores as a pool in the one replay (LinkModel::poolCores, fabric key core_pool):
// C cores shared by R ranks (C < R); a rank's CPU work takes one of them, first come first
// served, and runs there at a whole core: C / R of its cost at the call's share. So a rank
// alone runs at a whole core, and all R busy at once take as long as at the call's share.
// Hand-worked times: 4 ranks on 2 cores (C / R = 1/2), 10 us latency, 1000 B/us, o 2 us and
// copies at 1000 B/us at the call's share (1 us and 2000 B/us at a whole core).
#include "algorithms/steps.hpp"
#include "chorus/chorus.hpp"
#include "sim/choose.hpp"
#include "sim/fabric.hpp"
#include "sim/fabric_network.hpp"
#include "sim/replay.hpp"
#include "sim/simulate.hpp"
#include "tuner/cost_model.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace chorus::sim {
namespace {

using namespace steps;

const double kFree = std::numeric_limits<double>::infinity();

LinkModel twoCoresLink() {
  LinkModel link{10, 1000, kFree, 1000, 2};
  link.poolCores = 2;
  return link;
}

LinkModel withoutPool(LinkModel link) {
  link.poolCores = 0;
  return link;
}

// Rank 0 sends 8 B to rank 1 while ranks 2 and 3 copy 40,000 B each.
std::vector<Schedule> aMessageBesideTwoCopies() {
  std::vector<Schedule> s(4);
  send(s[0], 1, in(0, 2));
  recv(s[1], 0, out(0, 2));
  copy(s[2], in(0, 10000), out(0, 10000));
  copy(s[3], in(0, 10000), out(0, 10000));
  return s;
}

// The 4 ranks' replay on `net` (uncompressed), its step times in `timeline`.
double replayTimed(const std::vector<Schedule>& s, NetworkModel& net,
                   std::vector<StepTime>& timeline) {
  return replay(s, 4, net, 0, kPipelineSliceBytes, Symmetry::Shift, 0, &timeline).micros;
}

// The timeline's entry for `rank`'s step `step`.
StepTime stepOf(const std::vector<StepTime>& timeline, int rank, int step) {
  for (const StepTime& t : timeline)
    if (t.rank == rank && t.step == step) return t;
  ADD_FAILURE() << "no step " << step << " of rank " << rank;
  return {};
}

// Rank 0 copies 4000 B, the others do nothing: 4 us at the call's share; with the pool it
// holds a core alone, 2 us. The busy-port bound (sim/choose.hpp) charges it alike.
TEST(SimCorePool, ARankAloneRunsAtAWholeCore) {
  std::vector<Schedule> s(4);
  copy(s[0], in(0, 1000), out(0, 1000));
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, withoutPool(twoCoresLink())).micros, 4);
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, twoCoresLink()).micros, 2);
  LinkClassNetwork pooled(4, twoCoresLink()), own(4, withoutPool(twoCoresLink()));
  EXPECT_DOUBLE_EQ(busyLowerBound(s[0], 0, 4, 4, pooled), 2);
  EXPECT_DOUBLE_EQ(busyLowerBound(s[0], 0, 4, 4, own), 4);
}

// Every rank copies 4000 B at once: ranks 0 and 1 hold the two cores 0-2 us, ranks 2 and 3
// wait for them and run 2-4 us: 4 us, what every rank at the call's share takes. Three
// busy ranks: the third waits too (4 us).
TEST(SimCorePool, AllBusyTakeTheCallsShare) {
  std::vector<Schedule> s(4);
  for (int r = 0; r < 4; ++r) copy(s[r], in(0, 1000), out(0, 1000));
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, withoutPool(twoCoresLink())).micros, 4);
  LinkClassNetwork net(4, twoCoresLink());
  std::vector<StepTime> timeline;
  EXPECT_DOUBLE_EQ(replayTimed(s, net, timeline), 4);
  const double starts[] = {0, 0, 2, 2};
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(stepOf(timeline, r, 0).start, starts[r]) << "rank " << r;
    EXPECT_DOUBLE_EQ(stepOf(timeline, r, 0).finish, starts[r] + 2) << "rank " << r;
  }
  s[3].steps.clear();
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, twoCoresLink()).micros, 4);
}

// Rank 0 sends 8 B to rank 1 (40 B with the call's header: 0.040 us on the wire) while
// ranks 2 and 3 copy 40,000 B each. Own CPUs: the copies take 40 us, the message is sent by
// 2.040 (o 2 + wire) and received at 2.040 + L 10 + o 2 = 14.040. Pool: the copies hold
// both cores 0-20 us; the send (a port, no core) is through at 1.040 (o 1 + wire), but the
// receive, ready at 10, waits for a core until 20 and takes its o 1 there: 21.
TEST(SimCorePool, AMessageWaitsForItsReceiversTurnOnACore) {
  const std::vector<Schedule> s = aMessageBesideTwoCopies();
  for (const bool pool : {false, true}) {
    LinkClassNetwork net(4, pool ? twoCoresLink() : withoutPool(twoCoresLink()));
    std::vector<StepTime> timeline;
    const double micros = replayTimed(s, net, timeline);
    const StepTime received = stepOf(timeline, 1, 0);
    if (pool) {
      EXPECT_DOUBLE_EQ(micros, 21);
      EXPECT_DOUBLE_EQ(received.start, 20);
      EXPECT_DOUBLE_EQ(received.finish, 21);
      EXPECT_NEAR(stepOf(timeline, 0, 0).finish, 1.040, 1e-12);
    } else {
      EXPECT_DOUBLE_EQ(micros, 40);
      EXPECT_NEAR(received.finish, 14.040, 1e-12);
    }
  }
}

// With o kept at the call's share (LinkModel::poolOverheadAtCallShare) the copies still
// run at a whole core (20 us on the two cores) and the receive still waits for a core, but
// every o is 2 us: the send is through at 2.040 and the receive holds a core 20-22.
TEST(SimCorePool, OverheadKeptAtTheCallsShare) {
  const std::vector<Schedule> s = aMessageBesideTwoCopies();
  LinkModel link = twoCoresLink();
  link.poolOverheadAtCallShare = true;
  LinkClassNetwork net(4, link);
  EXPECT_TRUE(net.corePool(4).overheadAtCallShare);
  std::vector<StepTime> timeline;
  EXPECT_DOUBLE_EQ(replayTimed(s, net, timeline), 22);
  EXPECT_NEAR(stepOf(timeline, 0, 0).finish, 2.040, 1e-12);
  EXPECT_DOUBLE_EQ(stepOf(timeline, 1, 0).start, 20);
  EXPECT_DOUBLE_EQ(stepOf(timeline, 2, 0).finish, 20);
  // The bound: the copy at a whole core, the o as given (the receiver's ingress: o 2 and
  // 8 B at 1000 B/us, the header left out).
  LinkClassNetwork alone(4, link);
  EXPECT_NEAR(busyLowerBound(s[1], 1, 4, 4, alone), 2.008, 1e-12);
  EXPECT_DOUBLE_EQ(busyLowerBound(s[2], 2, 4, 4, alone), 20);
}

// The same with TCP's copies on the CPU (40 B/us at the call's share: 1 us a message at
// each end, 0.5 at a whole core). Own CPUs: the sender's copy ends at 1, the send at 2.040,
// the receive (o 2 + copy 1) at 2.040 + 10 + 3 = 15.040. Pool: the sender's copy waits for a
// core until 20 (20.5), so the message is through at 20.5; the receive's o 1 + copy 0.5
// take the other core 20-21.5, and it completes at 20.5 + 10 + 1.5 = 32.
TEST(SimCorePool, TheSendersTransportCopyTakesACore) {
  const std::vector<Schedule> s = aMessageBesideTwoCopies();
  LinkModel link = twoCoresLink();
  link.transportBytesPerUs = 40;
  for (const bool pool : {false, true}) {
    LinkClassNetwork net(4, pool ? link : withoutPool(link));
    std::vector<StepTime> timeline;
    const double micros = replayTimed(s, net, timeline);
    if (pool) {
      EXPECT_NEAR(micros, 32, 1e-12);
      EXPECT_NEAR(stepOf(timeline, 0, 0).finish, 20.5, 1e-12);
      EXPECT_DOUBLE_EQ(stepOf(timeline, 1, 0).start, 20);
    } else {
      EXPECT_DOUBLE_EQ(micros, 40);
      EXPECT_NEAR(stepOf(timeline, 1, 0).finish, 15.040, 1e-12);
    }
  }
}

// A pool couples every rank, so no map keeps it: the networks declare none (period nranks,
// no xor, no turn) and simulate() replays in full; replay() refuses to compress it. With
// as many cores as ranks there is no pool and compression is as before.
TEST(SimCorePool, NoSymmetryMapKeepsAPool) {
  const Algorithm* ring = findAlgorithm(Collective::AllReduce, "ring");
  ASSERT_NE(ring, nullptr);
  LinkClassNetwork pooled(8, twoCoresLink()), own(8, withoutPool(twoCoresLink()));
  EXPECT_EQ(pooled.poolCores(8), 2);
  EXPECT_EQ(pooled.period(8), 8);
  EXPECT_FALSE(pooled.xorSymmetric(1, 8));
  EXPECT_EQ(own.period(8), 1);
  EXPECT_EQ(LinkClassNetwork(2, twoCoresLink()).poolCores(2), 0);
  EXPECT_EQ(LinkClassNetwork(2, twoCoresLink()).period(2), 1);
  const SimResult full = simulate(*ring, Collective::AllReduce, 8, 8192, 4, pooled);
  EXPECT_EQ(full.period, 8);
  EXPECT_EQ(full.replayed, full.steps);
  EXPECT_FALSE(full.deadlock);
  EXPECT_EQ(simulate(*ring, Collective::AllReduce, 8, 8192, 4, own).period, 1);
  const Schedule one = ring->build({Collective::AllReduce, 0, 8, 8192, 0, nullptr});
  EXPECT_TRUE(replay(std::span(&one, 1), 4, pooled, 8).deadlock);
  EXPECT_FALSE(replay(std::span(&one, 1), 4, own, 8).deadlock);

  const std::string bed =
      "nodes 3\ngpus_per_node 2\nnics_per_node 1\nhost_cores 2\ncopy_gbps 1\nreduce_gbps 1\n";
  FabricNetwork fabricPooled(parseFabric(bed + "core_pool 1\n", "t")),
      fabricOwn(parseFabric(bed, "t"));
  EXPECT_EQ(fabricPooled.poolCores(6), 2);
  EXPECT_EQ(fabricPooled.period(6), 6);
  EXPECT_EQ(fabricPooled.rotationUnit(6), 0);
  EXPECT_EQ(fabricOwn.poolCores(6), 0);
  EXPECT_EQ(fabricOwn.period(6), 2);
  EXPECT_EQ(simulate(*ring, Collective::AllReduce, 6, 6144, 4, fabricPooled).period, 6);
  EXPECT_EQ(simulate(*ring, Collective::AllReduce, 6, 6144, 4, fabricOwn).period, 2);
}

// chorus-sim's fabric takes it as core_pool 1 (off by default), through the tuner's classes
// (one formula): 6 ranks on 2 cores, copy_gbps 1: a rank's copy at the call's share 1/3 GB/s,
// 4000 B in 12 us; with the pool 4 us alone, and 12 us when all six copy (three turns of two).
TEST(SimCorePool, TheFabricTakesItLikeTheTuner) {
  const std::string bed =
      "nodes 3\ngpus_per_node 2\nnics_per_node 1\nhost_cores 2\ncopy_gbps 1\nreduce_gbps 1\n";
  EXPECT_FALSE(parseFabric(bed, "t").corePool);
  const Fabric f = parseFabric(bed + "core_pool 1\n", "t");
  EXPECT_DOUBLE_EQ(tunerLinks(f).intra.poolCores, 2);
  EXPECT_DOUBLE_EQ(tunerLinks(f).inter.poolCores, 2);
  EXPECT_DOUBLE_EQ(tunerLinks(parseFabric(bed, "t")).intra.poolCores, 0);
  EXPECT_NE(f.describe().find("the host's 2 cores a pool"), std::string::npos) << f.describe();
  const Fabric callShareO = parseFabric(bed + "core_pool 1\npool_overhead_at_call_share 1\n", "t");
  EXPECT_TRUE(tunerLinks(callShareO).intra.poolOverheadAtCallShare);
  EXPECT_TRUE(FabricNetwork(callShareO).corePool(6).overheadAtCallShare);
  EXPECT_FALSE(FabricNetwork(f).corePool(6).overheadAtCallShare);
  EXPECT_NE(callShareO.describe().find("(o and g at the call's share)"), std::string::npos);
  std::vector<Schedule> s(6);
  copy(s[0], in(0, 1000), out(0, 1000));
  FabricNetwork fabric(f), own(parseFabric(bed, "t"));
  LinkClassNetwork tuner(6, tunerLinks(f).intra);
  EXPECT_NEAR(replay(s, 4, own).micros, 12, 1e-9);
  EXPECT_NEAR(replay(s, 4, fabric).micros, 4, 1e-9);
  EXPECT_NEAR(replay(s, 4, tuner).micros, 4, 1e-9);
  for (int r = 1; r < 6; ++r) copy(s[r], in(0, 1000), out(0, 1000));
  EXPECT_NEAR(replay(s, 4, fabric).micros, 12, 1e-9);
  EXPECT_NEAR(replay(s, 4, tuner).micros, 12, 1e-9);
}

// A waiting rank keeps its core, yielding, for the engine's spin (LinkModel::poolSpinUs):
// work that takes that core shares it with the yielder (half of it) until the spin ends.
// Ranks 0 and 1 copy 2000 B (1 us at a whole core) on the two cores 0-1 and then wait,
// yielding there; ranks 2 and 3 wait for the cores and copy 4000 B (2 us at a whole core)
// from 1. Spin 100 us: each shares its core with a yielder for the whole copy, 1-5: 5 us
// (3 with the cores freed at once, 4 at the call's share). Spin 2 us: half of it until 3,
// then the rest at a whole core: 1 + 2 x 1 + 1 = 4.
TEST(SimCorePool, AWaitingRankSharesItsCore) {
  std::vector<Schedule> s(4);
  for (int r = 0; r < 2; ++r) copy(s[r], in(0, 500), out(0, 500));
  for (int r = 2; r < 4; ++r) copy(s[r], in(0, 1000), out(0, 1000));
  LinkModel link = twoCoresLink();
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, link).micros, 3);
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, withoutPool(link)).micros, 4);
  link.poolSpinUs = 100;
  EXPECT_EQ(LinkClassNetwork(4, link).corePool(4).spinUs, 100);
  LinkClassNetwork net(4, link);
  std::vector<StepTime> timeline;
  EXPECT_DOUBLE_EQ(replayTimed(s, net, timeline), 5);
  for (int r = 2; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(stepOf(timeline, r, 0).start, 1) << "rank " << r;
    EXPECT_DOUBLE_EQ(stepOf(timeline, r, 0).finish, 5) << "rank " << r;
  }
  link.poolSpinUs = 2;
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, link).micros, 4);
  // Without a pool the spin changes nothing.
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, withoutPool(link)).micros, 4);
}

// A rank's own wait does not slow its own next work: rank 0 copies 2000 B twice (1 us each
// at a whole core), the second on the core it yields on: 2 us, as with the cores freed at
// once (4 at the call's share).
TEST(SimCorePool, ARanksOwnWaitDoesNotSlowItsNextWork) {
  std::vector<Schedule> s(4);
  copy(s[0], in(0, 500), out(0, 500));
  copy(s[0], in(0, 500), out(500, 500));
  LinkModel link = twoCoresLink();
  link.poolSpinUs = 100;
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, link).micros, 2);
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, withoutPool(link)).micros, 4);
}

// chorus-sim's fabric: pool_waiters_spin 1 with core_pool 1 takes the engine's spin where
// ranks outnumber cores (kOversubscribedSpin, 200 us), in the fabric and the tuner's classes
// alike; without core_pool, none.
TEST(SimCorePool, TheFabricTakesTheEnginesSpin) {
  const std::string bed =
      "nodes 3\ngpus_per_node 2\nnics_per_node 1\nhost_cores 2\ncopy_gbps 1\nreduce_gbps 1\n";
  const Fabric spin = parseFabric(bed + "core_pool 1\npool_waiters_spin 1\n", "t");
  EXPECT_DOUBLE_EQ(spin.poolSpinUs(), 200);
  EXPECT_DOUBLE_EQ(tunerLinks(spin).intra.poolSpinUs, 200);
  EXPECT_DOUBLE_EQ(tunerLinks(spin).inter.poolSpinUs, 200);
  EXPECT_DOUBLE_EQ(FabricNetwork(spin).corePool(6).spinUs, 200);
  EXPECT_DOUBLE_EQ(parseFabric(bed + "pool_waiters_spin 1\n", "t").poolSpinUs(), 0);
  EXPECT_DOUBLE_EQ(parseFabric(bed + "core_pool 1\n", "t").poolSpinUs(), 0);
  EXPECT_NE(spin.describe().find("yielding, for the engine's spin"), std::string::npos)
      << spin.describe();
}

// Bound as the engine binds ranks that outnumber the cores (LinkModel::poolBoundCores: rank
// r on core r mod cores): ranks 0 and 2 copy 2000 B (1 us at a whole core each), ranks 1 and
// 3 do nothing. Any core: both at once, 1 us. Bound: both on core 0, rank 2 from 1 to 2
// (2 us, as at the call's share).
TEST(SimCorePool, ARankRunsOnItsBoundCore) {
  std::vector<Schedule> s(4);
  copy(s[0], in(0, 500), out(0, 500));
  copy(s[2], in(0, 500), out(0, 500));
  LinkModel link = twoCoresLink();
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, link).micros, 1);
  link.poolBoundCores = true;
  EXPECT_TRUE(LinkClassNetwork(4, link).corePool(4).bound);
  LinkClassNetwork net(4, link);
  std::vector<StepTime> timeline;
  EXPECT_DOUBLE_EQ(replayTimed(s, net, timeline), 2);
  EXPECT_DOUBLE_EQ(stepOf(timeline, 2, 0).start, 1);
  EXPECT_DOUBLE_EQ(replaySchedules(s, 4, withoutPool(link)).micros, 2);
  const std::string bed =
      "nodes 3\ngpus_per_node 2\nnics_per_node 1\nhost_cores 2\ncopy_gbps 1\nreduce_gbps 1\n";
  const Fabric f = parseFabric(bed + "core_pool 1\npool_bound_cores 1\n", "t");
  EXPECT_TRUE(tunerLinks(f).intra.poolBoundCores);
  EXPECT_TRUE(FabricNetwork(f).corePool(6).bound);
  EXPECT_FALSE(tunerLinks(parseFabric(bed + "pool_bound_cores 1\n", "t")).intra.poolBoundCores);
}

}  // namespace
}  // namespace chorus::sim
