// The tuner's pieces: tune files (round trip, errors with line numbers, nearest entry),
// the calibration fit (recovers the figures that generated its input), the per-message
// overhead in the cost model, and the tuner's choice among the allowed algorithms.
#include "tuner/tuner.hpp"
#include "../common/algorithm_lookup.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/fit.hpp"
#include "tuner/tuning.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace chorus {
namespace {

using test::allReduce;

std::string errorOf(std::string_view text) {
  try {
    parseTuneFile(text, "t");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::InvalidArgument);
    return e.what();
  }
  return "no error";
}

TEST(TuneFile, LineRoundTrips) {
  // What a tune file of t's one line gives back (its source is where it was read from).
  auto reread = [](const Tuning& t) {
    Tuning back = parseTuneFile(t.toLine(), "t").at(0);
    back.source = t.source;
    return back;
  };
  Tuning t = defaultTuning(LinkClass::Tcp);
  t.ranks = 3;
  t.model = {12.5, 900, 8000, 15000, 2.25, 450, 1800};
  t.reduceBytesPerUs[static_cast<int>(DataType::Bfloat16)] = 2100;
  EXPECT_NE(t.toLine().find(" transport_bytes_per_us=450"), std::string::npos);
  EXPECT_NE(t.toLine().find(" nic_bytes_per_us=1800"), std::string::npos);
  auto parsed = parseTuneFile("# comment\n\n" + t.toLine() + "  # trailing\n", "t");
  ASSERT_EQ(parsed.size(), 1u);
  parsed[0].source = t.source;
  EXPECT_EQ(parsed[0], t);
  EXPECT_EQ(parsed[0].forType(DataType::Bfloat16).reduceBytesPerUs, 2100);
  EXPECT_EQ(parsed[0].forType(DataType::Float32).reduceBytesPerUs, 8000);
  // Absent (every file written before it existed): no transport cost.
  EXPECT_EQ(parseTuneFile("tcp latency_us=3\n")[0].model.transportBytesPerUs, 0);
  EXPECT_EQ(defaultTuning(LinkClass::Tcp).toLine().find("transport"), std::string::npos);
  // Nor a shared NIC.
  EXPECT_EQ(parseTuneFile("tcp latency_us=3\n")[0].model.nicBytesPerUs, 0);
  EXPECT_EQ(defaultTuning(LinkClass::Tcp).toLine().find("nic_"), std::string::npos);
  // A rate-limited NIC's token bucket (CHORUS_NIC_BURST, the netns bed's tbf).
  t.model.nicBurstBytes = 1250000;
  EXPECT_NE(t.toLine().find(" nic_burst_bytes=1250000"), std::string::npos);
  EXPECT_EQ(reread(t), t);
  EXPECT_EQ(parseTuneFile("tcp latency_us=3\n")[0].model.nicBurstBytes, 0);
  t.model.nicBurstBytes = 0;
  // The shares of a core the overhead was measured at and a call runs at (the probe's).
  t.model.overheadShare = 0.6667;
  t.model.callShare = 0.3333;
  EXPECT_NE(t.toLine().find(" overhead_share=0.6667 call_share=0.3333"), std::string::npos);
  EXPECT_EQ(reread(t), t);
  EXPECT_EQ(parseTuneFile("tcp latency_us=3\n")[0].model.callShare, 0);
  EXPECT_EQ(defaultTuning(LinkClass::Tcp).toLine().find("share"), std::string::npos);
  // A pair's o where the exchange's replaced it (the one-sided choice's).
  t.model.pairOverheadUs = 0.43;
  t.model.pairOverheadShare = 1;
  EXPECT_NE(t.toLine().find(" pair_overhead_us=0.43 pair_overhead_share=1"), std::string::npos);
  EXPECT_EQ(reread(t), t);
  EXPECT_EQ(parseTuneFile("tcp latency_us=3\n")[0].model.pairOverheadUs, 0);
  EXPECT_EQ(defaultTuning(LinkClass::Tcp).toLine().find("pair"), std::string::npos);
}

