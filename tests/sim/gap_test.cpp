// LogGP's gap g in the one replay (LinkModel::gapUs, MessageCost::gapUs): a sender's
// consecutive messages on one link start at least g apart, while each is done at o + wire.
// Hand-worked times: 10 us latency, 1000 B/us, free local work, o 1 us at each end.
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

// Rank 0 sends three 8 B messages to rank 1 back to back (nothing orders them but the
// port); rank 1 receives them.
std::vector<Schedule> threeBackToBack() {
  std::vector<Schedule> s(2);
  for (int m = 0; m < 3; ++m) {
    send(s[0], 1, in(m * 2, 2));  // 2 floats: 8 B
    recv(s[1], 0, out(m * 2, 2));
  }
  return s;
}

// Without a gap the port sends them one after the other at o + wire: 1.040 (8 B + the
// call's 32-byte header), 1.008, 1.008, so the third leaves at 2.048, is through at 3.056,
// and its receive (o 1) is done 10 us later: 14.056. With g 5 they start at 0, 5 and 10,
// the third through at 11.008 and received at 22.008 (2 g + o + 0.008 + L + o): the
// timeline shows the starts g apart and each send done at its start + o + wire.
TEST(SimGap, BackToBackMessagesAreSpacedByTheGap) {
  LinkModel link{10, 1000, kFree, kFree, 1};
  const std::vector<Schedule> s = threeBackToBack();
  EXPECT_NEAR(replaySchedules(s, 4, link).micros, 14.056, 1e-9);
  link.gapUs = 5;
  LinkClassNetwork net(2, link);
  std::vector<StepTime> timeline;
  const ReplayResult r = replay(s, 4, net, 0, kPipelineSliceBytes, Symmetry::Shift, 0, &timeline);
  EXPECT_NEAR(r.micros, 22.008, 1e-9);
  EXPECT_NEAR(replaySchedules(s, 4, link).micros, 22.008, 1e-9);  // the tuner's path
  std::vector<double> starts, finishes;
  for (const StepTime& t : timeline)
    if (t.rank == 0) starts.push_back(t.start), finishes.push_back(t.finish);
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_NEAR(starts[1] - starts[0], 5, 1e-12);
  EXPECT_NEAR(starts[2] - starts[1], 5, 1e-12);
  EXPECT_NEAR(finishes[0], 1.040, 1e-12);
  EXPECT_NEAR(finishes[2], 11.008, 1e-12);
  // A gap below o + wire changes nothing: the port is already held that long.
  link.gapUs = 1;
  EXPECT_NEAR(replaySchedules(s, 4, link).micros, 14.056, 1e-9);
}

// One message alone pays no gap (nothing follows it on its port), and neither does a
// message on another link class: rank 0 sends 8 B within its node and 8 B to the other node
// at once (ports 0 and 1), each 1.040 + 10 + 1 = 12.040 however large the between-node gap.
TEST(SimGap, TheGapIsPerLink) {
  LinkModel within{10, 1000, kFree, kFree, 1};
  LinkModel between = within;
  between.gapUs = 50;
  const Layout layout = Layout::uniform(2, 2);
  std::vector<Schedule> s(4);
  send(s[0], 1, in(0, 2));
  recv(s[1], 0, out(0, 2));
  send(s[0], 2, in(2, 2));
  recv(s[2], 0, out(2, 2));
  LinkClassNetwork net(4, within, &layout, &between);
  EXPECT_NEAR(replay(s, 4, net).micros, 12.040, 1e-9);
  // Two to the other node: the second starts 50 us after the first.
  send(s[0], 3, in(4, 2));
  recv(s[3], 0, out(4, 2));
  LinkClassNetwork two(4, within, &layout, &between);
  EXPECT_NEAR(replay(s, 4, two).micros, 50 + 1.040 + 10 + 1, 1e-9);
}

// chorus-sim's fabric takes the gap per class (gap_us within a node, nic_gap_us through the
// NICs) and charges it at the call's share like the overhead (LinkModel::callGapUs):
// measured 2.5 us at half a core, 6 ranks on 2 cores (a third), it is 3.75 us in a call, in
// the fabric's replay and the tuner's classes alike.
TEST(SimGap, TheFabricChargesTheGapLikeTheTuner) {
  const std::string bed =
      "nodes 3\ngpus_per_node 2\nnics_per_node 1\nhost_cores 2\noverhead_us 0\n"
      "overhead_share 0.5\nnvlink_latency_us 10\nnic_latency_us 10\nhop_latency_us 0\n";
  const Fabric gapped = parseFabric(bed + "gap_us 2.5\nnic_gap_us 40\n", "t");
  EXPECT_DOUBLE_EQ(tunerLinks(gapped).intra.callGapUs(), 3.75);
  EXPECT_DOUBLE_EQ(tunerLinks(gapped).inter.callGapUs(), 60);
  // Rank 0 sends twice to rank 1 (its node) and twice to rank 2 (the next node).
  std::vector<Schedule> s(6);
  for (int m = 0; m < 2; ++m) {
    send(s[0], 1, in(m * 2, 2));
    recv(s[1], 0, out(m * 2, 2));
    send(s[0], 2, in(4 + m * 2, 2));
    recv(s[2], 0, out(4 + m * 2, 2));
  }
  FabricNetwork net(gapped);
  const double withGaps = replay(s, 4, net).micros;
  FabricNetwork none(parseFabric(bed, "t"));
  const double without = replay(s, 4, none).micros;
  // The second between-node message starts 60 us after the first instead of right after
  // it (the first's wire time, 8 B and the call's header): the call ends that much later.
  const MessageCost first = none.message(0, 2, 1, 40);
  EXPECT_NEAR(withGaps - without, 60 - first.wireUs, 1e-9);
  EXPECT_NE(gapped.describe().find("2.500 us within a node, 40.000 us through the NICs"),
            std::string::npos)
      << gapped.describe();
  EXPECT_THROW(parseFabric("nic_gap_us -1\n", "t"), Error);
}

}  // namespace
}  // namespace chorus::sim
