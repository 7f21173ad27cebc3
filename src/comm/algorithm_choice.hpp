// Which algorithm runs each collective: the default, or what CHORUS_ALGO /
// Communicator::setAlgorithm forced. Syntax as NCCL_ALGO: "ring" (every collective),
// "allreduce:ring,broadcast:ring" (per collective), "^ring" (exclude).
#pragma once

#include "algorithms/algorithms.hpp"

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace chorus {

class AlgorithmChoice {
 public:
  // Throws Error(InvalidArgument) naming the bad part of the spec.
  void apply(std::string_view spec);
  // The algorithm forced for this collective, or nullptr (the tuner chooses).
  const Algorithm* forced(Collective collective) const {
    return forced_[static_cast<size_t>(collective)];
  }
  // The copy-path algorithms of this collective the tuner may choose from (never empty);
  // one-sided ones (Algorithm::oneSided) are chosen apart, when the buffers allow.
  std::span<const Algorithm* const> candidates(Collective collective) const {
    return candidates_[static_cast<size_t>(collective)];
  }
  bool excluded(const Algorithm& algorithm) const;  // by a "^name" spec

 private:
  static constexpr size_t kCollectives = 12;             // every Collective
  std::array<const Algorithm*, kCollectives> forced_{};  // nullptr: not forced
  std::array<std::vector<std::string>, kCollectives> excluded_;
  std::array<std::vector<const Algorithm*>, kCollectives> candidates_ = allCandidates();
  static std::array<std::vector<const Algorithm*>, kCollectives> allCandidates();
};

}  // namespace chorus
