// One collective call on a modelled network, at any scale: builds the ranks' schedules
// and replays them (sim/replay.hpp), compressed to one rank per symmetry class when the
// schedules and the network allow it.
#pragma once

#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "sim/network.hpp"
#include "sim/replay.hpp"

#include <cstddef>

namespace chorus::sim {

struct SimOptions {
  bool compress = true;
  const Layout* layout = nullptr;  // given to the schedules (hierarchical algorithms)
  size_t sliceBytes = kPipelineSliceBytes;
  // Refuse (result.tooLarge) an uncompressible replay of more steps than this.
  size_t maxSteps = size_t{24} << 20;         // ~3 GB of replay state
  std::vector<StepTime>* timeline = nullptr;  // receives the replayed steps' times (replay())
};

struct SimResult : ReplayResult {
  int period = 0;  // ranks replayed: the symmetry class count (nranks: none found)
  Symmetry symmetry = Symmetry::Shift;  // the map between classes
  bool tooLarge = false;                // not replayed: asymmetric and over maxSteps
};

// The smallest g dividing nranks, a multiple of the network's period, such that rank
// r + m g's schedule is rank r's shifted by m g (kinds, peers shifted, element counts,
// dependencies), checked for every r < g against a sample of m (all m when few:
// 1, 2, 3, middle, last); nranks when none. `reps` receives ranks 0..g-1's schedules.
// With Symmetry::Xor: rank r xor m g's schedule is rank r's with every peer xor m g (g and
// nranks powers of two).
int symmetryPeriod(const Algorithm& algorithm, const CollectiveArgs& args, int networkPeriod,
                   std::vector<Schedule>& reps, Symmetry map = Symmetry::Shift);

// Symmetry::Rotate: whether turning every node's local index (nodes of perNode ranks, in
// blocks) by m unit maps rank r's schedule onto rank r turned by m unit's (peers turned
// alike, kinds, element counts, dependencies), checked for every rank n perNode + l, l <
// unit, against every turn (a sample of 1, 2, 3, middle, last when more than 8). Returns
// the ranks replayed, nodes x unit, with their schedules in `reps` (slot order of
// sim/replay.hpp); nranks when not.
int rotationClasses(const Algorithm& algorithm, const CollectiveArgs& args, int perNode, int unit,
                    std::vector<Schedule>& reps);

SimResult simulate(const Algorithm& algorithm, Collective collective, int nranks, size_t count,
                   size_t elementSize, NetworkModel& net, const SimOptions& options = {});

}  // namespace chorus::sim
