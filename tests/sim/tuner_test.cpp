// The tuner beyond 128 ranks against the simulator: the tuner's pick (sim::rankByReplay:
// lower bounds, compressed replays) must be the simulator's fastest algorithm, found by
// replaying the candidates one by one, at 256, 1,024 and 16,384 ranks and four sizes, on
// the tuner's view of a DGX H100 cluster (sim::tunerLinks). The bounds it prunes with are
// checked against the replay for every algorithm at small scale.
#include "tuner/tuner.hpp"
#include "sim/choose.hpp"
#include "sim/fabric_network.hpp"
#include "tuner/cost_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <string>

namespace chorus::sim {
namespace {

std::vector<const Algorithm*> allReduceAlgorithms() {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == Collective::AllReduce && !a.oneSided) out.push_back(&a);  // as the tuner
  return out;
}

// Replaying these in full takes minutes at 1,024 ranks and more (O(p^2) steps, or
// schedules that cost O(nodes^2) to build): the reference replays them only when their
// lower bound does not already exceed the fastest replayed time.
bool costlyInFull(const Algorithm& a) {
  for (const char* name : {"oneshot", "hier", "hier_rhd"})
    if (!std::strcmp(a.name, name)) return true;
  return false;
}

// The tuner's pick at p ranks for each size (bytes rounded up to equal shares, as
// chorus-sim does) against the reference; returns the picks.
std::set<std::string> expectPicksMatch(int p, std::initializer_list<size_t> sizes) {
  const std::vector<const Algorithm*> candidates = allReduceAlgorithms();
  std::set<std::string> picks;
  Fabric fabric = presetFabric("dgx-h100", p / 8);
  const LinkClasses links = tunerLinks(fabric);
  const Layout layout = Layout::uniform(fabric.nodes, fabric.gpusPerNode);
  Tuning tuning = defaultTuning(LinkClass::Nvlink);
  tuning.model = links.intra;
  Tuner tuner(p, tuning, Tuner::Mode::Model, &layout, links.inter);
  for (size_t bytes : sizes) {
    const size_t count = (bytes / 4 + p - 1) / p * p;
    const auto began = std::chrono::steady_clock::now();
    const Algorithm& pick =
        tuner.choose(Collective::AllReduce, count, DataType::Float32, candidates, false);
    // The reference: every candidate replayed on the same network (the costly ones only
    // when they could win), the fastest kept; ties go to the registry's first.
    LinkClassNetwork net(p, links.intra, &layout, &links.inter);
    SimOptions options;
    options.layout = &layout;
    const Algorithm* best = nullptr;
    double bestMicros = std::numeric_limits<double>::infinity();
    for (int pass = 0; pass < 2; ++pass)
      for (const Algorithm* a : candidates) {
        if (costlyInFull(*a) != (pass == 1)) continue;
        if (pass == 1) {
          const Schedule s0 = a->build({Collective::AllReduce, 0, p, count, 0, &layout});
          if (busyLowerBound(s0, 0, p, 4, net) > bestMicros) continue;
        }
        const SimResult r = simulate(*a, Collective::AllReduce, p, count, 4, net, options);
        if (r.tooLarge) continue;  // the simulator's limit too (chorus-sim skips it)
        if (r.micros < bestMicros ||
            (r.micros == bestMicros && std::find(candidates.begin(), candidates.end(), a) <
                                           std::find(candidates.begin(), candidates.end(), best)))
          best = a, bestMicros = r.micros;
      }
    EXPECT_NE(best, nullptr);
    if (!best) continue;
    EXPECT_STREQ(pick.name, best->name) << p << " ranks, " << count * 4 << " B";
    picks.insert(pick.name);
    std::printf("%d ranks %zu B: %s (%.2f s with the reference)\n", p, count * 4, pick.name,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  }
  return picks;
}

constexpr size_t KiB = 1024, MiB = KiB * KiB;

TEST(SimTuner, PickIsTheSimulatorsFastestAtScale) {
  std::set<std::string> picks = expectPicksMatch(256, {64 * KiB, MiB, 16 * MiB, 256 * MiB});
  // hier_rhd replays in full (~2M steps, seconds) at 1,024 ranks from 16 MiB up: the tuner
  // does so once per shape; the test leaves those sizes to the disabled test below.
  picks.merge(expectPicksMatch(1024, {64 * KiB, MiB}));
  picks.merge(expectPicksMatch(16384, {64 * KiB, MiB, 16 * MiB, 256 * MiB}));
  // Not one algorithm everywhere: the sizes span the crossovers.
  EXPECT_GE(picks.size(), 3u);
}

// 25 nodes of 8 (not a power of two) with the node's NICs shared: hier_rd and hier_rhd
// compressed by turning the local index, which the shared NIC's sharing did not support
// (it indexed ports by replayed rank: chorus-sim --fabric meta-roce --gpus 200 crashed).
// The tuner's classes no longer turn when their NIC is shared.
TEST(SimTuner, PickAt25NodesOf8WithTheSharedNic) { expectPicksMatch(200, {64 * KiB, 16 * MiB}); }

// 1,024 ranks at 16 and 256 MiB (about a minute when written; 0.3-0.5 s on 2026-12-05,
// sim18, since the replay compresses them), so it runs in CI now.
TEST(SimTuner, PickIsTheSimulatorsFastestLargeAt1024) {
  expectPicksMatch(1024, {16 * MiB, 256 * MiB});
}

// The bound the tuner prunes with never exceeds the replayed time: every all-reduce
// algorithm, rank 0 and the last rank, small and large counts, one and two link classes.
TEST(SimTuner, BusyLowerBoundNeverExceedsTheReplay) {
  const LinkModel nvlink = defaultLinkModel(LinkClass::Nvlink),
                  ib = defaultLinkModel(LinkClass::Ib);
  for (const Algorithm* a : allReduceAlgorithms())
    for (int p : {2, 6, 8, 16, 24}) {
      const Layout layout = Layout::uniform(p / 2, 2);
      for (size_t count : {size_t(3), size_t(p) * 8, size_t(p) * 100000 + 5})
        for (bool twoClasses : {false, true}) {
          LinkClassNetwork net(p, twoClasses ? ib : nvlink, twoClasses ? &layout : nullptr,
                               twoClasses ? &nvlink : nullptr);
          SimOptions options;
          options.layout = &layout;
          options.compress = false;
          const double replayed =
              simulate(*a, Collective::AllReduce, p, count, 4, net, options).micros;
          double bound = 0;
          for (int rank : {0, p - 1}) {
            const Schedule s = a->build({Collective::AllReduce, rank, p, count, 0, &layout});
            bound = std::max(bound, busyLowerBound(s, rank, p, 4, net));
          }
          EXPECT_GT(bound, 0) << a->name;
          EXPECT_LE(bound, replayed) << a->name << " p=" << p << " count=" << count;
        }
    }
}

// Pruned or replayed, the ranking's first is the fastest of full replays (small p, where
// every candidate replays in full quickly); bounds only drop candidates that lose.
TEST(SimTuner, PruningKeepsTheFastest) {
  const std::vector<const Algorithm*> candidates = allReduceAlgorithms();
  const LinkModel nvlink = defaultLinkModel(LinkClass::Nvlink),
                  ib = defaultLinkModel(LinkClass::Ib);
  for (int p : {8, 32}) {
    const Layout layout = Layout::uniform(p / 4, 4);
    for (size_t count : {size_t(2), size_t(p) * 64, size_t(p) * 65536 + 1}) {
      LinkClassNetwork net(p, nvlink, &layout, &ib);
      SimOptions options;
      options.layout = &layout;
      const std::vector<Ranked> ranked =
          rankByReplay(candidates, Collective::AllReduce, p, count, 4, net, options);
      ASSERT_TRUE(ranked.front().replayed);
      options.compress = false;
      for (const Algorithm* a : candidates) {
        const double full = simulate(*a, Collective::AllReduce, p, count, 4, net, options).micros;
        EXPECT_LE(ranked.front().micros, full) << a->name << " p=" << p << " count=" << count;
        for (const Ranked& r : ranked)
          if (r.algorithm == a && r.replayed) EXPECT_EQ(r.micros, full) << a->name;
      }
    }
  }
}

// Up to 128 ranks the tuner used to replay every candidate in full (predictMicros, ~6 s
// for six sizes at 128 ranks); it now asks sim::rankByReplay (bounds, compressed
// replays) there too. Its choices must be exactly those of the full replays, first of
// the fastest on ties: fixed shapes (one and two link classes, a NIC shared by a node's
// ranks, power-of-two and other node counts, interleaved ranks: no compression) and sizes
// from 8 B to 64 MiB.
TEST(SimTuner, ChoicesUpTo128RanksEqualFullReplays) {
  const std::vector<const Algorithm*> candidates = allReduceAlgorithms();
  // The bed's probe figures (perf/data/sim_vs_bed/nic_tuner/bed_2x2.log): TCP over
  // loopback within a node, a 1 Gbit/s NIC shared by the node's ranks between nodes.
  LinkModel loopback = defaultLinkModel(LinkClass::Tcp);
  loopback.latencyUs = 9.855, loopback.overheadUs = 8.455, loopback.bytesPerUs = 1285;
  loopback.transportBytesPerUs = 1433, loopback.reduceBytesPerUs = 25390;
  loopback.copyBytesPerUs = 41550;
  LinkModel nic = loopback;
  nic.latencyUs = 0.05, nic.overheadUs = 10.45, nic.bytesPerUs = 125, nic.nicBytesPerUs = 125;
  const LinkClasses dgx = tunerLinks(presetFabric("dgx-h100", 4));
  struct Shape {
    int nodes, perNode;
    bool interleaved;
    LinkModel intra;
    std::optional<LinkModel> inter;
    std::vector<size_t> bytes;
  };
  const std::vector<Shape> shapes = {
      {1, 12, false, defaultLinkModel(LinkClass::Shm), std::nullopt, {8, 64 * KiB, 16 * MiB}},
      {3, 2, false, loopback, nic, {8, 64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB, 64 * MiB}},
      {4, 4, false, loopback, nic, {8, 64 * KiB, MiB, 16 * MiB}},
      {4, 4, true, loopback, nic, {64 * KiB, 16 * MiB}},
      {5, 4, false, dgx.intra, dgx.inter, {8, 64 * KiB, MiB, 64 * MiB}},
      {4, 8, false, dgx.intra, dgx.inter, {8, 64 * KiB, MiB, 64 * MiB}},
      {16, 8, false, loopback, nic, {64 * KiB, 16 * MiB}},
  };
  std::set<std::string> picks;
  for (const Shape& shape : shapes) {
    const int p = shape.nodes * shape.perNode;
    const Layout layout = Layout::uniform(shape.nodes, shape.perNode, shape.interleaved);
    Tuning tuning = defaultTuning(LinkClass::Tcp);
    tuning.model = shape.intra;
    const Layout* layoutOrNone = shape.inter ? &layout : nullptr;
    Tuner tuner(p, tuning, Tuner::Mode::Model, layoutOrNone, shape.inter);
    for (size_t bytes : shape.bytes) {
      const size_t count = bytes / 4;
      const auto began = std::chrono::steady_clock::now();
      const Algorithm& pick =
          tuner.choose(Collective::AllReduce, count, DataType::Float32, candidates, false);
      const double tunerSeconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      // The reference: every candidate replayed in full, the first of the fastest.
      const Algorithm* best = nullptr;
      double bestMicros = 0;
      for (const Algorithm* a : candidates) {
        const double us = predictMicros(*a, Collective::AllReduce, p, count, 4, shape.intra,
                                        layoutOrNone, shape.inter ? &*shape.inter : nullptr);
        if (!best || us < bestMicros) best = a, bestMicros = us;
      }
      EXPECT_STREQ(pick.name, best->name)
          << shape.nodes << " x " << shape.perNode << (shape.interleaved ? " interleaved" : "")
          << ", " << bytes << " B";
      picks.insert(pick.name);
      std::printf("%d x %d%s %zu B: %s (tuner %.3f s)\n", shape.nodes, shape.perNode,
                  shape.interleaved ? " interleaved" : "", bytes, pick.name, tunerSeconds);
    }
  }
  EXPECT_GE(picks.size(), 3u);  // the shapes span the crossovers
}

}  // namespace
}  // namespace chorus::sim
