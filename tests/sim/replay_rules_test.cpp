// The replay follows the engine's rules (algorithms/schedule_rules.hpp) on hand-built
// schedules whose times are worked out by hand: an empty step completes only once its
// `after` has (rule 3), messages are padded to 8 bytes and the call's 32-byte header goes
// with the first message of each queue (rule 5), and a lone Send/Recv is timed by the
// same replay. Link: 10 us latency, 1000 B/us, free local work, no per-message overhead
// unless stated.
#include "algorithms/steps.hpp"
#include "chorus/chorus.hpp"
#include "sim/fabric.hpp"
#include "sim/fabric_network.hpp"
#include "sim/replay.hpp"
#include "tuner/cost_model.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace chorus::sim {
namespace {

using namespace steps;

const double kFree = std::numeric_limits<double>::infinity();
const LinkModel kLink{10, 1000, kFree, kFree, 0};

double replayed(const std::vector<Schedule>& schedules, const LinkModel& link = kLink) {
  LinkClassNetwork net(static_cast<int>(schedules.size()), link);
  const ReplayResult r = replay(schedules, 1, net);
  EXPECT_FALSE(r.deadlock);
  return r.micros;
}

// Rank 0 forwards an empty step to rank 2 after a 1 MB receive from rank 1, then 8 bytes
// in the same queue. The 8 bytes wait for the empty step, which waits for the receive:
// (1e6 + 32 header) B / 1000 + 10 us, then (8 + 32) B / 1000 + 10 us.
std::vector<Schedule> emptyStepAfterAReceive() {
  std::vector<Schedule> s(3);
  const int received = recv(s[0], 1, out(0, 1000000));
  send(s[0], 2, out(0, 0), received);
  send(s[0], 2, in(0, 8));
  send(s[1], 0, in(0, 1000000));
  recv(s[2], 0, out(0, 8));
  return s;
}

TEST(SimReplayRules, EmptyStepWaitsForItsAfter) {
  const std::vector<Schedule> s = emptyStepAfterAReceive();
  EXPECT_NEAR(replayed(s), 1000.032 + 10 + 0.040 + 10, 1e-9);
}

// The same call with its timeline asked for: the same time, and every step's times as
// worked out above (rank 1's send holds its port 0..1000.032; rank 0's receive is done
// 10 us later; the empty step completes with it; the 8 bytes leave then, 0.040 us, and
// arrive 10 us later). What chorus-sim --timeline writes.
TEST(SimReplayRules, TimelineHoldsEveryStepsTimes) {
  const std::vector<Schedule> s = emptyStepAfterAReceive();
  LinkClassNetwork net(3, kLink);
  std::vector<StepTime> timeline;
  const ReplayResult r = replay(s, 1, net, 0, kPipelineSliceBytes, Symmetry::Shift, 0, &timeline);
  EXPECT_NEAR(r.micros, replayed(s), 1e-12);
  ASSERT_EQ(timeline.size(), 5u);
  auto at = [&](int rank, int step) -> const StepTime& {
    for (const StepTime& t : timeline)
      if (t.rank == rank && t.step == step) return t;
    ADD_FAILURE() << "no step " << step << " of rank " << rank;
    return timeline.front();
  };
  EXPECT_EQ(at(1, 0).kind, StepKind::Send);
  EXPECT_EQ(at(1, 0).peer, 0);
  EXPECT_EQ(at(1, 0).bytes, 1000000u);
  EXPECT_NEAR(at(1, 0).start, 0, 1e-9);
  EXPECT_NEAR(at(1, 0).finish, 1000.032, 1e-9);
  EXPECT_EQ(at(0, 0).kind, StepKind::Recv);
  EXPECT_NEAR(at(0, 0).finish, 1000.032 + 10, 1e-9);
  EXPECT_EQ(at(0, 1).after, 0);
  EXPECT_NEAR(at(0, 1).finish, 1000.032 + 10, 1e-9);
  EXPECT_NEAR(at(0, 2).start, 1000.032 + 10, 1e-9);
  EXPECT_NEAR(at(0, 2).finish, 1000.032 + 10 + 0.040, 1e-9);
  EXPECT_NEAR(at(2, 0).finish, r.micros, 1e-9);
  EXPECT_NEAR(r.micros, 1000.032 + 10 + 0.040 + 10, 1e-9);
}

// Two 5-byte messages on one queue: 8 + 32 bytes, then 8 bytes, then the latency.
TEST(SimReplayRules, MessagesArePaddedAndTheFirstCarriesTheCallHeader) {
  std::vector<Schedule> s(2);
  send(s[0], 1, in(0, 5));
  send(s[0], 1, in(5, 5));
  recv(s[1], 0, out(0, 5));
  recv(s[1], 0, out(5, 5));
  EXPECT_NEAR(replayed(s), 0.040 + 0.008 + 10, 1e-9);
}

// A lone Send or Recv of 5 floats (20 B: 24 padded + 32 header) with 2 us overhead on each
// side: the same replay, not a formula of its own.
TEST(SimReplayRules, SendAndRecvAreReplayed) {
  const LinkModel link{10, 1000, kFree, kFree, 2};
  const double expected = 2 + 0.056 + 10 + 2;
  for (Collective c : {Collective::Send, Collective::Recv}) {
    const Algorithm* direct = findAlgorithm(c, "direct");
    ASSERT_NE(direct, nullptr);
    EXPECT_NEAR(predictMicros(*direct, c, 2, 5, 4, link), expected, 1e-9) << toString(c);
    EXPECT_EQ(predictMicros(*direct, c, 2, 0, 4, link), 0) << toString(c);
  }
}

// TCP's copies on the CPU: kLink with a transport at 500 B/us (slower than the 1000 B/us
// wire). A message of 1e6 B (+ 32 header) costs 2000.064 us of CPU at each end, on the
// CPU that also receives. Pipelining grain 1000 B: a slice costs 1/1000 of a step.
class TransportCpuNetwork final : public NetworkModel {
 public:
  int ports() const override { return links_.ports(); }
  double reduceBytesPerUs() const override { return kFree; }
  double copyBytesPerUs() const override { return kFree; }
  double transportBytesPerUs() const override { return 500; }
  MessageCost message(int from, int to, int ordinal, double bytes) const override {
    return links_.message(from, to, ordinal, bytes);
  }

