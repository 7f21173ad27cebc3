// The tuner: picks the algorithm of each call from the cost model (cost_model.hpp) fed
// with this communicator's Tuning. Every rank holds the same Tuning (rank 0's, shared at
// creation) and the replay is deterministic, so every rank picks the same algorithm.
//
// CHORUS_TUNER=model (default) uses the cost model; CHORUS_TUNER=static uses the fixed
// thresholds of defaultAlgorithm(). sim::rankByReplay (sim/choose.hpp: the replay
// chorus-sim uses) picks the fastest candidate from compressed replays (exact: bit-equal
// to the full one) and lower bounds (a candidate whose bound exceeds the best replayed
// time is not replayed): the same pick as replaying every candidate in full
// (predictMicros), at a fraction of the cost. Up to kMaxReplayRanks ranks every candidate
// may be replayed; beyond, within kMaxReplaySteps per candidate (a candidate over it is
// left out; static thresholds if none is left).
#pragma once

#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "engine/slice.hpp"
#include "tuner/tuning.hpp"

#include <chorus/chorus.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>

namespace chorus {

class Tuner {
 public:
  static constexpr int kMaxReplayRanks = 128;
  static constexpr size_t kMaxReplaySteps = size_t{4} << 20;  // ~0.5 GB, seconds
  enum class Mode { Model, Static };

  // With several nodes: `layout` says which ranks share one, `inter` is the link between
  // nodes (tuning's link is the one within a node). `sliceBytes`: the engine's pipelining
  // grain (CHORUS_SLICE_BYTES), which the replay pipelines by.
  Tuner(int nranks, Tuning tuning, Mode mode, const Layout* layout = nullptr,
        std::optional<LinkModel> inter = std::nullopt, size_t sliceBytes = kPipelineSliceBytes);

  // The best of `candidates` (all of one collective, non-empty) for this call, cached per
  // (collective, count, type). When `log` is set, a new choice is logged at INFO with the
  // predicted time of every candidate.
  const Algorithm& choose(Collective collective, size_t count, DataType type,
                          std::span<const Algorithm* const> candidates, bool log);
  // How the peers would reach a call's buffers in place.
  enum class Reach {
    Mapped,        // mapped into their address space (shm: memAlloc's memfd)
    Cma,           // copied by CMA from 4 KiB pages (shm: registered malloc memory)
    CmaHugePages,  // copied by CMA from huge pages
    Network,       // read over the network (verbs: RDMA READ into a landing buffer)
  };
  // The one-sided algorithm (Algorithm::oneSided) to run instead of the copy path when
  // every rank's buffers can be read in place, or nullptr where reading in place was
  // measured not to beat the copy path (perf/README.md, one-sided; verbs). Among the
  // one-sided algorithms of the collective that `allowed` admits (not excluded by
  // CHORUS_ALGO), the cost model's replay (predictMicros, as choose()) picks the fastest.
  // CMA pays only on huge pages; over the network never (so far).
  // With `log`, the first choice for each call shape and reach is logged at INFO with every
  // candidate's predicted time, as choose() logs its own.
  const Algorithm* chooseOneSided(Collective collective, size_t count, DataType type, Reach reach,
                                  const std::function<bool(const Algorithm&)>& allowed,
                                  bool log = false);
  // The staged one-sided algorithm (Algorithm::staged) to run instead of the copy path on
  // buffers peers cannot read in place, over a transport whose PeerMemory maps (shm), or
  // nullptr. Mode::Model (up to kMaxReplayRanks ranks, one node): where the replay
  // (predictMicros, the schedule the engine runs) predicts it faster than the copy path's
  // pick among `candidates` (choose()'s, timed by the same replay); cached per call shape
  // like choose(), logged with both times when `log` is set. Mode::Static and beyond
  // kMaxReplayRanks: the sizes it was measured to pay from (perf/README.md, staged).
  const Algorithm* chooseStaged(Collective collective, size_t count, DataType type,
                                std::span<const Algorithm* const> candidates,
                                const std::function<bool(const Algorithm&)>& allowed,
                                bool log = false);
  // Below this many bytes no one-sided algorithm is chosen (callers skip the lookup).
  static constexpr size_t kOneSidedMinBytes = 64 << 10;

  // Forget cached choices (the candidates changed).
  void reset() {
    choices_.clear();
    stagedChoices_.clear();
  }

  const Tuning& tuning() const { return tuning_; }
  const std::optional<LinkModel>& inter() const { return inter_; }
  Mode mode() const { return mode_; }
  size_t sliceBytes() const { return sliceBytes_; }

 private:
  // The replay's pick (nullptr when no candidate could be replayed); `why` gets every
  // candidate's time or bound.
  const Algorithm* replayChoice(Collective collective, size_t count, DataType type,
                                std::span<const Algorithm* const> candidates, std::string& why);
  const Algorithm* measuredChoice(Collective collective, size_t bytes,
                                  std::span<const Algorithm* const> candidates) const;
  // chooseStaged's measured thresholds (Mode::Static, more than kMaxReplayRanks ranks).
  const Algorithm* stagedByThreshold(Collective collective, size_t count, DataType type,
                                     const std::function<bool(const Algorithm&)>& allowed) const;

  int nranks_;
  Tuning tuning_;
  Mode mode_;
  const Layout* layout_;
  std::optional<LinkModel> inter_;
  size_t sliceBytes_;
  std::map<std::tuple<Collective, size_t, DataType>, const Algorithm*> choices_;
  std::map<std::tuple<Collective, size_t, DataType>, const Algorithm*> stagedChoices_;
  std::set<std::tuple<Collective, size_t, DataType, Reach>> oneSidedLogged_;
};

// CHORUS_TUNER: "model" (default) or "static"; throws Error(InvalidArgument) otherwise.
Tuner::Mode tunerModeFromEnv();

}  // namespace chorus
