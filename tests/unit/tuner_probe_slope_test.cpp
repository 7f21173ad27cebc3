// The probe's per-message overhead o from the slope of its bursts (1, 4 and 8 x 8 B), the
// rule that bounds it by the half round trip, and the median over probe blocks
// (tuner/probe_figures.hpp: burstOverhead, fastestRoundsSlope, linkFromProbe).
#include "tuner/link_model.hpp"
#include "tuner/probe_figures.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace chorus {
namespace {

// The bed's between-node probe of framing_sim16/rec_2/ (3x2, docs/sim.md seventeenth
// session), in the shape of its within-node blocks (8 B median 150 us, best 38): the medians
// of 8 x 8 B 1607.9 us above the 8 B ones (a stall of those 8 rounds), which the two-point
// difference made o = 229.7 us, L at its floor (L + 2 o = 459 us for a half round trip of 75).
// The fastest rounds of 1, 4 and 8 messages (38, 44, 52 us: 2 us a message) give o = 2,
// L = 75 - 4 = 71, and L + 2 o stays the measured half round trip.
ProbeTimes stalledBurstTimes() {
  ProbeTimes t;
  t.one = 150;
  t.oneBest = 38;
  t.burst = 8;
  t.burstTrip = 150 + 7 * 229.7;
  t.burstBest = 52;
  t.midBurst = 4;
  t.midBurstTrip = 890;
  t.midBurstBest = 44;
  t.large = 4200;
  return t;
}

TEST(ProbeFigures, TheOverheadIsTheSlopeOfTheBurstsFastestRounds) {
  const LinkModel start = defaultLinkModel(LinkClass::Tcp);
  ProbeTimes t = stalledBurstTimes();
  LinkModel m = linkFromProbe(t, start);
  EXPECT_DOUBLE_EQ(m.overheadUs, 2);
  EXPECT_DOUBLE_EQ(m.latencyUs, 71);
  EXPECT_DOUBLE_EQ(m.latencyUs + 2 * m.overheadUs, t.one / 2);
  // The two-point difference of the medians, as before (no fastest rounds, no mid burst).
  ProbeTimes medians = t;
  medians.oneBest = medians.burstBest = medians.midBurstBest = 0;
  medians.midBurst = 0;
  EXPECT_NEAR(burstOverhead(medians, 75).slopeUs, 229.7, 1e-9);
  // Fastest rounds not on a line: least squares over (1, 40), (4, 40), (8, 54): the
  // deviations from the means (13/3, 134/3) give 462 / 222.
  t.oneBest = 40, t.midBurstBest = 40, t.burstBest = 54;
  const BurstOverhead fit = burstOverhead(t, 75);
  EXPECT_TRUE(fit.fromFastest);
  EXPECT_STREQ(fit.rule, "slope");
  EXPECT_NEAR(fit.overheadUs, 462.0 / 222, 1e-12);
  m = linkFromProbe(t, start);
  EXPECT_NEAR(m.latencyUs, 75 - 2 * 462.0 / 222, 1e-12);
  // The medians alone (no fastest rounds recorded), three lengths: their least squares,
  // (1, 20), (4, 26), (8, 34): 2 a message.
  t.oneBest = t.midBurstBest = t.burstBest = 0;
  t.one = 20, t.midBurstTrip = 26, t.burstTrip = 34;
  EXPECT_FALSE(burstOverhead(t, 10).fromFastest);
  EXPECT_DOUBLE_EQ(burstOverhead(t, 10).overheadUs, 2);
}

// A slope that L + 2 o = the half round trip cannot hold: negative (the longer bursts'
// fastest rounds quicker), o = 0 and L the whole half trip; 2 o above the half trip less
// L's floor (a message of the burst costing more than the single round trip leaves, as
// between the bed's nodes), all of the half trip o, L at its floor. The old two-point
// difference of rec_2's medians (229.7 us) bounded the same way: L + 2 o = 75, not 459.
TEST(ProbeFigures, TheSlopeIsBoundedByTheHalfRoundTrip) {
  const LinkModel start = defaultLinkModel(LinkClass::Tcp);
  ProbeTimes t = stalledBurstTimes();
  t.oneBest = 40, t.midBurstBest = 38, t.burstBest = 36;
  std::string note;
  LinkModel m = linkFromProbe(t, start, &note);
  EXPECT_STREQ(burstOverhead(t, 75).rule, "negative slope");
  EXPECT_EQ(m.overheadUs, 0);
  EXPECT_DOUBLE_EQ(m.latencyUs, 75);
  EXPECT_NE(note.find("negative slope"), std::string::npos) << note;
  // 8 B round trip 20 us (half 10), fastest rounds 15, 30, 50: 5 us a message, 2 o = 10.
  t.one = 20, t.oneBest = 15, t.midBurstBest = 30, t.burstBest = 50;
  t.large = 4000;
  m = linkFromProbe(t, start, &note);
  EXPECT_STREQ(burstOverhead(t, 10).rule, "slope above the half trip");
  EXPECT_DOUBLE_EQ(burstOverhead(t, 10).slopeUs, 5);
  EXPECT_DOUBLE_EQ(m.overheadUs, (10 - 0.05) / 2);
  EXPECT_NEAR(m.latencyUs, 0.05, 1e-12);
  EXPECT_NE(note.find("above the half trip"), std::string::npos) << note;
  ProbeTimes medians = stalledBurstTimes();
  medians.oneBest = medians.burstBest = medians.midBurstBest = 0;
  medians.midBurst = 0;
  m = linkFromProbe(medians, start);
  EXPECT_DOUBLE_EQ(m.overheadUs, (75 - 0.05) / 2);
  EXPECT_DOUBLE_EQ(m.latencyUs + 2 * m.overheadUs, 75);
  // No burst measured: o 0, as before.
  t.burstTrip = 0;
  EXPECT_EQ(linkFromProbe(t, start).overheadUs, 0);
}

// Of several blocks, the median of each block's own slope: blocks of 2, 12 and 4 us a
// message (fastest rounds of 1, 4, 8 x 8 B: 10, 16, 24; 10, 46, 94; 20, 32, 48) give 4,
// where the fastest rounds put together (10, 16, 24: another moment's each) would give 2.
TEST(ProbeFigures, SeveralBlocksGiveTheMedianOfTheirOwnSlopes) {
  auto block = [](double one, double mid, double full) {
    ProbeTimes t = stalledBurstTimes();
    t.one = 100, t.midBurstTrip = 120, t.burstTrip = 140;
    t.oneBest = one, t.midBurstBest = mid, t.burstBest = full;
    return t;
  };
  const std::vector<ProbeTimes> blocks = {block(10, 16, 24), block(10, 46, 94), block(20, 32, 48)};
  EXPECT_DOUBLE_EQ(*fastestRoundsSlope(blocks[1]), 12);
  const ProbeTimes q = quietestOfBlocks(blocks);
  ASSERT_TRUE(q.blocksSlopeUs.has_value());
  EXPECT_DOUBLE_EQ(*q.blocksSlopeUs, 4);
  EXPECT_DOUBLE_EQ(*fastestRoundsSlope(q), 2);  // the pooled fastest rounds
  const LinkModel m = linkFromProbe(q, defaultLinkModel(LinkClass::Tcp));
  EXPECT_DOUBLE_EQ(m.overheadUs, 4);
  EXPECT_DOUBLE_EQ(m.latencyUs, 50 - 8);
  // An even count: the mean of the middle two (2 and 4).
  EXPECT_DOUBLE_EQ(*quietestOfBlocks({blocks[0], blocks[2]}).blocksSlopeUs, 3);
  // A block without its fastest burst rounds has no slope of its own: not counted.
  ProbeTimes unrecorded = blocks[1];
  unrecorded.burstBest = 0;
  EXPECT_DOUBLE_EQ(*quietestOfBlocks({blocks[0], unrecorded, blocks[2]}).blocksSlopeUs, 3);
}

// The fastest rounds ran with a core throughout: their o is one whole core's (overheadShare
// 1, LinkModel::callOverheadUs), where the medians' is the ping-pong's share.
TEST(ProbeFigures, TheFastestRoundsOverheadIsAWholeCores) {
  const LinkModel start = defaultLinkModel(LinkClass::Tcp);
  ProbeTimes t = stalledBurstTimes();
  t.pingPongShare = 2.0 / 3;
  EXPECT_EQ(linkFromProbe(t, start).overheadShare, 1);
  t.oneBest = t.midBurstBest = t.burstBest = 0;
  EXPECT_DOUBLE_EQ(linkFromProbe(t, start).overheadShare, 2.0 / 3);
  t.pingPongShare = 0;  // unknown: as given
  EXPECT_EQ(linkFromProbe(stalledBurstTimes(), start).overheadShare, 0);
}

}  // namespace
}  // namespace chorus
