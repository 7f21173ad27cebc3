// In-place recovery without a restart: the survivors shrink the communicator (without the
// ranks chorus::Error::failedRanks names), agree on the step to redo and take the training
// state from a survivor that had not gone past it.
#pragma once

#include "comm_thread.hpp"
#include "digits.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace trainer {

// Shrinks `comm` without `dead`, then every survivor takes the state of the lowest rank
// among those with the fewest steps done (a rank may have finished the step in which the
// others saw the failure). Returns the steps done to carry on from.
int64_t shrinkAndResync(CommThread& comm, const std::vector<int>& dead, int64_t stepsDone,
                        std::span<float> params, std::span<float> optimizer, Sampler& sampler);

// Every rank takes the state (weights, optimizer, data order and position, and `shared`,
// the job's settings) of the lowest rank among those with the fewest steps done. After a
// grow the newcomer passes kNothingDone, so that a member's state wins. Returns the steps
// done to carry on from.
constexpr int64_t kNothingDone = int64_t{1} << 52;
int64_t resync(CommThread& comm, int64_t stepsDone, std::span<float> params,
               std::span<float> optimizer, Sampler& sampler, std::span<double> shared);

}  // namespace trainer
