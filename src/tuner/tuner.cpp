#include "tuner/tuner.hpp"

#include "log.hpp"
#include "settings/settings.hpp"
#include "sim/choose.hpp"
#include "tuner/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace chorus {

Tuner::Tuner(int nranks, Tuning tuning, Mode mode, const Layout* layout,
             std::optional<LinkModel> inter)
    : nranks_(nranks),
      tuning_(std::move(tuning)),
      mode_(mode),
      layout_(layout),
      inter_(std::move(inter)) {}

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
  } else if (nranks_ > kMaxReplayRanks) {
    best = replayChoice(collective, count, type, candidates, why);
    if (!best) thresholds("static thresholds (no candidate small enough to replay)");
  } else if (const Algorithm* measured =
                 measuredChoice(collective, count * elementSize, candidates)) {
    best = measured;
    why = "measured fastest near this size by chorus-perf --calibrate (" + tuning_.source + ")";
  } else {
    const LinkModel link = tuning_.forType(type);
    double bestMicros = 0;
    for (const Algorithm* a : candidates) {
      const double us = predictMicros(*a, collective, nranks_, count, elementSize, link, layout_,
                                      inter_ ? &*inter_ : nullptr);
      if (!best || us < bestMicros) best = a, bestMicros = us;
      if (log) {
        char text[64];
        std::snprintf(text, sizeof text, "%s %.1f us", a->name, us);
        why += (why.empty() ? "" : ", ") + std::string(text);
      }
    }
    why = "cost model (" + tuning_.source + "): " + why;
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
  options.maxSteps = kMaxReplaySteps;
  const std::vector<sim::Ranked> ranked =
      sim::rankByReplay(candidates, collective, nranks_, count, sizeOf(type), net, options);
  why = "replay (" + tuning_.source + "):";
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

const Algorithm* Tuner::chooseOneSided(Collective collective, size_t count, DataType type,
                                       bool mapped, bool hugePages,
                                       const std::function<bool(const Algorithm&)>& allowed) const {
  const size_t bytes = count * sizeOf(type);
  if (bytes < kOneSidedMinBytes || nranks_ < 2 || inter_) return nullptr;
  // CMA on 4 KiB pages (registered malloc memory) measured no faster than the copy path at
  // 16 and 64 MiB, np 4 (perf/README.md, one-sided): keep copying there.
  if (!mapped && !hugePages) return nullptr;
  // Measured on 2 shared cores (perf/README.md, one-sided; medians of alternating runs,
  // memAlloc buffers against the copy path): at np 2 each one-sided all-reduce's extra
  // handshakes (expose, result, done) cost more than they save below 256 KiB.
  if (collective == Collective::AllReduce && nranks_ == 2 && bytes < (256 << 10)) return nullptr;
  // Which one-sided schedule: the replay the copy path's choice uses.
  const LinkModel link = tuning_.forType(type);
  const Algorithm* best = nullptr;
  double bestMicros = 0;
  for (const Algorithm& a : allAlgorithms()) {
    if (a.collective != collective || !a.oneSided || !allowed(a)) continue;
    const double us = predictMicros(a, collective, nranks_, count, sizeOf(type), link, layout_);
    if (!best || us < bestMicros) best = &a, bestMicros = us;
  }
  return best;
}

Tuner::Mode tunerModeFromEnv() {
  const std::string mode = settings::text("CHORUS_TUNER");
  if (mode == "model") return Tuner::Mode::Model;
  if (mode == "static") return Tuner::Mode::Static;
  throw Error(Result::InvalidArgument,
              "CHORUS_TUNER must be 'model' or 'static', got '" + mode + "'");
}

}  // namespace chorus
