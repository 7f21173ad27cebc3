// The tuner's figures from a probe (tuner/probe_figures.hpp) and the engine's slice in the
// cost model: the probe's exchange weighs the per-message overhead of a step to several
// peers (without it the model put twoshot before rd at np=4, 4 KiB, where rd ran 1.3-1.8x
// faster), and the tuner replays with the communicator's CHORUS_SLICE_BYTES.
#include "../common/algorithm_lookup.hpp"
#include "algorithms/schedule_rules.hpp"
#include "algorithms/steps.hpp"
#include "engine/engine.hpp"
#include "engine/slice.hpp"
#include "settings/settings.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/local_rates.hpp"
#include "tuner/probe_figures.hpp"
#include "tuner/tuner.hpp"
#include "tuner/tuning.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace chorus {
namespace {

using test::allReduce;

double predict(const char* name, int nranks, size_t bytes, const LinkModel& link,
               size_t slice = kPipelineSliceBytes) {
  return predictMicros(allReduce(name), Collective::AllReduce, nranks, bytes / 4, 4, link, nullptr,
                       nullptr, slice);
}

// Every all-reduce of the copy path (the tuner's candidates for ordinary buffers).
std::vector<const Algorithm*> copyPathAllReduces() {
  std::vector<const Algorithm*> all;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == Collective::AllReduce && !a.oneSided) all.push_back(&a);
  return all;
}

// A probe at np 4 as CHORUS_DEBUG=INFO prints it (medians and fastest rounds, us) with the
// local copy and reduce rates (B/us), and the shm link solved from it.
struct Np4Probe {
  double one, oneBest, burstTrip, large, largeBest, exchange, copy, reduce;
};
LinkModel shmLinkFrom(const Np4Probe& p) {
  ProbeTimes t;
  t.one = p.one;
  t.oneBest = p.oneBest;
  t.burst = 8;
  t.burstTrip = p.burstTrip;
  t.large = p.large;
  t.largeBest = p.largeBest;
  t.exchangeRanks = 4;
  t.exchange = p.exchange;
  LinkModel link = defaultLinkModel(LinkClass::Shm);
  link.copyBytesPerUs = p.copy;
  link.reduceBytesPerUs = p.reduce;
  return linkFromProbe(t, link);
}
// Two np 4 probes whose 256 KiB round trips stalled while the 8 B ones did not (perf/README.md,
// the tuner's pick): 2026-12-03 09:54 UTC, load 0.07, and 06:11 UTC, load 3.5-9.
constexpr Np4Probe kIdleStalledProbe{6.64, 6.18, 11.84, 2103.6, 728.7, 9.45, 2.111e4, 1.318e4};
constexpr Np4Probe kLoadedStalledProbe{6.40, 5.02, 12.07, 2255.9, 244.7, 7.19, 1.962e4, 1.471e4};

// Round trips of the shape the probe measured here at np 4 (CHORUS_DEBUG=INFO prints them;
// 2 cores, load 20-40: 8 B 11.5-19.3 us, 8 x 8 B 24.8-41.2 us, 256 KiB ~900 us, exchange
// 36.7-38.8 us), rounded to figures whose solution is exact: 8 B 6.0 us, 8 x 8 B 7.4 us,
// 256 KiB 530.3 us (1000 B/us), exchange 13.0 us.
ProbeTimes measuredTimes() {
  ProbeTimes t;
  t.smallBytes = 8;
  t.one = 6.0;
  t.burst = 8;
  t.burstTrip = 7.4;
  t.largeBytes = 256 << 10;
  t.large = 6.0 + 2 * ((256 << 10) - 8) / 1000.0;
  t.exchangeRanks = 4;
  t.exchange = 13.0;
  return t;
}

TEST(ProbeFigures, SolvesTheModelForLatencyOverheadAndBandwidth) {
  ProbeTimes t = measuredTimes();
  const LinkModel start = defaultLinkModel(LinkClass::Shm);
  // Exchange: each rank's 3 sends and 3 receives, L + 6 o = 13 with L + 2 o = 3 (half the
  // 8 B trip): o = 2.5, L at its floor.
  LinkModel m = linkFromProbe(t, start);
  EXPECT_DOUBLE_EQ(m.overheadUs, 2.5);
  EXPECT_DOUBLE_EQ(m.latencyUs, 0.05);
  EXPECT_NEAR(m.pairOverheadUs, 0.2, 1e-12);  // the burst's, below: a pair's
  EXPECT_NEAR(m.bytesPerUs, 1000, 1e-9);
  EXPECT_EQ(m.copyBytesPerUs, start.copyBytesPerUs);  // untouched
  // Without the exchange (two ranks): the burst's o = (7.4 - 6) / 7 = 0.2, L = 3 - 0.4.
  t.exchangeRanks = 2;
  m = linkFromProbe(t, start);
  EXPECT_NEAR(m.overheadUs, 0.2, 1e-12);
  EXPECT_NEAR(m.latencyUs, 2.6, 1e-12);
  EXPECT_EQ(m.pairOverheadUs, 0);  // overheadUs is the pair's
  // An exchange no slower than the ping-pong keeps the burst's figure.
  t.exchangeRanks = 4;
  t.exchange = 3.1;
  EXPECT_NEAR(linkFromProbe(t, start).overheadUs, 0.2, 1e-12);
  // Nothing measured: the start figures.
  EXPECT_EQ(linkFromProbe(ProbeTimes{}, start), start);
}

