// Ring reduce-scatter-v: the ring reduce-scatter with a block per rank of its own size
// (counts, packed in rank order). n-1 steps; at step k a rank sends its partial sum of
// block r-k-1 and folds its own contribution into block r-k-2 as it arrives; after the
// last step block r is complete. Partial sums live in scratch, one slot per step.
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule ringReduceScatterV(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks;
  if (offsetOf(args, n) == 0) return s;  // nothing anywhere
  if (n == 1) {
    copy(s, in(0, countOf(args, 0)), out(0, countOf(args, 0)), /*finalize=*/true);
    return s;
  }
  const RingOrder ring{args.layout, n};
  const int r = ring.positionOf(args.rank);
  const int next = ring.rankAt(r + 1), prev = ring.rankAt(r - 1);
  auto inputBlock = [&](int position) {
    const int owner = ring.rankAt(position);
    return in(offsetOf(args, owner), countOf(args, owner));
  };
  int produced = -1;
  size_t slot = 0, nextSlot = 0;  // scratch offset of the last partial sum, of the next
  for (int k = 0; k < n - 1; ++k) {
    send(s, next,
         k == 0 ? inputBlock(r - k - 1) : scratch(slot, countOf(args, ring.rankAt(r - k - 1))),
         produced);
    const bool last = k == n - 2;  // then the arriving block is ours: r - n == r
    const Range local = inputBlock(r - k - 2);
    slot = nextSlot;
    produced = recvReduce(s, prev, local, last ? out(0, local.count) : scratch(slot, local.count),
                          /*finalize=*/last);
    if (!last) nextSlot += local.count;
  }
  s.scratchCount = nextSlot;
  return s;
}

}  // namespace chorus
