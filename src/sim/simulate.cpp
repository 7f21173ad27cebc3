#include "sim/simulate.hpp"

#include <algorithm>
#include <limits>

namespace chorus::sim {

namespace {

// Step by step, `b` (of rank a + shift) is `a` (of rank a) moved by `shift`.
bool sameShifted(const Schedule& a, const Schedule& b, int shift, int nranks) {
  if (a.steps.size() != b.steps.size()) return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const Step &x = a.steps[i], &y = b.steps[i];
    if (x.kind != y.kind || x.after != y.after || x.src.count != y.src.count ||
        x.dst.count != y.dst.count)
      return false;
    const bool local = x.peer < 0 || x.peer >= nranks;
    if (local != (y.peer < 0 || y.peer >= nranks)) return false;
    if (!local && wrapRank(x.peer + shift, nranks) != y.peer) return false;
  }
  return true;
}

Schedule build(const Algorithm& algorithm, CollectiveArgs args, int rank) {
  args.rank = rank;
  return algorithm.build(args);
}

}  // namespace

int symmetryPeriod(const Algorithm& algorithm, const CollectiveArgs& args, int networkPeriod,
                   std::vector<Schedule>& reps) {
  const int n = args.nranks;
  reps.clear();
  if (networkPeriod <= 0 || networkPeriod >= n || n % networkPeriod != 0) return n;
  for (int g = networkPeriod; g < n; g += networkPeriod) {
    if (n % g != 0) continue;
    if (g > 4096 || g > n / 2) break;  // too many classes to be worth it
    while (static_cast<int>(reps.size()) < g)
      reps.push_back(build(algorithm, args, static_cast<int>(reps.size())));
    const int copies = n / g;
    std::vector<int> sample;
    if (copies <= 6) {
      for (int m = 1; m < copies; ++m) sample.push_back(m);
    } else {
      sample = {1, 2, 3, copies / 2, copies - 1};
    }
    bool ok = true;
    for (int m : sample) {
      for (int r = 0; r < g && ok; ++r)
        ok = sameShifted(reps[r], build(algorithm, args, r + m * g), m * g, n);
      if (!ok) break;
    }
    if (ok) {
      reps.resize(g);
      return g;
    }
  }
  reps.clear();
  return n;
}

SimResult simulate(const Algorithm& algorithm, Collective collective, int nranks, size_t count,
                   size_t elementSize, NetworkModel& net, const SimOptions& options) {
  SimResult result;
  const CollectiveArgs args{collective, 0, nranks, count, 0, options.layout};
  std::vector<Schedule> schedules;
  int g = nranks;
  if (options.compress) g = symmetryPeriod(algorithm, args, net.period(nranks), schedules);
  if (g == nranks) {
    schedules.clear();
    const Schedule first = build(algorithm, args, 0);
    if (std::max<size_t>(first.steps.size(), 1) * nranks > options.maxSteps) {
      result.tooLarge = true;
      result.period = nranks;
      result.micros = std::numeric_limits<double>::infinity();
      return result;
    }
    schedules.reserve(nranks);
    schedules.push_back(first);
    for (int r = 1; r < nranks; ++r) schedules.push_back(build(algorithm, args, r));
  }
  static_cast<ReplayResult&>(result) =
      replay(schedules, elementSize, net, nranks, options.sliceBytes);
  result.period = g;
  return result;
}

}  // namespace chorus::sim
