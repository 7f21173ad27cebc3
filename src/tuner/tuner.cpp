#include "tuner/tuner.hpp"

#include "log.hpp"
#include "settings/settings.hpp"
#include "sim/choose.hpp"
#include "tuner/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace chorus {

Tuner::Tuner(int nranks, Tuning tuning, Mode mode, const Layout* layout,
             std::optional<LinkModel> inter, size_t sliceBytes)
    : nranks_(nranks),
      tuning_(std::move(tuning)),
      mode_(mode),
      layout_(layout),
      inter_(std::move(inter)),
      sliceBytes_(sliceBytes) {}

const Algorithm& Tuner::choose(Collective collective, size_t count, DataType type,
                               std::span<const Algorithm* const> offered, bool log) {
  const auto key = std::make_tuple(collective, count, type);
  if (auto it = choices_.find(key); it != choices_.end()) return *it->second;
  if (choices_.size() >= 4096) choices_.clear();
  // One-sided algorithms need registered buffers: chooseOneSided decides on them, never this
  // (unless nothing else is offered).
  std::vector<const Algorithm*> copyPath;
  for (const Algorithm* a : offered)
    if (!a->oneSided) copyPath.push_back(a);
  std::span<const Algorithm* const> candidates =
      copyPath.empty() ? offered : std::span<const Algorithm* const>(copyPath);

  const size_t elementSize = sizeOf(type);
  const Algorithm* best = nullptr;
  std::string why;
  auto thresholds = [&](const char* reason) {
    const Algorithm& preferred = defaultAlgorithm(collective, count * elementSize, nranks_);
    best = std::find(candidates.begin(), candidates.end(), &preferred) != candidates.end()
               ? &preferred
               : candidates.front();
    why = reason;
  };
  if (mode_ == Mode::Static) {
    thresholds("static thresholds (CHORUS_TUNER=static or CHORUS_DETERMINISTIC)");
  } else if (const Algorithm* measured =
                 nranks_ <= kMaxReplayRanks
                     ? measuredChoice(collective, count * elementSize, candidates)
                     : nullptr) {
    best = measured;
    why = "measured fastest near this size by chorus-perf --calibrate (" + tuning_.source + ")";
  } else {
    best = replayChoice(collective, count, type, candidates, why);
    if (!best) thresholds("static thresholds (no candidate small enough to replay)");
  }
  if (log)
    logf(LogLevel::Info, "%s of %zu x %s on %d ranks: algorithm %s; %s", toString(collective),
         count, toString(type), nranks_, best->name, why.c_str());
  choices_.emplace(key, best);
  return *best;
}

const Algorithm* Tuner::replayChoice(Collective collective, size_t count, DataType type,
                                     std::span<const Algorithm* const> candidates,
                                     std::string& why) {
  if (candidates.size() == 1) {
    why = "the only candidate";
    return candidates.front();
  }
  const LinkModel link = tuning_.forType(type);
  sim::LinkClassNetwork net(nranks_, link, layout_, inter_ ? &*inter_ : nullptr);
  sim::SimOptions options;
  options.layout = layout_ && layout_->nranks() == nranks_ ? layout_ : nullptr;
  // Up to kMaxReplayRanks every candidate may be replayed, however many its steps.
  options.maxSteps = nranks_ <= kMaxReplayRanks ? SIZE_MAX : kMaxReplaySteps;
  options.sliceBytes = sliceBytes_;
  const std::vector<sim::Ranked> ranked =
      sim::rankByReplay(candidates, collective, nranks_, count, sizeOf(type), net, options);
  why = "cost model (" + tuning_.source + "):";
  for (const sim::Ranked& r : ranked) {
    char text[96];
    std::snprintf(text, sizeof text, " %s %s%.1f us%s", r.algorithm->name,
                  r.replayed ? "" : ">= ", r.micros,
                  r.replayed ? (r.rounded ? " (equal shares)" : "")
                             : (r.tooLarge ? " (too large to replay)" : " (bound)"));
    why += text;
  }
  return ranked.front().replayed ? ranked.front().algorithm : nullptr;
}

const Algorithm* Tuner::measuredChoice(Collective collective, size_t bytes,
                                       std::span<const Algorithm* const> candidates) const {
  // Only for what was measured: all-reduce on as many ranks, all on one node.
  if (collective != Collective::AllReduce || tuning_.measuredBest.empty() ||
      tuning_.ranks != nranks_ || inter_)
    return nullptr;
  const double want = std::log2(static_cast<double>(std::max<size_t>(bytes, 1)));
  const std::pair<size_t, std::string>* nearest = nullptr;
  for (const auto& entry : tuning_.measuredBest) {
    const double d =
        std::abs(std::log2(static_cast<double>(std::max<size_t>(entry.first, 1))) - want);
    if (!nearest ||
        d < std::abs(std::log2(static_cast<double>(std::max<size_t>(nearest->first, 1))) - want))
      nearest = &entry;
  }
  for (const Algorithm* a : candidates)
    if (nearest && nearest->second == a->name && !a->oneSided) return a;
  return nullptr;  // excluded now: the model decides
}