TEST(TuneFile, BadInputNamesTheLine) {
  EXPECT_NE(errorOf("shm latency_us=1\nwarp latency_us=1").find("t:2: unknown link class"),
            std::string::npos);
  EXPECT_NE(errorOf("shm latency_us").find("t:1: expected key=value"), std::string::npos);
  EXPECT_NE(errorOf("shm latency_us=-3").find("t:1:"), std::string::npos);
  EXPECT_NE(errorOf("shm latency_us=abc").find("t:1:"), std::string::npos);
  EXPECT_NE(errorOf("shm latency_us=inf").find("t:1:"), std::string::npos);
  EXPECT_NE(errorOf("shm bytes_per_us=0").find("must be > 0"), std::string::npos);
  EXPECT_NE(errorOf("shm colour=3").find("unknown key 'colour'"), std::string::npos);
  EXPECT_NE(errorOf("shm reduce.int128=3").find("unknown data type"), std::string::npos);
  EXPECT_NE(errorOf("shm ranks=2.5").find("whole number"), std::string::npos);
  EXPECT_NE(errorOf("shm =3").find("key=value"), std::string::npos);
  EXPECT_NE(errorOf("tcp call_share=1.5").find("t:1: 'call_share' is a share of a core"),
            std::string::npos);
  EXPECT_NE(errorOf("tcp pair_overhead_share=2").find("t:1: 'pair_overhead_share' is a share"),
            std::string::npos);
}

TEST(TuneFile, PicksTheNearestRankCountOfTheLink) {
  auto entries = parseTuneFile(
      "shm ranks=2 latency_us=1\nshm ranks=8 latency_us=8\ntcp ranks=4 latency_us=40\n");
  EXPECT_EQ(pickTuning(entries, LinkClass::Shm, 3)->model.latencyUs, 1);
  EXPECT_EQ(pickTuning(entries, LinkClass::Shm, 5)->model.latencyUs, 1);  // tie: fewer ranks
  EXPECT_EQ(pickTuning(entries, LinkClass::Shm, 6)->model.latencyUs, 8);
  EXPECT_EQ(pickTuning(entries, LinkClass::Tcp, 64)->model.latencyUs, 40);
  EXPECT_FALSE(pickTuning(entries, LinkClass::Ib, 4).has_value());
}

TEST(TuneFile, UpdateReplacesOnlyItsEntry) {
  const std::string path = "/tmp/chorus_tune_test_" + std::to_string(getpid());
  std::ofstream(path) << "shm ranks=2 latency_us=1\ntcp ranks=2 latency_us=30\n";
  Tuning t = defaultTuning(LinkClass::Shm);
  t.ranks = 2;
  t.model.latencyUs = 5;
  updateTuneFile(path, t);
  auto entries = readTuneFile(path);
  std::remove(path.c_str());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(pickTuning(entries, LinkClass::Shm, 2)->model.latencyUs, 5);
  EXPECT_EQ(pickTuning(entries, LinkClass::Tcp, 2)->model.latencyUs, 30);
  EXPECT_THROW(readTuneFile(path), Error);  // gone now: a clear error, not defaults
}

// Measurements generated by the model itself from known figures: the fit must find them.
TEST(Fit, RecoversTheFiguresThatMadeTheTimes) {
  const LinkModel truth{7, 3000, 9000, 15000, 1.5};
  std::vector<Measurement> points;
  for (const char* name : {"ring", "oneshot", "twoshot", "rd", "rhd"})
    for (size_t bytes : {8u, 512u, 8u << 10, 64u << 10, 512u << 10, 4u << 20})
      for (int p : {3, 6}) {
        const Algorithm& a = allReduce(name);
        points.push_back(
            {&a, p, bytes / 4, 4, predictMicros(a, Collective::AllReduce, p, bytes / 4, 4, truth)});
      }
  LinkModel start = truth;
  start.latencyUs = 1, start.overheadUs = 0.1, start.bytesPerUs = 100;
  const Fit fit = fitLink(points, start);
  EXPECT_LT(fit.rmsLogError, 0.03);
  EXPECT_NEAR(fit.link.latencyUs, truth.latencyUs, 0.15 * truth.latencyUs);
  EXPECT_NEAR(fit.link.overheadUs, truth.overheadUs, 0.15 * truth.overheadUs);
  EXPECT_NEAR(fit.link.bytesPerUs, truth.bytesPerUs, 0.15 * truth.bytesPerUs);
}