// The ping-pong keeps one rank of each pair busy, the exchange all of them: with the shares of
// a core they ran at, the two solutions for o compare at one core, and the model keeps the
// chosen one's share for LinkModel::callOverheadUs. Round trips of L = 10, o = 4 (8 B 36 us,
// 8 x 8 B 64 us) and an exchange among 4 of o = 6 (18 + 2 x 2 x 6 = 42 us).
TEST(ProbeFigures, TheOverheadsSolutionsCompareAtTheSharesTheyRanAt) {
  ProbeTimes t = measuredTimes();
  t.one = 36;
  t.burstTrip = 64;
  t.exchange = 42;
  const LinkModel start = defaultLinkModel(LinkClass::Tcp);
  // No shares (a tune file, an older build): the larger as measured, no share.
  LinkModel m = linkFromProbe(t, start);
  EXPECT_DOUBLE_EQ(m.overheadUs, 6);
  EXPECT_EQ(m.overheadShare, 0);
  // 4 ranks on 2 cores: the ping-pong at a whole core (2 busy), the exchange at half.
  // 4 x 1 > 6 x 0.5: the ping-pong's o, L from it.
  t.pingPongShare = 1;
  t.exchangeShare = 0.5;
  m = linkFromProbe(t, start);
  EXPECT_DOUBLE_EQ(m.overheadUs, 4);
  EXPECT_DOUBLE_EQ(m.overheadShare, 1);
  EXPECT_DOUBLE_EQ(m.latencyUs, 10);
  m.callShare = 0.5;  // the call: every rank busy
  EXPECT_DOUBLE_EQ(m.callOverheadUs(), 8);
  // Both at half a core: the exchange's.
  t.pingPongShare = 0.5;
  m = linkFromProbe(t, start);
  EXPECT_DOUBLE_EQ(m.overheadUs, 6);
  EXPECT_DOUBLE_EQ(m.overheadShare, 0.5);
  // Two ranks (no exchange): the ping-pong's, with its share.
  t.exchangeRanks = 2;
  EXPECT_DOUBLE_EQ(linkFromProbe(t, start).overheadShare, 0.5);
}

// tcp over loopback: the within-node ping-pong's fastest rounds give the CPU's copy rate,
// at the node's share of a core, for both classes; no cost for other transports or
// without a within-node measurement.
TEST(ProbeFigures, TcpTransportCostFromTheLoopbackRate) {
  LinkModel within = defaultLinkModel(LinkClass::Tcp), between = within;
  within.bytesPerUs = 380;
  between.bytesPerUs = 89;
  ProbeTimes t;  // 8 B and 256 KiB: (262144 - 8) B in half of (large - one)
  t.one = 100;
  t.large = 2000;  // median: 262136 / 950 = 275.9 B/us
  t.oneBest = 40;
  t.largeBest = 1350.68;  // best: 262136 / 655.34 = 400 B/us
  transportFromProbe(LinkClass::Tcp, t, 1, within, &between);
  EXPECT_NEAR(within.transportBytesPerUs, 400, 1e-9);
  EXPECT_NEAR(between.transportBytesPerUs, 400, 1e-9);
  EXPECT_EQ(within.bytesPerUs, 380);  // the measured rates stay
  EXPECT_EQ(between.bytesPerUs, 89);
  // Half a core per rank (4 ranks on 2 cores): half the rate.
  transportFromProbe(LinkClass::Tcp, t, 0.5, within, &between);
  EXPECT_NEAR(within.transportBytesPerUs, 200, 1e-9);
  // The fastest rounds not recorded: the medians'.
  t.oneBest = t.largeBest = 0;
  transportFromProbe(LinkClass::Tcp, t, 1, within, &between);
  EXPECT_NEAR(within.transportBytesPerUs, 262136 / 950.0, 1e-9);
  t.one = 0;  // one rank per node: nothing measured
  transportFromProbe(LinkClass::Tcp, t, 1, within, &between);
  EXPECT_EQ(within.transportBytesPerUs, 0);
  EXPECT_EQ(between.transportBytesPerUs, 0);
  t.one = 100;
  for (LinkClass other : {LinkClass::Shm, LinkClass::Ib, LinkClass::Ucx}) {
    transportFromProbe(other, t, 1, within, nullptr);
    EXPECT_EQ(within.transportBytesPerUs, 0) << toString(other);
  }
}