namespace {

// nccl-tests' size: the bytes of the largest buffer (all-gather's output, reduce-scatter's
// and all-to-all's input), what perf/README.md's one-sided tables are indexed by.
size_t bufferBytes(Collective collective, size_t countBytes, int nranks) {
  const bool perRank = collective == Collective::AllGather ||
                       collective == Collective::ReduceScatter ||
                       collective == Collective::AllToAll;
  return perRank ? countBytes * static_cast<size_t>(nranks) : countBytes;
}

// From which buffer size reading in place was measured to beat the copy path
// (perf/README.md, one-sided: memAlloc buffers against the copy path on 2 shared cores,
// alternating runs, medians; SIZE_MAX: never). Below these sizes each one-sided call's
// handshakes (expose, done) cost more than the copy they save; the cost model does not
// see that (it predicts the one-sided algorithms faster at every size), so it only picks
// which one-sided algorithm runs.
// `mapped`: the peers map the buffers, so the all-reduce may be peer_push (writes).
size_t oneSidedFromBytes(Collective collective, int nranks, bool mapped) {
  switch (collective) {
    case Collective::AllReduce:  // np 2: no faster below 256 KiB; np 4: 1.4-1.9x at 64 KiB.
      // peer_push at np 2 (memAlloc, -A each=peer_push,rd,auto -K 9): 1.35x rd at 128 KiB
      // (15.9 against 11.8 GB/s), 0.91-0.96x at 64 KiB.
      return nranks == 2 ? (mapped ? 128 << 10 : 256 << 10) : 64 << 10;
    case Collective::AllGather:  // np 4: 0.5-0.7x below 4 MiB, 1.4-3x from it
      return nranks == 2 ? 256 << 10 : 4 << 20;
    case Collective::ReduceScatter:  // np 4: 0.2-1.1x below 4 MiB, 1.9-7x from it
      return nranks == 2 ? 256 << 10 : 4 << 20;
    case Collective::Broadcast:  // np 4: 0.03-2x below 1 MiB (noise), 1.2-3x from it
      return 1 << 20;
    default:  // all-to-all: reading into scratch, then copying out, lost at 1-64 MiB
      return SIZE_MAX;
  }
}

}  // namespace

const Algorithm* Tuner::chooseOneSided(Collective collective, size_t count, DataType type,
                                       Reach reach,
                                       const std::function<bool(const Algorithm&)>& allowed,
                                       bool log) {
  const size_t bytes = count * sizeOf(type);
  if (bytes < kOneSidedMinBytes || nranks_ < 2 || inter_) return nullptr;
  // CMA on 4 KiB pages (registered malloc memory) measured no faster than the copy path at
  // 16 and 64 MiB, np 4 (perf/README.md, one-sided): keep copying there.
  if (reach == Reach::Cma) return nullptr;
  // Verbs (RDMA READ, each call's expose and done records through the Channel): the
  // one-sided all-reduces ran at 0.4-0.75x of the copy path on malloc buffers and at
  // 0.8-1.0x of it on the same registered buffers (rendezvous), never clearly faster:
  // 256 KiB at np 2 in the Soft-RoCE guest (perf/README.md, verbs; the only size
  // measured). Keep copying; CHORUS_ALGO still forces them.
  if (reach == Reach::Network) return nullptr;
  if (bufferBytes(collective, bytes, nranks_) <
      oneSidedFromBytes(collective, nranks_, reach == Reach::Mapped))
    return nullptr;
  // Which one-sided schedule: the replay the copy path's choice uses, with a record charged
  // a pair's o. Where ranks outnumber cores the exchange's o (every rank waiting for its
  // turn on a core) is a wait each phase of a schedule pays, not each record: charged per
  // record (6.8-26 us at np 3 on 2 cores, against 0.24-0.43 us for a pair), it put
  // peer_push, with the most records and the fewest phases, last at np 3, where it measured
  // 1.5-2.9x faster than the pick at 256 KiB-4 MiB (perf/README.md, one-sided at np 3).
  LinkModel link = tuning_.forType(type);
  if (link.pairOverheadUs > 0) {
    link.overheadUs = link.pairOverheadUs;
    link.overheadShare = link.pairOverheadShare;
  }
  std::vector<std::pair<double, const Algorithm*>> predicted;
  for (const Algorithm& a : allAlgorithms()) {
    if (a.collective != collective || !a.oneSided || a.staged || !allowed(a)) continue;
    // Writes into peers' memory were measured through mappings only (perf/README.md,
    // peer_push), not by CMA's process_vm_writev.
    if (reach != Reach::Mapped && writesIntoPeers(a)) continue;
    predicted.emplace_back(
        predictMicros(a, collective, nranks_, count, sizeOf(type), link, layout_), &a);
  }
  // The first of equal times wins, in the registry's order.
  std::stable_sort(predicted.begin(), predicted.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  const Algorithm* best = predicted.empty() ? nullptr : predicted.front().second;
  if (log && best && oneSidedLogged_.emplace(collective, count, type, reach).second) {
    std::string why;
    for (const auto& [us, a] : predicted) {
      char text[64];
      std::snprintf(text, sizeof text, " %s %.1f us", a->name, us);
      why += text;
    }
    logf(LogLevel::Info,
         "%s of %zu x %s on %d ranks, buffers %s: one-sided algorithm %s; cost "
         "model (%s):%s",
         toString(collective), count, toString(type), nranks_,
         reach == Reach::Mapped ? "mapped" : "read by CMA from huge pages", best->name,
         tuning_.source.c_str(), why.c_str());
  }
  return best;
}

const Algorithm* Tuner::chooseStaged(Collective collective, size_t count, DataType type,
                                     std::span<const Algorithm* const> candidates,
                                     const std::function<bool(const Algorithm&)>& allowed,
                                     bool log) {
  if (collective != Collective::AllReduce || nranks_ < 2 || inter_ || candidates.empty())
    return nullptr;
  if (mode_ == Mode::Static || nranks_ > kMaxReplayRanks)
    return stagedByThreshold(collective, count, type, allowed);
  const auto key = std::make_tuple(collective, count, type);
  if (auto it = stagedChoices_.find(key); it != stagedChoices_.end()) return it->second;
  if (stagedChoices_.size() >= 4096) stagedChoices_.clear();
  const Algorithm* staged = nullptr;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == collective && a.staged && allowed(a)) {
      staged = &a;
      break;
    }
  const Algorithm* chosen = nullptr;
  if (staged) {
    // Both by the one replay: the schedule each would run, on this communicator's figures.
    const Algorithm& copy = choose(collective, count, type, candidates, log);
    const LinkModel link = tuning_.forType(type);
    const double stagedUs = predictMicros(*staged, collective, nranks_, count, sizeOf(type), link,
                                          layout_, nullptr, sliceBytes_);
    const double copyUs = predictMicros(copy, collective, nranks_, count, sizeOf(type), link,
                                        layout_, nullptr, sliceBytes_);
    if (stagedUs < copyUs) chosen = staged;
    if (log)
      logf(LogLevel::Info,
           "%s of %zu x %s on %d ranks, buffers peers cannot map: %s (%s %.1f us, copy path's "
           "%s %.1f us; cost model, %s)",
           toString(collective), count, toString(type), nranks_, chosen ? staged->name : copy.name,
           staged->name, stagedUs, copy.name, copyUs, tuning_.source.c_str());
  }
  stagedChoices_.emplace(key, chosen);
  return chosen;
}