// One step to p-1 peers costs p-1 overheads on the sender: one-shot's single step is
// no longer free of the rank count.
TEST(CostModel, PerMessageOverheadSerialisesOnTheRank) {
  const double inf = std::numeric_limits<double>::infinity();
  const LinkModel noOverhead{5, 1e6, inf, inf, 0}, withOverhead{5, 1e6, inf, inf, 2};
  const double p2 =
      predictMicros(allReduce("oneshot"), Collective::AllReduce, 2, 1, 4, withOverhead);
  const double p8 =
      predictMicros(allReduce("oneshot"), Collective::AllReduce, 8, 1, 4, withOverhead);
  EXPECT_NEAR(predictMicros(allReduce("oneshot"), Collective::AllReduce, 8, 1, 4, noOverhead), 5,
              0.01);
  EXPECT_GE(p8 - p2, 6 * 2 * 2 - 0.01);  // 6 more sends and 6 more receives
}

TEST(Tuner, PicksTheFastestAllowedAndAgreesWithTheModel) {
  Tuning tuning = defaultTuning(LinkClass::Shm);
  Tuner tuner(8, tuning, Tuner::Mode::Model);
  std::vector<const Algorithm*> all;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == Collective::AllReduce) all.push_back(&a);
  for (size_t count : {size_t{2}, size_t{4096}, size_t{1} << 22}) {
    const Algorithm& chosen =
        tuner.choose(Collective::AllReduce, count, DataType::Float32, all, false);
    const auto ranked = rankAlgorithms(Collective::AllReduce, 8, count, 4, tuning.model);
    EXPECT_EQ(&chosen, ranked.front().algorithm) << count;
    // Without the winner, the runner-up.
    std::vector<const Algorithm*> rest;
    for (const Algorithm* a : all)
      if (a != &chosen) rest.push_back(a);
    tuner.reset();
    EXPECT_EQ(&tuner.choose(Collective::AllReduce, count, DataType::Float32, rest, false),
              ranked[1].algorithm)
        << count;
    tuner.reset();
  }
}

TEST(Tuner, StaticModeKeepsTheFixedThresholds) {
  Tuner tuner(8, defaultTuning(LinkClass::Shm), Tuner::Mode::Static);
  std::vector<const Algorithm*> all;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == Collective::AllReduce) all.push_back(&a);
  for (size_t count : {size_t{2}, size_t{1} << 14, size_t{1} << 24})
    EXPECT_EQ(&tuner.choose(Collective::AllReduce, count, DataType::Float32, all, false),
              &defaultAlgorithm(Collective::AllReduce, count * 4, 8));
}

}  // namespace
}  // namespace chorus

namespace chorus {
namespace {

// A calibration's measured winners override the model near their sizes, for the rank
// count they were measured on, and only among the allowed algorithms.
TEST(Tuner, MeasuredWinnersOverrideTheModel) {
  auto entries =
      parseTuneFile("shm ranks=4 latency_us=1 best=8:oneshot,65536:rd,16777216:twoshot\n");
  ASSERT_EQ(entries.at(0).measuredBest.size(), 3u);
  EXPECT_NE(entries[0].toLine().find("best=8:oneshot,65536:rd,16777216:twoshot"),
            std::string::npos);
  EXPECT_THROW(parseTuneFile("shm best=8"), Error);
  EXPECT_THROW(parseTuneFile("shm best=x:ring"), Error);
  std::vector<const Algorithm*> all;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == Collective::AllReduce) all.push_back(&a);
  Tuner tuner(4, entries[0], Tuner::Mode::Model);
  auto pick = [&](size_t count, std::span<const Algorithm* const> from) {
    tuner.reset();
    return std::string(
        tuner.choose(Collective::AllReduce, count, DataType::Float32, from, false).name);
  };
  EXPECT_EQ(pick(2, all), "oneshot");  // 8 B
  EXPECT_EQ(pick(8192, all), "rd");    // 32 KiB: nearest is 64 KiB
  EXPECT_EQ(pick(size_t{1} << 24, all), "twoshot");
  std::vector<const Algorithm*> noRd;
  for (const Algorithm* a : all)
    if (std::string_view(a->name) != "rd") noRd.push_back(a);
  EXPECT_NE(pick(16384, noRd), "rd");              // excluded: the model decides
  Tuner other(8, entries[0], Tuner::Mode::Model);  // measured on 4 ranks, not 8
  const auto ranked = rankAlgorithms(Collective::AllReduce, 8, 2, 4, entries[0].model);
  EXPECT_EQ(&other.choose(Collective::AllReduce, 2, DataType::Float32, all, false),
            ranked.front().algorithm);
}

}  // namespace
}  // namespace chorus

