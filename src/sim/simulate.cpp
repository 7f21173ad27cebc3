#include "sim/simulate.hpp"

#include <algorithm>
#include <limits>

namespace chorus::sim {

namespace {

// Step by step, `b` (of rank map(a's rank)) is `a` with every peer q moved to map(q).
template <typename Map>
bool sameMapped(const Schedule& a, const Schedule& b, int nranks, const Map& map) {
  if (a.steps.size() != b.steps.size()) return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const Step &x = a.steps[i], &y = b.steps[i];
    if (x.kind != y.kind || x.after != y.after || x.src.count != y.src.count ||
        x.dst.count != y.dst.count)
      return false;
    const bool local = x.peer < 0 || x.peer >= nranks;
    if (local != (y.peer < 0 || y.peer >= nranks)) return false;
    if (local) continue;
    if (map(x.peer) != y.peer) return false;
  }
  return true;
}

Schedule build(const Algorithm& algorithm, CollectiveArgs args, int rank) {
  args.rank = rank;
  return algorithm.build(args);
}

bool powerOfTwo(int x) { return x > 0 && (x & (x - 1)) == 0; }

}  // namespace

int symmetryPeriod(const Algorithm& algorithm, const CollectiveArgs& args, int networkPeriod,
                   std::vector<Schedule>& reps, Symmetry map) {
  const int n = args.nranks;
  reps.clear();
  if (networkPeriod <= 0 || networkPeriod >= n || n % networkPeriod != 0) return n;
  if (map == Symmetry::Xor && !(powerOfTwo(n) && powerOfTwo(networkPeriod))) return n;
  for (int g = networkPeriod; g < n; g = map == Symmetry::Xor ? 2 * g : g + networkPeriod) {
    if (n % g != 0) continue;
    if (g > 4096 || g > n / 2) break;  // too many classes to be worth it
    const int copies = n / g;
    std::vector<int> sample;
    if (copies <= 6) {
      for (int m = 1; m < copies; ++m) sample.push_back(m);
    } else {
      sample = {1, 2, 3, copies / 2, copies - 1};
    }
    // Rank by rank (a schedule can be costly to build: a mismatch at rank 0 costs only
    // the sample's schedules).
    bool ok = true;
    for (int r = 0; r < g && ok; ++r) {
      if (static_cast<int>(reps.size()) <= r) reps.push_back(build(algorithm, args, r));
      for (int m : sample) {
        const int shift = m * g;
        const int image = map == Symmetry::Xor ? r ^ shift : r + shift;
        auto peerMap = [&](int q) {
          return map == Symmetry::Xor ? q ^ shift : wrapRank(q + shift, n);
        };
        if (!(ok = sameMapped(reps[r], build(algorithm, args, image), n, peerMap))) break;
      }
    }
    if (ok) {
      reps.resize(g);
      return g;
    }
  }
  reps.clear();
  return n;
}

int rotationClasses(const Algorithm& algorithm, const CollectiveArgs& args, int perNode, int unit,
                    std::vector<Schedule>& reps) {
  const int n = args.nranks;
  reps.clear();
  if (perNode <= 1 || unit <= 0 || unit >= perNode || perNode % unit != 0 || n % perNode != 0 ||
      n <= perNode)
    return n;
  const int turns = perNode / unit;  // the turns m u, m = 1..turns-1: all when few
  std::vector<int> sample;
  if (turns <= 8) {
    for (int m = 1; m < turns; ++m) sample.push_back(m);
  } else {
    sample = {1, 2, 3, turns / 2, turns - 1};
  }
  const int nodes = n / perNode;
  reps.reserve(size_t(nodes) * unit);
  for (int node = 0; node < nodes; ++node)
    for (int l = 0; l < unit; ++l) {
      const int r = node * perNode + l;
      reps.push_back(build(algorithm, args, r));
      for (int m : sample) {
        const int k = m * unit;
        auto peerMap = [&](int q) { return rotateLocal(q, k, perNode); };
        if (!sameMapped(reps.back(), build(algorithm, args, rotateLocal(r, k, perNode)), n,
                        peerMap)) {
          reps.clear();
          return n;
        }
      }
    }
  return nodes * unit;
}

SimResult simulate(const Algorithm& algorithm, Collective collective, int nranks, size_t count,
                   size_t elementSize, NetworkModel& net, const SimOptions& options) {
  SimResult result;
  const CollectiveArgs args{collective, 0, nranks, count, 0, options.layout};
  std::vector<Schedule> schedules;
  int g = nranks;
  Symmetry map = Symmetry::Shift;
  if (options.compress) {
    // The fewer classes of the two maps: recursive doubling's partners compress to a node
    // by xor, while a shift finds at best half the ranks (r + p/2 = r xor p/2); a ring
    // compresses by a shift only.
    const int period = net.period(nranks);
    g = symmetryPeriod(algorithm, args, period, schedules);
    if (g > period && net.xorSymmetric(period, nranks)) {
      std::vector<Schedule> byXor;
      if (const int x = symmetryPeriod(algorithm, args, period, byXor, Symmetry::Xor); x < g) {
        g = x, map = Symmetry::Xor;
        schedules = std::move(byXor);
      }
    }
    // Turning every node's local index: hier_rd / hier_rhd between nodes that are not a
    // power of two (their folds leave no two nodes alike) replay one rank a node.
    const int unit = net.rotationUnit(nranks);
    if (unit > 0 && period < nranks && nranks / period * unit < g) {
      std::vector<Schedule> byTurn;
      if (const int t = rotationClasses(algorithm, args, period, unit, byTurn); t < g) {
        g = t, map = Symmetry::Rotate;
        schedules = std::move(byTurn);
      }
    }
  }
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
  size_t replayedSteps = 0;
  for (const Schedule& s : schedules) replayedSteps += s.steps.size();
  if (replayedSteps > options.maxSteps) {  // compressed, yet too many ranks replayed
    result.tooLarge = true;
    result.period = g;
    result.micros = std::numeric_limits<double>::infinity();
    return result;
  }
  static_cast<ReplayResult&>(result) =
      replay(schedules, elementSize, net, nranks, options.sliceBytes, map, net.period(nranks),
             options.timeline);
  result.period = g;
  result.symmetry = map;
  return result;
}

}  // namespace chorus::sim