const Algorithm* Tuner::stagedByThreshold(
    Collective collective, size_t count, DataType type,
    const std::function<bool(const Algorithm&)>& allowed) const {
  // All-reduce only, from where it measured faster than the copy path's own pick
  // (perf/README.md, staged; float sum, busbw GB/s, `chrt -f 1 perf/tuner_accuracy.sh -p NP
  // -b 16K -K 5`, load average 8-13 from other sessions, staged against the pick):
  //   np 2: 0.7-0.95x up to 16 MiB (each rank has its own core and the copy path pipelines
  //         well; 2 MiB a tie, 5.4 vs 5.3), 1.2-1.3x at 64 MiB: from 64 MiB.
  //   np 3: 16 KiB 0.78x, 64 KiB 0.75x, 256 KiB 1.07x (3.30 vs 3.08), 1 MiB 1.08x, 1.1x
  //         and more from 1 MiB in the README's runs: from 256 KiB.
  //   np 4: 32 KiB 0.85x (1.26 vs 1.48), 1.02x and 0.86x on an idle machine; 64 KiB 1.13x,
  //         128 KiB 1.39x, 256 KiB 1.14x, 512 KiB 1.73x (1.2-1.4x at 64-256 KiB in a run
  //         without chrt, and at 256 KiB on the idle machine): from 64 KiB.
  //   np 8: 16 KiB 0.57x, 64 KiB 1.32x (0.656 vs 0.498; 1.16x the best copy algorithm),
  //         256 KiB 1.86x, 1 MiB 1.08x (1.5-3x at 1-2 MiB in the README's runs): from
  //         64 KiB, and so for np > 4 in general.
  const size_t fromBytes = nranks_ == 2   ? size_t{64} << 20
                           : nranks_ == 3 ? size_t{256} << 10
                                          : size_t{64} << 10;
  if (collective != Collective::AllReduce || nranks_ < 2 || inter_ ||
      count * sizeOf(type) < fromBytes)
    return nullptr;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == collective && a.staged && allowed(a)) return &a;
  return nullptr;
}

Tuner::Mode tunerModeFromEnv() {
  const std::string mode = settings::text("CHORUS_TUNER");
  if (mode == "model") return Tuner::Mode::Model;
  if (mode == "static") return Tuner::Mode::Static;
  throw Error(Result::InvalidArgument,
              "CHORUS_TUNER must be 'model' or 'static', got '" + mode + "'");
}

}  // namespace chorus