namespace chorus {
namespace {

// The copy / one-sided choice (Tuner::chooseOneSided): only where reading in place was
// measured to pay (sizes, ranks, CMA on 4 KiB pages never), never what CHORUS_ALGO
// excluded; among the one-sided algorithms, the replay's fastest.
TEST(Tuner, OneSidedOnlyWhereItWasMeasuredToPay) {
  auto any = [](const Algorithm&) { return true; };
  auto name = [](const Algorithm* a) { return std::string(a ? a->name : "copy"); };
  auto floats = [](size_t bytes) { return bytes / 4; };
  const DataType f32 = DataType::Float32;
  const auto mapped = Tuner::Reach::Mapped, cma = Tuner::Reach::Cma,
             cmaHuge = Tuner::Reach::CmaHugePages;
  Tuner four(4, defaultTuning(LinkClass::Shm), Tuner::Mode::Model);
  EXPECT_EQ(name(four.chooseOneSided(Collective::AllReduce, floats(32 << 10), f32, mapped, any)),
            "copy");
  EXPECT_EQ(name(four.chooseOneSided(Collective::AllReduce, floats(64 << 10), f32, mapped, any)),
            "peer_push");
  EXPECT_EQ(name(four.chooseOneSided(Collective::AllReduce, floats(64 << 20), f32, cma, any)),
            "copy");
  // CMA reads, never CMA writes (peer_push writes into the peers' memory).
  EXPECT_EQ(name(four.chooseOneSided(Collective::AllReduce, floats(64 << 20), f32, cmaHuge, any)),
            "peer_twoshot");
  auto notTwoshot = [](const Algorithm& a) {
    return std::string(a.name) != "peer_twoshot" && std::string(a.name) != "peer_push";
  };
  EXPECT_EQ(
      name(four.chooseOneSided(Collective::AllReduce, floats(64 << 20), f32, mapped, notTwoshot)),
      "peer_ring");
  auto noneOneSided = [](const Algorithm& a) { return !a.oneSided; };
  EXPECT_EQ(
      name(four.chooseOneSided(Collective::AllReduce, floats(64 << 20), f32, mapped, noneOneSided)),
      "copy");
  EXPECT_EQ(name(four.chooseOneSided(Collective::Reduce, floats(64 << 20), f32, mapped, any)),
            "copy");  // no one-sided reduce
  // The other collectives from the buffer sizes measured to pay (all-gather's output,
  // reduce-scatter's input: count x ranks); all-to-all never by itself.
  EXPECT_EQ(name(four.chooseOneSided(Collective::Broadcast, floats(512 << 10), f32, mapped, any)),
            "copy");
  EXPECT_EQ(name(four.chooseOneSided(Collective::Broadcast, floats(1 << 20), f32, mapped, any)),
            "peer_direct");
  EXPECT_EQ(
      name(four.chooseOneSided(Collective::ReduceScatter, floats(1 << 20) / 4, f32, mapped, any)),
      "copy");
  EXPECT_EQ(
      name(four.chooseOneSided(Collective::ReduceScatter, floats(4 << 20) / 4, f32, mapped, any)),
      "peer_direct");
  EXPECT_EQ(
      name(four.chooseOneSided(Collective::AllGather, floats(64 << 20) / 4, f32, mapped, any)),
      "peer_ring");
  EXPECT_EQ(name(four.chooseOneSided(Collective::AllToAll, floats(64 << 20) / 4, f32, mapped, any)),
            "copy");
  Tuner two(2, defaultTuning(LinkClass::Shm), Tuner::Mode::Model);
  EXPECT_EQ(name(two.chooseOneSided(Collective::AllReduce, floats(64 << 10), f32, mapped, any)),
            "copy");
  // peer_push from 128 KiB on mapped buffers; read by CMA (peer_twoshot) from 256 KiB.
  EXPECT_EQ(name(two.chooseOneSided(Collective::AllReduce, floats(128 << 10), f32, mapped, any)),
            "peer_push");
  EXPECT_EQ(name(two.chooseOneSided(Collective::AllReduce, floats(128 << 10), f32, cmaHuge, any)),
            "copy");
  EXPECT_EQ(name(two.chooseOneSided(Collective::AllReduce, floats(256 << 10), f32, cmaHuge, any)),
            "peer_twoshot");
  EXPECT_EQ(name(two.chooseOneSided(Collective::AllReduce, floats(4 << 20), f32, mapped, any)),
            "peer_push");
  Tuner one(1, defaultTuning(LinkClass::Shm), Tuner::Mode::Model);
  EXPECT_EQ(name(one.chooseOneSided(Collective::AllReduce, floats(4 << 20), f32, mapped, any)),
            "copy");
}

// np 3 on 2 cores: the probe's exchange put o at 25.7 us (6.8 us in another probe) against a
// pair's 0.43 us; charged per record, the exchange's o put peer_oneshot and peer_ring ahead,
// where peer_push measured 1.5-2.9x faster than either at 256 KiB-4 MiB (perf/README.md,
// one-sided at np 3). A record costs a pair's o: peer_push at every size.
TEST(Tuner, OneSidedRecordsCostAPairsOverhead) {
  auto any = [](const Algorithm&) { return true; };
  auto name = [](const Algorithm* a) { return std::string(a ? a->name : "copy"); };
  Tuning probed = parseTuneFile(
      "shm ranks=3 latency_us=0.05 overhead_us=25.73 bytes_per_us=3.149e+04 "
      "copy_bytes_per_us=3.149e+04 reduce_bytes_per_us=2.099e+04 overhead_share=0.6667 "
      "call_share=0.6667 pair_overhead_us=0.428 pair_overhead_share=1\n")[0];
  for (const double exchangeO : {25.73, 6.788}) {
    probed.model.overheadUs = exchangeO;
    Tuner three(3, probed, Tuner::Mode::Model);
    for (size_t bytes : {size_t{256} << 10, size_t{1} << 20, size_t{4} << 20})
      EXPECT_EQ(name(three.chooseOneSided(Collective::AllReduce, bytes / 4, DataType::Float32,
                                          Tuner::Reach::Mapped, any)),
                "peer_push")
          << exchangeO << " us, " << bytes << " B";
  }
}

// Over verbs (peers' buffers read by RDMA READ) the copy path with its zero-copy rendezvous
// was measured faster than every one-sided all-reduce (perf/README.md, verbs): the tuner
// never picks a one-sided algorithm there, at any size or rank count, whatever the cost
// model predicts; CHORUS_ALGO still forces one (CommImpl::prepare).
TEST(Tuner, NoOneSidedOverTheNetwork) {
  auto any = [](const Algorithm&) { return true; };
  for (int n : {2, 3, 4, 8}) {
    for (LinkClass link : {LinkClass::Shm, LinkClass::Ib}) {
      Tuner tuner(n, defaultTuning(link), Tuner::Mode::Model);
      for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                           Collective::Broadcast}) {
        for (size_t count : {size_t{1} << 16, size_t{1} << 20, size_t{1} << 24}) {
          EXPECT_EQ(tuner.chooseOneSided(c, count, DataType::Float32, Tuner::Reach::Network, any),
                    nullptr)
              << toString(c) << " n=" << n << " count=" << count;
        }
      }
    }
  }
  // The same calls on mapped buffers do take the one-sided path (the gate is the reach).
  Tuner four(4, defaultTuning(LinkClass::Ib), Tuner::Mode::Model);
  EXPECT_NE(four.chooseOneSided(Collective::AllReduce, size_t{1} << 24, DataType::Float32,
                                Tuner::Reach::Mapped, any),
            nullptr);
}

