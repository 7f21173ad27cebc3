// Which algorithm runs each collective: the default, or what CHORUS_ALGO /
// Communicator::setAlgorithm forced. Syntax as NCCL_ALGO: "ring" (every collective),
// "allreduce:ring,broadcast:ring" (per collective), "^ring" (exclude).
#pragma once

#include "algorithms/algorithms.hpp"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace chorus {

class AlgorithmChoice {
 public:
  // Throws Error(InvalidArgument) naming the bad part of the spec.
  void apply(std::string_view spec);
  // The forced algorithm, or the default for this message size.
  const Algorithm& pick(Collective collective, size_t bytes, int nranks) const;

 private:
  static constexpr size_t kCollectives = 8;
  std::array<const Algorithm*, kCollectives> forced_{};  // nullptr: not forced
  std::array<std::vector<std::string>, kCollectives> excluded_;
};

}  // namespace chorus
