// A sender that holds a core for its overhead (LinkModel::sendsHoldACore, fabric key
// sends_hold_a_core): its o is a whole core's (measured at overheadShare, not rescaled to
// the call's share) and takes its CPU as well as its port; the receiver's o stays at the
// call's share. Hand-worked times: 10 us latency, 1000 B/us, o 1 us measured at half a
// core, a call's share a quarter: the receiver's o 2 us, the sender's 0.5 us.
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

LinkModel quarterShareLink() {
  LinkModel link{10, 1000, kFree, kFree, 1};
  link.overheadShare = 0.5;
  link.callShare = 0.25;
  return link;
}

TEST(SimSenderCore, TheSendersOverheadIsAWholeCores) {
  LinkModel link = quarterShareLink();
  EXPECT_DOUBLE_EQ(link.callSendOverheadUs(), 2);  // off: the receiver's
  link.sendsHoldACore = true;
  EXPECT_DOUBLE_EQ(link.callOverheadUs(), 2);
  EXPECT_DOUBLE_EQ(link.callSendOverheadUs(), 0.5);
  const MessageCost c = LinkClassNetwork(2, link).message(0, 1, 0, 40);
  EXPECT_DOUBLE_EQ(c.senderOverheadUs(), 0.5);
  EXPECT_DOUBLE_EQ(c.overheadUs, 2);
  EXPECT_TRUE(c.sendOverheadOnCpu());
}

// Rank 0 sends 8 B to rank 1, then 8 B to rank 2 (each 40 B with the call's header: 0.040
// us on the wire). Off: the second waits for the port until 2.040 (o 2 + wire), is through
// at 4.080 and received at 4.080 + L 10 + o 2 = 16.080. On: the port is free at 0.540
// (o 0.5 + wire), rank 2's intake takes it by 0.540 + 2 + 0.040 = 2.580 (the receiver's o
// at the call's share), received at 14.580; the first, 2.040 + 12 = 14.040.
TEST(SimSenderCore, ASendersNextMessageStartsAfterItsOwnO) {
  std::vector<Schedule> s(3);
  send(s[0], 1, in(0, 2));
  send(s[0], 2, in(2, 2));
  recv(s[1], 0, out(0, 2));
  recv(s[2], 0, out(2, 2));
  LinkModel link = quarterShareLink();
  EXPECT_NEAR(replaySchedules(s, 4, link).micros, 16.080, 1e-9);
  link.sendsHoldACore = true;
  EXPECT_NEAR(replaySchedules(s, 4, link).micros, 14.580, 1e-9);
}

// The sender's o is CPU time: rank 0 copies 4000 B (4 us at 1000 B/us on its CPU) and sends
// 8 B to rank 1 at once. Off: the send is the port's alone, through at 2.040, received at
// 14.040. On: its o waits for the CPU after the copy, done at 4.5, received at 4.5 + 12 =
// 16.5, though its port was free at 0.540.
TEST(SimSenderCore, TheSendersOverheadTakesItsCpu) {
  std::vector<Schedule> s(2);
  copy(s[0], in(0, 1000), out(0, 1000));
  send(s[0], 1, in(0, 2));
  recv(s[1], 0, out(0, 2));
  LinkModel link = quarterShareLink();
  link.copyBytesPerUs = 1000;
  EXPECT_NEAR(replaySchedules(s, 4, link).micros, 14.040, 1e-9);
  link.sendsHoldACore = true;
  EXPECT_NEAR(replaySchedules(s, 4, link).micros, 16.5, 1e-9);
}

// chorus-sim's fabric takes it as sends_hold_a_core 1, through the tuner's classes (one
// formula): overhead_us 3 measured at a whole core, 6 ranks on 2 cores: the receiver's o 9
// us in a call, the sender's 3; off by default.
TEST(SimSenderCore, TheFabricTakesItLikeTheTuner) {
  const std::string bed =
      "nodes 3\ngpus_per_node 2\nnics_per_node 1\nhost_cores 2\noverhead_us 3\n"
      "overhead_share 1\nnvlink_latency_us 10\nnic_latency_us 10\nhop_latency_us 0\n";
  const Fabric off = parseFabric(bed, "t");
  EXPECT_FALSE(off.sendsHoldACore);
  const Fabric on = parseFabric(bed + "sends_hold_a_core 1\n", "t");
  EXPECT_DOUBLE_EQ(tunerLinks(on).intra.callOverheadUs(), 9);
  EXPECT_DOUBLE_EQ(tunerLinks(on).intra.callSendOverheadUs(), 3);
  EXPECT_DOUBLE_EQ(tunerLinks(on).inter.callSendOverheadUs(), 3);
  std::vector<Schedule> s(6);
  send(s[0], 2, in(0, 2));
  send(s[0], 4, in(2, 2));
  recv(s[2], 0, out(0, 2));
  recv(s[4], 0, out(2, 2));
  // Rank 0 sends to the second node, then to the third (both through its NIC): the second
  // message leaves once the first's o 3 + wire is done, not its o 9: the call ends 6 us
  // earlier.
  FabricNetwork net(on), offNet(off);
  EXPECT_NEAR(replay(s, 4, offNet).micros - replay(s, 4, net).micros, 6, 1e-9);
  const MessageCost c = net.message(0, 2, 0, 40);  // rank 0's first message (ordinal 0)
  EXPECT_DOUBLE_EQ(c.senderOverheadUs(), 3);
  EXPECT_DOUBLE_EQ(c.overheadUs, 9);
  EXPECT_LT(offNet.message(0, 2, 0, 40).sendOverheadUs, 0);
  EXPECT_NE(on.describe().find("a sender holds a core for its overhead: 3.000 us"),
            std::string::npos)
      << on.describe();
}

}  // namespace
}  // namespace chorus::sim