TEST(ProbeFigures, ExchangeGroupsAreAlignedBlocksOfEight) {
  // Up to 8 ranks on a node: one group, the whole node (the probe as before).
  EXPECT_EQ(exchangeGroup(0, 1), (std::vector<int>{0}));
  EXPECT_EQ(exchangeGroup(2, 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(exchangeGroup(7, 8), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // More: aligned blocks, the last one smaller; every rank in exactly its own block.
  EXPECT_EQ(exchangeGroup(9, 10), (std::vector<int>{8, 9}));
  EXPECT_EQ(exchangeGroup(63, 64), (std::vector<int>{56, 57, 58, 59, 60, 61, 62, 63}));
  for (int n : {1, 5, 8, 9, 17, 64, 100}) {
    size_t links = 0;
    for (int local = 0; local < n; ++local) {
      const std::vector<int> g = exchangeGroup(local, n);
      ASSERT_FALSE(g.empty());
      EXPECT_LE(g.size(), size_t(kExchangeGroup));
      EXPECT_NE(std::find(g.begin(), g.end(), local), g.end()) << n << " " << local;
      for (int peer : g) EXPECT_EQ(exchangeGroup(peer, n), g) << n << " " << local;
      links += g.size() - 1;
      // The first three recursive-doubling partners share the block when they exist.
      for (int bit : {1, 2, 4})
        if ((local ^ bit) < n)
          EXPECT_NE(std::find(g.begin(), g.end(), local ^ bit), g.end()) << n << " " << local;
    }
    EXPECT_LE(links, size_t(n) * (kExchangeGroup - 1));  // not n (n - 1) at 64 ranks
  }
}

TEST(ProbeFigures, ExchangePutsRdBeforeTwoshotAtFourRanksFourKiB) {
  ProbeTimes t = measuredTimes();
  const LinkModel withExchange = linkFromProbe(t, defaultLinkModel(LinkClass::Shm));
  t.exchangeRanks = 0;
  const LinkModel pingPongOnly = linkFromProbe(t, defaultLinkModel(LinkClass::Shm));
  // The ping-pong alone undercharges a step to 3 peers: twoshot (6 messages) looks faster.
  EXPECT_LT(predict("twoshot", 4, 4096, pingPongOnly), predict("rd", 4, 4096, pingPongOnly));
  // With the exchange's overhead rd's 2 messages win, as measured (1.3-1.8x).
  EXPECT_LT(predict("rd", 4, 4096, withExchange), predict("twoshot", 4, 4096, withExchange));
  const auto ranked = rankAlgorithms(Collective::AllReduce, 4, 1024, 4, withExchange);
  EXPECT_STREQ(ranked.front().algorithm->name, "rd");
  // Large messages are still the bandwidth's: ring (or its equal twoshot), not rd.
  EXPECT_LT(predict("ring", 4, 16 << 20, withExchange), predict("rd", 4, 16 << 20, withExchange));
}

// A fixed calibration (chorus-perf --calibrate's fit at np=4 on this machine, the measured
// winners left out so that the model alone decides).
TEST(ProbeFigures, CalibratedFiguresRankRdFirstAtFourKiB) {
  const auto entries = parseTuneFile(
      "shm ranks=4 latency_us=0.001897 overhead_us=12.36 bytes_per_us=310.2 "
      "copy_bytes_per_us=1.885e+04 reduce_bytes_per_us=1.178e+04");
  ASSERT_EQ(entries.size(), 1u);
  Tuner tuner(4, entries[0], Tuner::Mode::Model);
  const std::vector<const Algorithm*> all = copyPathAllReduces();
  EXPECT_STREQ(tuner.choose(Collective::AllReduce, 1024, DataType::Float32, all, false).name, "rd");
}

// The probe's exchange replayed: every rank sends 8 B to each of the 3 others and receives
// from each.
TEST(CpuSends, TheProbesExchangeSolvesForTheOverheadItReplays) {
  using namespace steps;
  const int p = 4;
  std::vector<Schedule> exchange(p);
  for (int r = 0; r < p; ++r)
    for (int q = 0; q < p; ++q)
      if (q != r) {
        send(exchange[r], q, in(0, 2));
        recv(exchange[r], q, scratch(2 * q, 2));
      }
  LinkModel link = defaultLinkModel(LinkClass::Shm);
  link.latencyUs = 0.05;
  link.overheadUs = 5;
  ASSERT_TRUE(link.cpuSends);
  // All 6 messages' overheads one after the other (the 3 sends' wire time and the last
  // receive's slice beside them): 2 (p - 1) o. Without cpuSends as much (each incoming
  // message holds the ingress port for its o, then its receive takes o on the CPU), which
  // is what the probe's exchange solves (it solved L + p o before: twice the o).
  for (bool cpuSends : {true, false}) {
    link.cpuSends = cpuSends;
    const double replayed = replaySchedules(exchange, 4, link).micros;
    EXPECT_GE(replayed, 2 * (p - 1) * link.overheadUs) << cpuSends;
    EXPECT_LE(replayed, 2 * (p - 1) * link.overheadUs + 0.1) << cpuSends;
    // The probe's solution from that time (with L + 2 o as the round trip's half) is the o
    // it was replayed with.
    ProbeTimes t = measuredTimes();
    t.one = 2 * (link.latencyUs + 2 * link.overheadUs);
    t.burstTrip = t.one;
    t.exchange = link.latencyUs + replayed;
    EXPECT_NEAR(linkFromProbe(t, link).overheadUs, link.overheadUs, 0.05) << cpuSends;
  }
}

// The tuner on the figures the probe measured at np 4 on this machine's 2 cores (perf/README.md,
// the tuner's pick; 2026-12-02, load 7-9): 8 B round trip 7.57 us, 8 x 8 B 16.81 us, 256 KiB
// 530.6 us, exchange of 8 B among the 4 ranks 24.15 us; copy and reduce at half a core. There
// rd measured 1.5x twoshot at 32 KiB and 1.8x at 4 KiB (and rhd tied rd at 32 KiB); the model
// whose sends left from a port beside the CPU had twoshot within 7% of rd at 32 KiB, and with
// the figures of other runs ahead of it.
TEST(CpuSends, ProbedFiguresAtFourRanksPutRdBeforeTwoshot) {
  ProbeTimes t;
  t.one = 7.57;
  t.burst = 8;
  t.burstTrip = 16.81;
  t.large = 530.6;
  t.exchangeRanks = 4;
  t.exchange = 24.15;
  LinkModel link = defaultLinkModel(LinkClass::Shm);
  link.copyBytesPerUs = 1.708e4;
  link.reduceBytesPerUs = 1.062e4;
  link = linkFromProbe(t, link);
  EXPECT_NEAR(link.overheadUs, (24.15 - 7.57 / 2) / 4, 1e-9);
  Tuning tuning = defaultTuning(LinkClass::Shm);
  tuning.model = link;
  tuning.ranks = 4;
  Tuner tuner(4, tuning, Tuner::Mode::Model);
  const std::vector<const Algorithm*> all = copyPathAllReduces();
  for (size_t bytes : {size_t{512}, size_t{4} << 10, size_t{32} << 10}) {
    EXPECT_STREQ(tuner.choose(Collective::AllReduce, bytes / 4, DataType::Float32, all, false).name,
                 "rd")
        << bytes;
    EXPECT_GT(predict("twoshot", 4, bytes, link), 1.2 * predict("rd", 4, bytes, link)) << bytes;
  }
  // The same figures with the sends on a port beside the CPU: twoshot's 3 sends a step
  // overlap its receives, and it comes out ahead of rd at 32 KiB.
  link.cpuSends = false;
  EXPECT_LT(predict("twoshot", 4, 32 << 10, link), predict("rd", 4, 32 << 10, link));
}

// A probe whose single round trips stalled (np 4 on 2 cores, 2026-12-02 17:51 UTC, load
// 3.6: 8 B round trip median 687.16 us, best 10.37 us; 8 x 8 B 258.55 us; 256 KiB 1773.3 us;
// exchange 276.14 us): taken as measured, L = 344 us and o = 0, and the tuner picked
// oneshot at 512 B to 32 KiB where rd measured 1.15-1.8x faster. A burst of 8 cannot take
// less than one message each way: the round trip is taken as at most the burst's.
TEST(CpuSends, AStalledRoundTripIsNoSlowerThanTheBurst) {
  ProbeTimes t;
  t.one = 687.16;
  t.oneBest = 10.37;
  t.burst = 8;
  t.burstTrip = 258.55;
  t.large = 1773.3;
  t.exchangeRanks = 4;
  t.exchange = 276.14;
  LinkModel link = defaultLinkModel(LinkClass::Shm);
  link.copyBytesPerUs = 1.961e4;
  link.reduceBytesPerUs = 1.139e4;
  link = linkFromProbe(t, link);
  EXPECT_NEAR(link.overheadUs, (276.14 - 258.55 / 2) / 4, 1e-9);
  EXPECT_NEAR(link.latencyUs, 258.55 / 2 - 2 * link.overheadUs, 1e-9);
  Tuning tuning = defaultTuning(LinkClass::Shm);
  tuning.model = link;
  Tuner tuner(4, tuning, Tuner::Mode::Model);
  const std::vector<const Algorithm*> all = copyPathAllReduces();
  for (size_t bytes : {size_t{512}, size_t{4} << 10, size_t{32} << 10})
    EXPECT_STREQ(tuner.choose(Collective::AllReduce, bytes / 4, DataType::Float32, all, false).name,
                 "rd")
        << bytes;
}

// Two probes whose 256 KiB round trips stalled while the 8 B ones did not (np 4 on 2
// cores, perf/README.md, the tuner's pick; 2026-12-03 09:54 UTC, load 0.07: 256 KiB median
// 2103.6 us, best 728.7; 06:11 UTC, load 3.5-9: 2255.9 us, best 244.7). From the medians the
// rate came out at 250 and 233 B/us and the tuner picked rhd, twoshot at 4 KiB, where rd
// measured 0.98-1.00 of the best and the picks 0.60 and 0.71 of it. The rate from the
// fastest rounds gives rd there; o and L stay the medians'.
TEST(CpuSends, AStalledLargeRoundTripDoesNotSetTheBandwidth) {
  for (const Np4Probe& p : {kIdleStalledProbe, kLoadedStalledProbe}) {
    const LinkModel link = shmLinkFrom(p);
    EXPECT_NEAR(link.bytesPerUs, ((256 << 10) - 8) / ((p.largeBest - p.oneBest) / 2), 1e-6);
    EXPECT_NEAR(link.overheadUs, (p.exchange - p.one / 2) / 4, 1e-9);  // the medians'
    Tuning tuning = defaultTuning(LinkClass::Shm);
    tuning.model = link;
    Tuner tuner(4, tuning, Tuner::Mode::Model);
    const std::vector<const Algorithm*> all = copyPathAllReduces();
    for (size_t bytes : {size_t{512}, size_t{4} << 10})
      EXPECT_STREQ(
          tuner.choose(Collective::AllReduce, bytes / 4, DataType::Float32, all, false).name, "rd")
          << p.large << " " << bytes;
  }
}

// An np 4 probe whose small rounds stalled in every round (2026-12-03 17:00 UTC, idle, load
// 2.3; perf/tuner_accuracy.sh -p 4 -K 7): its 8 B round trip's best (483.27 us) above the
// 256 KiB one's (39.3 us). Solved as it was: latency 222 us, 2.6e7 B/us, and the tuner took
// oneshot at 32-256 KiB (0.54 and 0.36 of the best) and twoshot at 2-16 MiB. The defaults
// stay instead.
TEST(CpuSends, StalledSmallRoundTripsKeepTheDefaults) {
  constexpr Np4Probe kStalledSmallProbe{500.67, 483.27, 598.83,  209.5,
                                        39.3,   19.71,  1.913e4, 1.336e4};
  const LinkModel link = shmLinkFrom(kStalledSmallProbe);
  const LinkModel defaults = defaultLinkModel(LinkClass::Shm);
  EXPECT_EQ(link.latencyUs, defaults.latencyUs);
  EXPECT_EQ(link.overheadUs, defaults.overheadUs);
  EXPECT_EQ(link.bytesPerUs, defaults.bytesPerUs);
  Tuning tuning = defaultTuning(LinkClass::Shm);
  tuning.model = link;
  Tuner tuner(4, tuning, Tuner::Mode::Model);
  const std::vector<const Algorithm*> all = copyPathAllReduces();
  // That run's columns: oneshot 0.54 and 0.36 of the best at 32 and 256 KiB; the defaults'
  // pick there, twoshot, 0.83 and 0.77.
  for (size_t bytes : {size_t{32} << 10, size_t{256} << 10})
    EXPECT_STREQ(tuner.choose(Collective::AllReduce, bytes / 4, DataType::Float32, all, false).name,
                 "twoshot")
        << bytes;
  // tcp's transport rate comes from the same rounds: left unmeasured, not bytes / 0.01 us.
  ProbeTimes t;
  t.one = 500.67, t.oneBest = 483.27, t.large = 209.5, t.largeBest = 39.3;
  LinkModel within;
  transportFromProbe(LinkClass::Tcp, t, 1, within, nullptr);
  EXPECT_EQ(within.transportBytesPerUs, 0);
  // A clean probe is still solved (the idle one above: the rate from its fastest rounds).
  EXPECT_NE(shmLinkFrom(kIdleStalledProbe).latencyUs, defaults.latencyUs);
}

// A stalled probe runs its rounds again (probeUntilSettled, as the communicator's setup
// calls it with rank 0's verdict): the recorded stalled probe above, then the idle clean one,
// gives the clean one's figures, not the defaults; a probe that stalls every time keeps the
// defaults after 1 + kStalledProbeRetries tries; a clean one runs once.
TEST(CpuSends, StalledProbeRunsAgain) {
  auto timesOf = [](const Np4Probe& p) {
    ProbeTimes t;
    t.one = p.one, t.oneBest = p.oneBest, t.burst = 8, t.burstTrip = p.burstTrip;
    t.large = p.large, t.largeBest = p.largeBest, t.exchangeRanks = 4, t.exchange = p.exchange;
    return t;
  };
  constexpr Np4Probe kStalled{500.67, 483.27, 598.83, 209.5, 39.3, 19.71, 1.913e4, 1.336e4};
  const LinkModel defaults = defaultLinkModel(LinkClass::Shm);
  auto verdict = [](const ProbeTimes& t, int) { return smallRoundsStalled(t); };
  // Stalled, then clean.
  std::vector<ProbeTimes> runs = {timesOf(kStalled), timesOf(kIdleStalledProbe)};
  size_t next = 0;
  int tries = 0;
  ProbeTimes settled =
      probeUntilSettled([&] { return runs.at(next++); }, verdict, kStalledProbeRetries, &tries);
  EXPECT_EQ(tries, 2);
  EXPECT_FALSE(smallRoundsStalled(settled));
  EXPECT_EQ(linkFromProbe(settled, defaults).latencyUs, shmLinkFrom(kIdleStalledProbe).latencyUs);
  EXPECT_NE(linkFromProbe(settled, defaults).latencyUs, defaults.latencyUs);
  // Stalled every time: as many tries as allowed, then the defaults.
  next = 0;
  runs.assign(1 + kStalledProbeRetries, timesOf(kStalled));
  settled =
      probeUntilSettled([&] { return runs.at(next++); }, verdict, kStalledProbeRetries, &tries);
  EXPECT_EQ(tries, 1 + kStalledProbeRetries);
  EXPECT_EQ(linkFromProbe(settled, defaults).latencyUs, defaults.latencyUs);
  // Clean at once: one run, the verdict asked once (attempt 0).
  next = 0;
  runs.assign(1, timesOf(kIdleStalledProbe));
  std::vector<int> asked;
  settled = probeUntilSettled([&] { return runs.at(next++); },
                              [&](const ProbeTimes& t, int attempt) {
                                asked.push_back(attempt);
                                return smallRoundsStalled(t);
                              },
                              kStalledProbeRetries, &tries);
  EXPECT_EQ(tries, 1);
  EXPECT_EQ(asked, std::vector<int>{0});
}

// The probe's blocks (quietestOfBlocks): each time the smallest of the blocks' medians and
// the fastest round of all, so one block inflated throughout (another tenant on a core for
// a few ms: the exchange 30.5 us against 12.1 in two idle np 4 probes, o 6.9 against 2.1)
// leaves the figures of the quiet ones; a time a block did not record (0) is not taken.
// Here no block is steady (smallRoundsSteady: median <= 1.5x fastest), so all count.
TEST(ProbeFigures, TheQuietestBlockOfEachTimeIsTaken) {
  ProbeTimes quiet = measuredTimes();
  quiet.oneBest = 3.9;  // 6.0 / 3.9 = 1.54: unsteady, as all three
  quiet.largeBest = 520.0;
  ProbeTimes busy = quiet;  // every median inflated, as in one of those probes
  busy.one = 9.0, busy.burstTrip = 14.0, busy.large = 900.0, busy.exchange = 30.5;
  busy.oneBest = 3.5;  // its fastest round the fastest of all
  busy.largeBest = 0;  // not recorded in this block
  ProbeTimes between = quiet;
  between.one = 6.5, between.exchange = 15.0, between.largeBest = 600.0;
  ASSERT_FALSE(smallRoundsSteady(quiet) || smallRoundsSteady(busy) || smallRoundsSteady(between));
  const ProbeTimes q = quietestOfBlocks({busy, between, quiet});
  EXPECT_EQ(q.one, 6.0);
  EXPECT_EQ(q.burstTrip, 7.4);
  EXPECT_EQ(q.large, quiet.large);
  EXPECT_EQ(q.exchange, 13.0);
  EXPECT_EQ(q.oneBest, 3.5);
  EXPECT_EQ(q.largeBest, 520.0);
  EXPECT_EQ(q.exchangeRanks, 4);
  // The link solved from it is the quiet block's but for the fastest 8 B round (rate only).
  const LinkModel start = defaultLinkModel(LinkClass::Shm);
  const LinkModel fromQuiet = linkFromProbe(quiet, start), fromAll = linkFromProbe(q, start);
  EXPECT_EQ(fromAll.overheadUs, fromQuiet.overheadUs);
  EXPECT_EQ(fromAll.latencyUs, fromQuiet.latencyUs);
  EXPECT_GT(linkFromProbe(busy, start).overheadUs, 2 * fromQuiet.overheadUs);
  EXPECT_EQ(quietestOfBlocks({quiet}).exchange, 13.0);
  EXPECT_EQ(quietestOfBlocks({}).one, 0.0);
  // The bursts' medians and fastest rounds likewise, each the least of the blocks'.
  quiet.midBurst = busy.midBurst = between.midBurst = 4;
  quiet.midBurstTrip = 6.9, busy.midBurstTrip = 6.5, between.midBurstTrip = 7.0;
  quiet.midBurstBest = 4.6, busy.midBurstBest = 4.4, between.midBurstBest = 0;
  quiet.burstBest = 5.1, busy.burstBest = 5.3, between.burstBest = 5.0;
  const ProbeTimes b = quietestOfBlocks({busy, between, quiet});
  EXPECT_EQ(b.midBurstTrip, 6.5);
  EXPECT_EQ(b.midBurstBest, 4.4);
  EXPECT_EQ(b.burstBest, 5.0);
}

// Steady 8 B round trips: the median at most 1.5x the fastest round, recorded, not stalled.
TEST(ProbeFigures, SteadyMeansTheMedianWithinOneAndAHalfFastestRounds) {
  ProbeTimes t;
  t.oneBest = 4.0, t.largeBest = 500.0;
  t.one = 6.0;
  EXPECT_TRUE(smallRoundsSteady(t));
  t.one = 6.01;
  EXPECT_FALSE(smallRoundsSteady(t));
  t.one = 4.0, t.oneBest = 0;  // fastest round not recorded
  EXPECT_FALSE(smallRoundsSteady(t));
  t.one = 510.0, t.oneBest = 500.0;  // stalled: fastest 8 B round no faster than 256 KiB's
  EXPECT_FALSE(smallRoundsSteady(t));
}

// Where a block is steady, the figures are the steady blocks' alone (quietestOfBlocks): an
// unsteady block's fastest round (there 3.0 us, a lucky round among waits for a core) or
// smaller medians of another time do not mix in. Figures made up for exact sums, of the
// shape of a loaded np 4 probe (2 cores, load 13, perf/README.md tuner13 s1: 8 B 45.8 us
// best 5.0, 42.7 best 18.0, then 17.3 best 16.4, steady).
TEST(ProbeFigures, SteadyBlocksAloneGiveTheFigures) {
  ProbeTimes steady = measuredTimes();  // 8 B 6.0, 8 x 8 B 7.4, 256 KiB 530.3, exchange 13.0
  steady.oneBest = 5.0, steady.largeBest = 520.0;
  ProbeTimes unsteady = steady;
  unsteady.one = 14.9, unsteady.oneBest = 3.0;
  unsteady.burstTrip = 7.0, unsteady.large = 500.0, unsteady.largeBest = 480.0;
  unsteady.exchange = 12.0;
  ProbeTimes otherSteady = steady;  // steady too, a larger median but a smaller exchange
  otherSteady.one = 6.6, otherSteady.oneBest = 4.5, otherSteady.exchange = 12.5;
  otherSteady.largeBest = 0;  // not recorded
  ASSERT_TRUE(smallRoundsSteady(steady) && smallRoundsSteady(otherSteady));
  ASSERT_FALSE(smallRoundsSteady(unsteady));

  const ProbeTimes one = quietestOfBlocks({unsteady, steady, unsteady});
  EXPECT_EQ(one.one, 6.0);
  EXPECT_EQ(one.oneBest, 5.0);
  EXPECT_EQ(one.burstTrip, 7.4);
  EXPECT_EQ(one.large, steady.large);
  EXPECT_EQ(one.largeBest, 520.0);
  EXPECT_EQ(one.exchange, 13.0);
  const LinkModel start = defaultLinkModel(LinkClass::Shm);
  const LinkModel fromSteady = linkFromProbe(steady, start), fromBlocks = linkFromProbe(one, start);
  EXPECT_EQ(fromBlocks.latencyUs, fromSteady.latencyUs);
  EXPECT_EQ(fromBlocks.overheadUs, fromSteady.overheadUs);
  EXPECT_EQ(fromBlocks.bytesPerUs, fromSteady.bytesPerUs);

  // Two steady blocks: the least of each of their times, still none of the unsteady one's.
  const ProbeTimes two = quietestOfBlocks({otherSteady, unsteady, steady});
  EXPECT_EQ(two.one, 6.0);
  EXPECT_EQ(two.oneBest, 4.5);
  EXPECT_EQ(two.burstTrip, 7.4);
  EXPECT_EQ(two.large, steady.large);
  EXPECT_EQ(two.largeBest, 520.0);
  EXPECT_EQ(two.exchange, 12.5);
}

// After the kProbeBlocks blocks, while none was steady, another block runs
// (probeBlocksUntilSteady, with rank 0's verdict needsAnotherBlock as the communicator asks
// it), at most kExtraProbeBlocks more; the figures are then the steady block's.
TEST(ProbeFigures, UnsteadyBlocksAreFollowedByASteadyOne) {
  ProbeTimes steady = measuredTimes();
  steady.oneBest = 5.0, steady.largeBest = 520.0;
  ProbeTimes unsteady = steady;
  unsteady.one = 14.9, unsteady.oneBest = 4.1, unsteady.exchange = 11.0;
  auto run = [](const std::vector<ProbeTimes>& sequence, std::vector<size_t>* asked) {
    size_t next = 0;
    return probeBlocksUntilSteady([&] { return sequence.at(next++); },
                                  [&](const std::vector<ProbeTimes>& sofar) {
                                    asked->push_back(sofar.size());
                                    return needsAnotherBlock(sofar);
                                  },
                                  kExtraProbeBlocks);
  };
  static_assert(kProbeBlocks == 3 && kExtraProbeBlocks == 3);
  // Three unsteady blocks, then a steady one: four blocks, the steady one's figures.
  std::vector<size_t> asked;
  std::vector<ProbeTimes> blocks = run({unsteady, unsteady, unsteady, steady, unsteady}, &asked);
  EXPECT_EQ(blocks.size(), 4u);
  EXPECT_EQ(asked, (std::vector<size_t>{3, 4}));
  const ProbeTimes q = quietestOfBlocks(blocks);
  EXPECT_EQ(q.one, 6.0);
  EXPECT_EQ(q.oneBest, 5.0);
  EXPECT_EQ(q.exchange, 13.0);
  // A steady block among the first three: no more blocks.
  asked.clear();
  blocks = run({unsteady, steady, unsteady}, &asked);
  EXPECT_EQ(blocks.size(), 3u);
  EXPECT_EQ(asked, std::vector<size_t>{3});
  // Never steady: 3 + kExtraProbeBlocks blocks, the quietest of each time over all of them.
  asked.clear();
  blocks = run(std::vector<ProbeTimes>(6, unsteady), &asked);
  EXPECT_EQ(blocks.size(), 6u);
  EXPECT_EQ(asked, (std::vector<size_t>{3, 4, 5}));
  EXPECT_EQ(quietestOfBlocks(blocks).one, 14.9);
  // A rank without a partner measures nothing: no block more.
  EXPECT_FALSE(needsAnotherBlock(std::vector<ProbeTimes>(3)));
}

// shm's sends at the rank's copy rate (sendsAtCopyRate). The idle np 4 probe above
// (09:54 UTC, load 0.07; the 256 KiB rate from its fastest round, 725 B/us; copy and reduce
// at half a core) put rhd before rd at 32 KiB, where rd measured 17.7 us and the best, rhd
// 23.5 us (0.75 of rd; in 12 np 4 runs at load 0.07-12 rd's median share of the best at
// 32 KiB 0.93, rhd's 0.87). With the copy rate as the wire rate rd is picked there, and the
// predictions come near the measured times; np 2's picks (rd to 128 KiB, ring from 512 KiB)
// stay as they were.
TEST(CpuSends, ShmSendsMoveTheirBytesAtTheCopyRate) {
  const LinkModel probed = shmLinkFrom(kIdleStalledProbe);
  LinkModel link = probed;
  sendsAtCopyRate(link);
  EXPECT_EQ(link.bytesPerUs, 2.111e4);
  const std::vector<const Algorithm*> all = copyPathAllReduces();
  auto pick = [&](int nranks, const LinkModel& m, size_t bytes) {
    Tuning tuning = defaultTuning(LinkClass::Shm);
    tuning.model = m;
    Tuner tuner(nranks, tuning, Tuner::Mode::Model);
    return std::string(
        tuner.choose(Collective::AllReduce, bytes / 4, DataType::Float32, all, false).name);
  };
  for (size_t bytes : {size_t{512}, size_t{4} << 10, size_t{32} << 10})
    EXPECT_EQ(pick(4, link, bytes), "rd") << bytes;
  // Measured idle at 32 KiB: ring 23.7 us, twoshot 24.0, rd 17.7, rhd 23.5.
  EXPECT_NEAR(predict("ring", 4, 32 << 10, link), 23.7, 0.3 * 23.7);
  EXPECT_NEAR(predict("twoshot", 4, 32 << 10, link), 24.0, 0.3 * 24.0);
  EXPECT_NEAR(predict("rd", 4, 32 << 10, link), 17.7, 0.3 * 17.7);
  // A link whose sends leave from a port (tcp, verbs) keeps its probed rate.
  LinkModel port = probed;
  port.cpuSends = false;
  sendsAtCopyRate(port);
  EXPECT_EQ(port.bytesPerUs, probed.bytesPerUs);
  // np 2 (its probe of 2026-12-03 08:46 UTC: L 2.53 us, o 0.90 us, 832 B/us; a core each).
  LinkModel two = defaultLinkModel(LinkClass::Shm);
  two.latencyUs = 2.53;
  two.overheadUs = 0.90;
  two.bytesPerUs = 832;
  two.copyBytesPerUs = 4.2e4;
  two.reduceBytesPerUs = 2.6e4;
  LinkModel twoCopy = two;
  sendsAtCopyRate(twoCopy);
  for (size_t bytes = 512; bytes <= (size_t{16} << 20); bytes *= 8)
    EXPECT_EQ(pick(2, twoCopy, bytes), pick(2, two, bytes)) << bytes;
}

// The staged path (peer_staged, Tuner::chooseStaged) against the copy path, both by the
// replay of the schedules the engine runs, on the idle np 4 probe above (copy rate as the
// wire rate) and np 2's of 08:46 UTC. Measured at np 4 (perf/README.md, the tuner's pick;
// staged's median share of the best fixed algorithm over 2-13 runs at load 0-12): 64 and
// 128 KiB 0.50-0.69, 256 KiB 0.67 (rhd 0.94), 512 KiB 0.95-1.00 (3 of 3 within 10%), 2 MiB
// 0.99, 16 MiB 1.00; at np 2 0.84-0.93 at 256 KiB-16 MiB. The threshold it replaces took
// staged from 64 KiB at np 4. Two costs of the engine's the replay had left out decide it:
// a receive on shm copies the bytes out of the FIFO (ring's and twoshot's all-gather half,
// which staged's reads in place replace), and every Expose is a record through the channel
// that both ends handle, empty ones ("done with yours") too (staged's 3 (n-1) a round).
TEST(StagedPath, ChosenByTheReplayAgainstTheCopyPathsPick) {
  LinkModel four = shmLinkFrom(kIdleStalledProbe);
  sendsAtCopyRate(four);
  LinkModel two = defaultLinkModel(LinkClass::Shm);
  two.latencyUs = 2.53;
  two.overheadUs = 0.90;
  two.copyBytesPerUs = 4.2e4;
  two.reduceBytesPerUs = 2.6e4;
  sendsAtCopyRate(two);
  const std::vector<const Algorithm*> all = copyPathAllReduces();
  auto any = [](const Algorithm&) { return true; };
  auto pick = [&](int nranks, const LinkModel& m, size_t bytes) {
    Tuning tuning = defaultTuning(LinkClass::Shm);
    tuning.model = m;
    Tuner tuner(nranks, tuning, Tuner::Mode::Model);
    const Algorithm* staged =
        tuner.chooseStaged(Collective::AllReduce, bytes / 4, DataType::Float32, all, any);
    return std::string(
        staged
            ? staged->name
            : tuner.choose(Collective::AllReduce, bytes / 4, DataType::Float32, all, false).name);
  };
  const size_t kib = 1024, mib = kib * kib;
  for (size_t bytes : {64 * kib, 128 * kib, 256 * kib})
    EXPECT_NE(pick(4, four, bytes), "peer_staged") << bytes;
  for (size_t bytes : {2 * mib, 16 * mib}) EXPECT_EQ(pick(4, four, bytes), "peer_staged") << bytes;
  for (size_t bytes = 256 * kib; bytes <= 16 * mib; bytes *= 4)
    EXPECT_NE(pick(2, two, bytes), "peer_staged") << bytes;
  // The two costs: without them (their share of the time taken off again) staged came out
  // ahead of every copy algorithm from 32 KiB at np 4.
  EXPECT_GT(predict("peer_staged", 4, 32 * kib, four), 1.5 * predict("rd", 4, 32 * kib, four));
  EXPECT_GT(predict("ring", 4, 16 * mib, four), 1.1 * predict("peer_staged", 4, 16 * mib, four));
}

// Every hand-over between two ranks costs the probe's o at each end, whichever path makes
// it: each of peer_staged's records (per round and rank 3 (n - 1) posted, as many taken:
// 18 at np 4, 4 rounds at 16 MiB) and each FIFO-full of a copy-path message over shm (the
// sender fills the 1 MiB FIFO and waits for the receiver to drain it; the replay had
// charged a message one o whatever its size). Priced per record against per message, a
// larger o (the probe's exchange: at np 4 on 2 cores mostly each message's wait for a
// core) raised staged's 16 MiB price 72 o against rhd's 8 and the replay chose rhd where
// staged measured 1.03-1.14x faster (perf/README.md, bw10, bw11). Counted by hand-overs:
// rhd's sends are 8 + 4 + 4 + 8 MiB, 24 FIFO-fulls, each with an o at both ends (48).
TEST(StagedPath, HandOversCostTheSameOnBothPaths) {
  LinkModel idle = defaultLinkModel(LinkClass::Shm);
  sendsAtCopyRate(idle);
  idle.overheadUs = 0;
  LinkModel slow = idle;
  slow.overheadUs = 10;
  const size_t mib = size_t{1} << 20;
  // One message of 4 MiB is 4 FIFO-fulls: 3 hand-overs more than one of 1 MiB, each an o
  // on the sender's CPU before its last byte leaves (the receiver's pipeline behind it).
  const Algorithm* send = findAlgorithm(Collective::Send, "direct");
  ASSERT_NE(send, nullptr);
  auto message = [&](const LinkModel& m, size_t bytes) {
    return predictMicros(*send, Collective::Send, 2, bytes, 1, m);
  };
  auto growth = [&](size_t bytes) { return message(slow, bytes) - message(idle, bytes); };
  EXPECT_NEAR(growth(4 * mib) - growth(mib), 3 * slow.overheadUs, 0.5 * slow.overheadUs);
  // 16 MiB at np 4: what o adds to each, in the ratio of their hand-overs (72 : 48).
  const double staged =
      predict("peer_staged", 4, 16 * mib, slow) - predict("peer_staged", 4, 16 * mib, idle);
  const double rhd = predict("rhd", 4, 16 * mib, slow) - predict("rhd", 4, 16 * mib, idle);
  EXPECT_NEAR(staged, 72 * slow.overheadUs, 8 * slow.overheadUs);
  EXPECT_NEAR(rhd, 48 * slow.overheadUs, 8 * slow.overheadUs);
  // The pick follows the probe's o: staged while its extra records cost less than the bytes
  // it does not move (about 8 MiB of copies and 5 of reduce here, 45 o at 20 us), rhd once
  // o is several times that (a loaded node's probe).
  const std::vector<const Algorithm*> all = copyPathAllReduces();
  auto any = [](const Algorithm&) { return true; };
  auto pick = [&](double overheadUs) {
    Tuning tuning = defaultTuning(LinkClass::Shm);
    tuning.model = idle;
    tuning.model.overheadUs = overheadUs;
    Tuner tuner(4, tuning, Tuner::Mode::Model);
    const Algorithm* chosen =
        tuner.chooseStaged(Collective::AllReduce, 4 * mib, DataType::Float32, all, any);
    return std::string(chosen ? chosen->name : "copy path");
  };
  EXPECT_EQ(pick(2), "peer_staged");
  EXPECT_EQ(pick(20), "peer_staged");
  EXPECT_EQ(pick(200), "copy path");
}

TEST(PipelineSlice, OneConstantForTheEngineTheSettingAndTheModel) {
  const settings::Spec* spec = settings::find("CHORUS_SLICE_BYTES");
  ASSERT_NE(spec, nullptr);
  const settings::Environment unset = [](std::string_view) { return std::optional<std::string>(); };
  EXPECT_EQ(settings::read(*spec, unset).number, static_cast<int64_t>(kPipelineSliceBytes));
  EXPECT_EQ(EngineConfig{}.sliceBytes, kPipelineSliceBytes);
}

TEST(PipelineSlice, ReachesThePredictionAndTheTunersChoice) {
  const LinkModel link = defaultLinkModel(LinkClass::Shm);
  // The ring pipelines its 2 (p - 1) steps by slices: a smaller slice fills faster.
  const double small = predict("ring", 4, 16 << 20, link, 16 << 10);
  const double large = predict("ring", 4, 16 << 20, link, 4 << 20);
  EXPECT_LT(small, large);
  EXPECT_EQ(predict("ring", 4, 16 << 20, link),
            predict("ring", 4, 16 << 20, link, kPipelineSliceBytes));
  // A size where the slice changes the best algorithm; the tuner follows its own slice.
  const std::vector<const Algorithm*> all = copyPathAllReduces();
  bool found = false;
  for (size_t bytes = 64 << 10; bytes <= (64u << 20) && !found; bytes *= 2) {
    const size_t count = bytes / 4;
    const auto* fine =
        rankAlgorithms(Collective::AllReduce, 4, count, 4, link, nullptr, nullptr, 4 << 10)
            .front()
            .algorithm;
    const auto* coarse =
        rankAlgorithms(Collective::AllReduce, 4, count, 4, link, nullptr, nullptr, 64 << 20)
            .front()
            .algorithm;
    if (fine == coarse) continue;
    found = true;
    Tuner fineTuner(4, defaultTuning(LinkClass::Shm), Tuner::Mode::Model, nullptr, std::nullopt,
                    4 << 10);
    Tuner coarseTuner(4, defaultTuning(LinkClass::Shm), Tuner::Mode::Model, nullptr, std::nullopt,
                      64 << 20);
    EXPECT_EQ(&fineTuner.choose(Collective::AllReduce, count, DataType::Float32, all, false), fine)
        << bytes;
    EXPECT_EQ(&coarseTuner.choose(Collective::AllReduce, count, DataType::Float32, all, false),
              coarse)
        << bytes;
  }
  EXPECT_TRUE(found) << "no size where the slice changes the best algorithm";
}

}  // namespace
}  // namespace chorus

namespace chorus {
namespace {

// np 2 on shm from 2 MiB: with the copy rate below the reduction's, as rank 0's memcpy timed
// it in 2 of 3 probes at load 7-12 (2026-12-04 15:06, main: L 5.438 us, o 0.5196 us, copy
// 2.874e4 B/us, reduce 3.06e4), the replay put rd before ring (1148.7 against 1166.4 us at
// 16 MiB, as CHORUS_DEBUG=INFO printed), where ring ran 1.10-1.33x rd at 16 MiB in 3 runs;
// with the copy rate floored at kCopyOverReduce x the reduction's (copyRateFloor), ring.
TEST(LocalRates, ACopyTimedBelowTheReductionIsFlooredAndRingLeadsAtTwoRanks) {
  EXPECT_EQ(copyRateFloor(2.874e4, 3.06e4), 1.5 * 3.06e4);
  EXPECT_EQ(copyRateFloor(5.514e4, 3.402e4), 5.514e4);  // an undisturbed probe: kept
  LinkModel link = defaultLinkModel(LinkClass::Shm);
  link.latencyUs = 5.438, link.overheadUs = 0.5196;
  link.copyBytesPerUs = 2.874e4, link.reduceBytesPerUs = 3.06e4;
  link.bytesPerUs = 0;
  link.channelBytes = 1 << 20;
  LinkModel measured = link, floored = link;
  sendsAtCopyRate(measured);
  floored.copyBytesPerUs = copyRateFloor(link.copyBytesPerUs, link.reduceBytesPerUs);
  sendsAtCopyRate(floored);
  for (size_t bytes : {size_t{2} << 20, size_t{16} << 20}) {
    SCOPED_TRACE(bytes);
    EXPECT_LT(predict("rd", 2, bytes, measured), predict("ring", 2, bytes, measured));
    EXPECT_LT(predict("ring", 2, bytes, floored), predict("rd", 2, bytes, floored));
  }
}

}  // namespace
}  // namespace chorus
