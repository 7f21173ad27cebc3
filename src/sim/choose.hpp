// The fastest of several algorithms for one call, by the replay (sim/simulate.hpp), at any
// scale: what the tuner asks beyond a few hundred ranks and what chorus-sim ranks.
//
// Exact, and cheaper than replaying every candidate: each candidate first gets a lower
// bound on its replayed time from a few ranks' own schedules (busyLowerBound); candidates
// are replayed in the order of their bounds, and one whose bound already exceeds the best
// replayed time is not replayed (its time cannot be lower). Replays are compressed where
// the symmetry allows (sim::simulate), so a ring or recursive doubling at 100,000 ranks
// replays one node. A candidate too large to replay at this count (not symmetric and over
// options.maxSteps) but with at least kRoundingShare elements per rank is timed at the
// count rounded up to a multiple of nranks (equal shares, which the symmetry needs: at most
// one element more per rank, 1/64 of a share; chorus-sim times every size so); one still
// too large is left out, with its bound.
#pragma once

#include "algorithms/algorithms.hpp"
#include "sim/network.hpp"
#include "sim/simulate.hpp"

#include <span>
#include <vector>

namespace chorus::sim {

inline constexpr size_t kRoundingShare = 64;

struct Ranked {
  const Algorithm* algorithm = nullptr;
  double micros = 0;      // replayed time; a lower bound when not replayed
  bool replayed = false;  // false: pruned by its bound, or too large to replay
  bool tooLarge = false;
  bool rounded = false;  // timed at the count rounded up to a multiple of nranks
  double lowerBound = 0;
};

// A lower bound on the replayed time of a call in which `rank` runs `schedule`: the
// busiest of that rank's resources (CPU, each egress port, each ingress port), each
// serialising its steps' own costs as the replay does. 0 for flow-level networks (their
// message costs depend on the whole traffic).
double busyLowerBound(const Schedule& schedule, int rank, int nranks, size_t elementSize,
                      const NetworkModel& net);

// Every candidate, fastest first (replayed ones by time, ties in the given order; then
// the pruned and too large ones by bound). `front()` is the pick when it was replayed.
std::vector<Ranked> rankByReplay(std::span<const Algorithm* const> candidates,
                                 Collective collective, int nranks, size_t count,
                                 size_t elementSize, NetworkModel& net,
                                 const SimOptions& options = {});

}  // namespace chorus::sim
