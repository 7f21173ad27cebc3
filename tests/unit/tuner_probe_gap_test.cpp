// The probe's gap g (LinkModel::gapUs, LogGP's g): where a burst's per-message cost (the
// slope of its round trip over the burst's length) exceeds what the single round trip
// leaves o, o takes its bound (L at its floor) and the slope is g; below the bound g is 0
// (tuner/probe_figures.hpp: burstOverhead, linkFromProbe). And the tune file carries it.
#include "tuner/link_model.hpp"
#include "tuner/probe_figures.hpp"
#include "tuner/tuning.hpp"

#include <gtest/gtest.h>

#include <string>

namespace chorus {
namespace {

// The first between-node probe of slope_sim17 (docs/sim.md, eighteenth session): fastest
// rounds of 1, 4 and 8 x 8 B at 75, 153 and 255 us; an 8 B median of 86.8 us.
ProbeTimes betweenNodes() {
  ProbeTimes t;
  t.one = 86.8;
  t.oneBest = 75;
  t.midBurst = 4;
  t.midBurstTrip = 160;
  t.midBurstBest = 153;
  t.burst = 8;
  t.burstTrip = 270;
  t.burstBest = 255;
  t.large = 4200;
  return t;
}

// Least squares over (1, 75), (4, 153), (8, 255): mean length 13/3, mean trip 161; the
// deviations (-10/3, -1/3, 11/3) and (-86, -8, 94) give a cross sum of 1902 / 3 over a
// sum of squares of 222 / 9: slope 1902 / 74 = 25.7027 us a message. The half round trip
// 43.4 leaves o at most (43.4 - 0.05) / 2 = 21.675: o 21.675, L 0.05, g 25.7027.
TEST(ProbeFigures, TheGapIsTheSlopeWhereItExceedsWhatOMayTake) {
  const LinkModel start = defaultLinkModel(LinkClass::Tcp);
  const ProbeTimes t = betweenNodes();
  const double slope = 1902.0 / 74;
  std::string note;
  const LinkModel m = linkFromProbe(t, start, &note);
  EXPECT_NEAR(burstOverhead(t, 43.4).slopeUs, slope, 1e-9);
  EXPECT_STREQ(burstOverhead(t, 43.4).rule, "slope above the half trip");
  EXPECT_NEAR(m.overheadUs, (43.4 - 0.05) / 2, 1e-12);
  EXPECT_NEAR(m.latencyUs, 0.05, 1e-12);
  EXPECT_NEAR(m.gapUs, slope, 1e-9);
  EXPECT_NE(note.find("g 25.7 us"), std::string::npos) << note;
  // Within the bound (a slower single round trip, 8 B median 120: half 60, o up to 29.975)
  // the slope is o and there is no gap: g 0, L = 60 - 2 o.
  ProbeTimes slow = t;
  slow.one = 120;
  const LinkModel u = linkFromProbe(slow, start);
  EXPECT_NEAR(u.overheadUs, slope, 1e-9);
  EXPECT_NEAR(u.latencyUs, 60 - 2 * slope, 1e-9);
  EXPECT_EQ(u.gapUs, 0);
  // A negative slope, or no burst: no gap either.
  ProbeTimes negative = t;
  negative.midBurstBest = 70, negative.burstBest = 65;
  EXPECT_EQ(linkFromProbe(negative, start).gapUs, 0);
  ProbeTimes noBurst = t;
  noBurst.burstTrip = 0;
  EXPECT_EQ(linkFromProbe(noBurst, start).gapUs, 0);
}

// linkFromProbe sets g even when it is 0: the between-node figures start from the
// within-node ones (comm/tuning_setup.cpp), whose gap must not carry over.
TEST(ProbeFigures, TheGapDoesNotCarryOverFromTheStartingFigures) {
  LinkModel start = defaultLinkModel(LinkClass::Tcp);
  start.gapUs = 25;
  ProbeTimes slow = betweenNodes();
  slow.one = 120;
  EXPECT_EQ(linkFromProbe(slow, start).gapUs, 0);
}

// Measured at the ping-pong's fastest rounds (a whole core, overheadShare 1), charged at the
// call's share like o: 25 us at a third of a core is 75 us in a call.
TEST(ProbeFigures, TheGapIsChargedAtTheCallsShareLikeTheOverhead) {
  LinkModel m;
  m.overheadUs = 10, m.gapUs = 25, m.overheadShare = 1, m.callShare = 1.0 / 3;
  EXPECT_DOUBLE_EQ(m.callGapUs(), 75);
  EXPECT_DOUBLE_EQ(m.callOverheadUs(), 30);
  m.callShare = 0;  // unknown: as measured
  EXPECT_DOUBLE_EQ(m.callGapUs(), 25);
}

// The tune file's gap_us: written when > 0, read back; absent: 0; negative: an error.
TEST(TuneFile, GapRoundTrips) {
  Tuning t = defaultTuning(LinkClass::Tcp);
  t.ranks = 2;
  t.model.gapUs = 25.5;
  const std::string line = t.toLine();
  EXPECT_NE(line.find(" gap_us=25.5"), std::string::npos) << line;
  const std::vector<Tuning> back = parseTuneFile(line);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].model.gapUs, 25.5);
  EXPECT_EQ(parseTuneFile("tcp ranks=2 latency_us=3")[0].model.gapUs, 0);
  EXPECT_EQ(defaultTuning(LinkClass::Tcp).toLine().find("gap_us"), std::string::npos);
  EXPECT_THROW(parseTuneFile("tcp ranks=2 gap_us=-1"), Error);
}

}  // namespace
}  // namespace chorus
