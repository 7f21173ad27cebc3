// Ring all-gather: n-1 steps; at each step a rank forwards the block it received last.
// Each rank sends and receives (n-1)/n of the output.
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule ringAllGather(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks;
  const size_t m = args.count;  // elements per rank
  if (m == 0) return s;
  copy(s, in(0, m), out(static_cast<size_t>(args.rank) * m, m));  // no-op when in-place
  // Positions on the ring (the layout's order); blocks stay at their rank's offset.
  const RingOrder ring{args.layout, n};
  const int r = ring.positionOf(args.rank);
  const int next = ring.rankAt(r + 1), prev = ring.rankAt(r - 1);
  int produced = -1;
  for (int k = 0; k < n - 1; ++k) {
    size_t sent = static_cast<size_t>(ring.rankAt(r - k)) * m;
    size_t got = static_cast<size_t>(ring.rankAt(r - k - 1)) * m;
    send(s, next, k == 0 ? in(0, m) : out(sent, m), produced);
    produced = recv(s, prev, out(got, m));
  }
  return s;
}

}  // namespace chorus