 private:
  LinkClassNetwork links_{2, kLink};
};

double replayedOnTransport(const std::vector<Schedule>& s) {
  TransportCpuNetwork net;
  const ReplayResult r = replay(s, 1, net, 0, 1000);
  EXPECT_FALSE(r.deadlock);
  return r.micros;
}

// One way: the sender's copy (2000.064) while the wire sends, then the latency, then the
// receiver's copy of the last slice (2.000064).
TEST(SimReplayRules, TransportCopiesCostTheCpuAtBothEnds) {
  std::vector<Schedule> s(2);
  send(s[0], 1, in(0, 1000000));
  recv(s[1], 0, out(0, 1000000));
  EXPECT_NEAR(replayedOnTransport(s), 2000.064 + 10 + 2.000064, 1e-6);
}

// Both ways at once: each rank's CPU copies its send in, then the receive out, one after
// the other: twice the one-way copy (the wire alone would take 1000.032 + 10).
TEST(SimReplayRules, SendingAndReceivingAtOnceShareTheCpu) {
  std::vector<Schedule> s(2);
  send(s[0], 1, in(0, 1000000));
  recv(s[0], 1, out(0, 1000000));
  send(s[1], 0, in(0, 1000000));
  recv(s[1], 0, out(0, 1000000));
  EXPECT_NEAR(replayedOnTransport(s), 2 * 2000.064, 1e-6);
  EXPECT_NEAR(replayed(s), 1000.032 + 10, 1e-9);  // no transport cost: the wire's time
}

// The tuner's link classes carry the same cost (LinkModel::transportBytesPerUs, from the
// probe), charged by the same replay: the hand-worked times above through the tuner's path.
TEST(SimReplayRules, TunerLinkClassesChargeTheTransportCopies) {
  LinkModel link = kLink;
  link.transportBytesPerUs = 500;
  std::vector<Schedule> oneWay(2), bothWays(2);
  send(oneWay[0], 1, in(0, 1000000));
  recv(oneWay[1], 0, out(0, 1000000));
  EXPECT_NEAR(replaySchedules(oneWay, 1, link, 1000).micros, 2000.064 + 10 + 2.000064, 1e-6);
  for (int r = 0; r < 2; ++r) {
    send(bothWays[r], 1 - r, in(0, 1000000));
    recv(bothWays[r], 1 - r, out(0, 1000000));
  }
  EXPECT_NEAR(replaySchedules(bothWays, 1, link, 1000).micros, 2 * 2000.064, 1e-6);
  EXPECT_EQ(LinkClassNetwork(2, link).transportBytesPerUs(), 500);
}

// The fabric's keys: a rank's share of the host's cores counts the other tenants' load,
// and the transport rate is a core's rate at that share.
TEST(SimReplayRules, FabricTransportAtTheRanksShareOfTheHost) {
  const Fabric f =
      parseFabric("nodes 1\ngpus_per_node 2\nhost_cores 2\nhost_load 6\ntransport_gbps 2\n");
  EXPECT_DOUBLE_EQ(f.cpuShare(), 2.0 / 8);
  EXPECT_DOUBLE_EQ(FabricNetwork(f).transportBytesPerUs(), 2000 * 2.0 / 8);
  EXPECT_EQ(FabricNetwork(parseFabric("nodes 1\n")).transportBytesPerUs(), 0);
  EXPECT_THROW(parseFabric("host_load -1\n"), Error);
}

}  // namespace
}  // namespace chorus::sim