// The staged path (Tuner::chooseStaged) for buffers peers cannot read in place, static
// thresholds (CHORUS_TUNER=static; the model's decision is tuner_probe_test's
// StagedPath.*): all-reduce only, from 64 KiB at np >= 4, 256 KiB at np 3 and 64 MiB at
// np 2 (where it was measured to pay), never what CHORUS_ALGO excluded; chooseOneSided never
// picks it for buffers read in place.
TEST(Tuner, StagedOnlyWhereItWasMeasuredToPay) {
  auto any = [](const Algorithm&) { return true; };
  auto name = [](const Algorithm* a) { return std::string(a ? a->name : "copy"); };
  const DataType f32 = DataType::Float32;
  std::vector<const Algorithm*> copyPath;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == Collective::AllReduce && !a.oneSided) copyPath.push_back(&a);
  const size_t mib = (size_t{1} << 20) / 4;  // floats
  Tuner four(4, defaultTuning(LinkClass::Shm), Tuner::Mode::Static);
  const size_t kib = 1024 / 4;  // floats
  EXPECT_EQ(name(four.chooseStaged(Collective::AllReduce, 64 * kib - 1, f32, copyPath, any)),
            "copy");
  EXPECT_EQ(name(four.chooseStaged(Collective::AllReduce, 64 * kib, f32, copyPath, any)),
            "peer_staged");
  EXPECT_EQ(
      name(four.chooseStaged(Collective::AllReduce, 32 * kib, DataType::Float64, copyPath, any)),
      "peer_staged");
  EXPECT_EQ(
      name(four.chooseStaged(Collective::AllReduce, 16 * kib, DataType::Float64, copyPath, any)),
      "copy");
  Tuner three(3, defaultTuning(LinkClass::Shm), Tuner::Mode::Static);
  EXPECT_EQ(name(three.chooseStaged(Collective::AllReduce, 256 * kib - 1, f32, copyPath, any)),
            "copy");
  EXPECT_EQ(name(three.chooseStaged(Collective::AllReduce, 256 * kib, f32, copyPath, any)),
            "peer_staged");
  Tuner eight(8, defaultTuning(LinkClass::Shm), Tuner::Mode::Static);
  EXPECT_EQ(name(eight.chooseStaged(Collective::AllReduce, 64 * kib - 1, f32, copyPath, any)),
            "copy");
  EXPECT_EQ(name(eight.chooseStaged(Collective::AllReduce, 64 * kib, f32, copyPath, any)),
            "peer_staged");
  EXPECT_EQ(name(four.chooseStaged(Collective::AllGather, 64 * mib, f32, copyPath, any)), "copy");
  auto notStaged = [](const Algorithm& a) { return !a.staged; };
  EXPECT_EQ(name(four.chooseStaged(Collective::AllReduce, 64 * mib, f32, copyPath, notStaged)),
            "copy");
  EXPECT_EQ(name(four.chooseOneSided(Collective::AllReduce, 64 * mib, f32, Tuner::Reach::Mapped,
                                     [](const Algorithm& a) {
                                       return a.staged || std::string(a.name) == "peer_staged";
                                     })),
            "copy");
  Tuner two(2, defaultTuning(LinkClass::Shm), Tuner::Mode::Static);
  EXPECT_EQ(name(two.chooseStaged(Collective::AllReduce, 32 * mib, f32, copyPath, any)), "copy");
  EXPECT_EQ(name(two.chooseStaged(Collective::AllReduce, 64 * mib, f32, copyPath, any)),
            "peer_staged");
  Tuner one(1, defaultTuning(LinkClass::Shm), Tuner::Mode::Static);
  EXPECT_EQ(name(one.chooseStaged(Collective::AllReduce, 64 * mib, f32, copyPath, any)), "copy");
}

