// Which algorithm runs each collective: the default, or what CHORUS_ALGO /
// Communicator::setAlgorithm forced. Syntax as NCCL_ALGO: "ring" (every collective),
// "allreduce:ring,broadcast:ring" (per collective), "^ring" (exclude).
#pragma once

#include "algorithms/algorithms.hpp"

#include <array>
#include <string_view>

namespace chorus {

class AlgorithmChoice {
 public:
  AlgorithmChoice();
  // Throws Error(InvalidArgument) naming the bad part of the spec.
  void apply(std::string_view spec);
  const Algorithm& pick(Collective collective) const;

 private:
  static constexpr size_t kCollectives = 7;
  std::array<const Algorithm*, kCollectives> chosen_{};
};

}  // namespace chorus
