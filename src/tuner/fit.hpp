// Calibration: the link latency and bandwidth that make the cost model's predictions
// match measured collective times best (least squares on log time, so 8 B and 64 MiB
// weigh alike). The local rates (reduce, copy) are measured directly and kept fixed.
#pragma once

#include "algorithms/algorithms.hpp"
#include "tuner/link_model.hpp"

#include <span>

namespace chorus {

struct Measurement {
  const Algorithm* algorithm;
  int nranks;
  size_t count;
  size_t elementSize;
  double micros;  // measured time of one call
};

struct Fit {
  LinkModel link;
  double rmsLogError = 0;  // root mean square of ln(predicted / measured)
};

// Searches latencyUs in [0.05, 5000], overheadUs in [0.01, 1000] and bytesPerUs in [1, 1e6]
// (log-spaced grid, then
// refined around the best point), starting from `start` for the other fields.
Fit fitLink(std::span<const Measurement> measurements, const LinkModel& start);

}  // namespace chorus
