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

}  // namespace trainer