// Every collective the one-sided path serves by itself: the pick is the one the replay
// predicts fastest (predictMicros, as Tuner::choose), and Tuner::choose never returns one.
TEST(Tuner, OneSidedPickIsTheReplaysFastest) {
  auto any = [](const Algorithm&) { return true; };
  const Tuning tuning = defaultTuning(LinkClass::Shm);
  for (int n : {2, 3, 4, 8}) {
    Tuner tuner(n, tuning, Tuner::Mode::Model);
    for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                         Collective::Broadcast}) {
      std::vector<const Algorithm*> all;
      for (const Algorithm& a : allAlgorithms())
        if (a.collective == c) all.push_back(&a);
      for (size_t count : {size_t{1} << 20, size_t{1} << 22}) {  // above every size gate
        const Algorithm* best = nullptr;
        double bestMicros = 0;
        for (const Algorithm* a : all) {
          if (!a->oneSided) continue;
          const double us =
              predictMicros(*a, c, n, count, 4, tuning.forType(DataType::Float32), nullptr);
          if (!best || us < bestMicros) best = a, bestMicros = us;
        }
        ASSERT_NE(best, nullptr) << toString(c);
        EXPECT_EQ(tuner.chooseOneSided(c, count, DataType::Float32, Tuner::Reach::Mapped, any),
                  best)
            << toString(c) << " n=" << n << " count=" << count;
        EXPECT_FALSE(tuner.choose(c, count, DataType::Float32, all, false).oneSided)
            << toString(c) << " n=" << n << " count=" << count;
      }
    }
  }
}

