#include "tuner/fit.hpp"

#include "tuner/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace chorus {
namespace {

double squaredLogError(std::span<const Measurement> measurements, const LinkModel& link) {
  double sum = 0;
  for (const Measurement& m : measurements) {
    const double predicted = predictMicros(*m.algorithm, m.algorithm->collective, m.nranks, m.count,
                                           m.elementSize, link);
    if (!std::isfinite(predicted) || predicted <= 0 || m.micros <= 0)
      return std::numeric_limits<double>::infinity();
    const double e = std::log(predicted / m.micros);
    sum += e * e;
  }
  return sum;
}

}  // namespace

Fit fitLink(std::span<const Measurement> measurements, const LinkModel& start) {
  // A log10 grid over (latency, overhead, bandwidth); each round shrinks the window
  // around the best point.
  struct Axis {
    double lo, hi, best;
  };
  Axis axes[3] = {{std::log10(0.05), std::log10(5000.0), 0},  // latencyUs
                  {-2, 3, 0},                                 // overheadUs (0.01..1000)
                  {0, 6, 0}};                                 // bytesPerUs (1..1e6)
  auto modelAt = [&](double l, double o, double b) {
    LinkModel m = start;
    m.latencyUs = std::pow(10, l);
    m.overheadUs = std::pow(10, o);
    m.bytesPerUs = std::pow(10, b);
    return m;
  };
  double best = std::numeric_limits<double>::infinity();
  LinkModel link = start;
  constexpr int kPoints = 9;
  auto at = [&](const Axis& a, int i) { return a.lo + (a.hi - a.lo) * i / (kPoints - 1); };
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < kPoints; ++i)
      for (int j = 0; j < kPoints; ++j)
        for (int k = 0; k < kPoints; ++k) {
          const double l = at(axes[0], i), o = at(axes[1], j), b = at(axes[2], k);
          const LinkModel candidate = modelAt(l, o, b);
          const double err = squaredLogError(measurements, candidate);
          if (err < best) {
            best = err, link = candidate;
            axes[0].best = l, axes[1].best = o, axes[2].best = b;
          }
        }
    for (Axis& a : axes) {
      const double span = (a.hi - a.lo) / (kPoints - 1) * 1.5;
      a.lo = a.best - span, a.hi = a.best + span;
    }
  }
  Fit fit{link, 0};
  if (!measurements.empty() && std::isfinite(best))
    fit.rmsLogError = std::sqrt(best / static_cast<double>(measurements.size()));
  return fit;
}

}  // namespace chorus
