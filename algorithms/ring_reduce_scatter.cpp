// Ring reduce-scatter: n-1 steps; at step k a rank sends its partial sum of block r-k-1
// and folds its own contribution into block r-k-2 as it arrives; after the last step
// block r is complete. Partial sums live in scratch so the input stays untouched.
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule ringReduceScatter(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks;
  const size_t m = args.count;  // elements each rank receives
  if (emptyOrSingleRank(s, n, m)) return s;
  // Positions on the ring (the layout's order); block of the rank at a position.
  const RingOrder ring{args.layout, n};
  const int r = ring.positionOf(args.rank);
  const int next = ring.rankAt(r + 1), prev = ring.rankAt(r - 1);
  auto block = [&](int position) { return static_cast<size_t>(ring.rankAt(position)) * m; };
  int produced = -1;
  for (int k = 0; k < n - 1; ++k) {
    send(s, next, k == 0 ? in(block(r - k - 1), m) : scratch((k - 1) * m, m), produced);
    const bool last = k == n - 2;  // then the arriving block is ours: r - n == r
    produced = recvReduce(s, prev, in(block(r - k - 2), m), last ? out(0, m) : scratch(k * m, m),
                          /*finalize=*/last);
  }
  s.scratchCount = static_cast<size_t>(n - 2) * m;
  return s;
}

}  // namespace chorus