// The engine folds a chain of PeerReduce steps (schedule rule 6) in one multi-source pass,
// and the replay prices it so: at np 4 on shm's default figures peer_twoshot (one fold of
// four sources, then reads) is predicted faster than peer_ring (three separate folds), as
// it ran on memAlloc buffers here (perf/README.md, bw9: 2.91 against 1.92 GB/s at 16 MiB).
// Priced as pairwise reduces the two tied and the pick went to peer_ring.
TEST(Tuner, OneSidedFoldChainIsPricedAsOnePass) {
  const Tuning tuning = defaultTuning(LinkClass::Shm);
  const Algorithm* twoshot = findAlgorithm(Collective::AllReduce, "peer_twoshot");
  const Algorithm* ring = findAlgorithm(Collective::AllReduce, "peer_ring");
  ASSERT_NE(twoshot, nullptr);
  ASSERT_NE(ring, nullptr);
  Tuner tuner(4, tuning, Tuner::Mode::Model);
  // peer_push folds as peer_twoshot does (and then writes): left out here.
  auto notStaged = [](const Algorithm& a) {
    return !a.staged && std::string(a.name) != "peer_push";
  };
  for (size_t count : {size_t{4} << 20, size_t{16} << 20}) {  // 16 and 64 MiB of float
    const LinkModel link = tuning.forType(DataType::Float32);
    const double twoshotUs =
        predictMicros(*twoshot, Collective::AllReduce, 4, count, 4, link, nullptr);
    const double ringUs = predictMicros(*ring, Collective::AllReduce, 4, count, 4, link, nullptr);
    EXPECT_LT(twoshotUs, 0.9 * ringUs) << "count=" << count;
    EXPECT_EQ(tuner.chooseOneSided(Collective::AllReduce, count, DataType::Float32,
                                   Tuner::Reach::Mapped, notStaged),
              twoshot)
        << "count=" << count;
  }
}

// peer_push writes each folded chunk into the peers right behind its fold (the chunk still
// in cache), where peer_twoshot's peers read the parts back from memory; the replay prices
// such a write as its write stream only (sim/replay.cpp, written()) and so prefers
// peer_push on mapped buffers, as measured on memAlloc buffers (perf/README.md, peer_push:
// 1.1-3.2x peer_twoshot at np 2, 4 and 8, 64 KiB-64 MiB). Priced as a whole copy, the
// writes cost what the reads do and peer_push's extra messages (two per round) lose.
TEST(Tuner, PushWritesBehindTheFoldArePricedAsTheWriteAlone) {
  const Tuning tuning = defaultTuning(LinkClass::Shm);
  const LinkModel link = tuning.forType(DataType::Float32);
  const Algorithm* twoshot = findAlgorithm(Collective::AllReduce, "peer_twoshot");
  const Algorithm* push = findAlgorithm(Collective::AllReduce, "peer_push");
  ASSERT_NE(twoshot, nullptr);
  ASSERT_NE(push, nullptr);
  auto notStaged = [](const Algorithm& a) { return !a.staged; };
  for (int n : {2, 4, 8}) {
    Tuner tuner(n, tuning, Tuner::Mode::Model);
    for (size_t count : {size_t{1} << 18, size_t{4} << 20, size_t{16} << 20}) {
      const double pushUs = predictMicros(*push, Collective::AllReduce, n, count, 4, link, nullptr);
      const double twoshotUs =
          predictMicros(*twoshot, Collective::AllReduce, n, count, 4, link, nullptr);
      EXPECT_LT(pushUs, twoshotUs) << "n=" << n << " count=" << count;
      EXPECT_EQ(tuner.chooseOneSided(Collective::AllReduce, count, DataType::Float32,
                                     Tuner::Reach::Mapped, notStaged),
                push)
          << "n=" << n << " count=" << count;
      EXPECT_NE(tuner.chooseOneSided(Collective::AllReduce, count, DataType::Float32,
                                     Tuner::Reach::CmaHugePages, notStaged),
                push)
          << "n=" << n << " count=" << count;
    }
  }
}

}  // namespace
}  // namespace chorus
