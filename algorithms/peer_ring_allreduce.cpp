// Ring all-reduce over one-sided reads: a ring reduce-scatter, then a ring all-gather
// running the other way round, every step reading the neighbour's buffer in place. No
// transport buffer: each step folds (or copies) one chunk straight from the neighbour's
// memory into this rank's output, one pass per byte.
//
// Chunks c = 0..n-1 (partOf). For rank r:
//  1. reduce-scatter, step k = 0..n-2: fold chunk c = r-k-1 read from rank r-1 (its input
//     at k = 0, its partial output after) with our own input into output chunk c, and
//     expose that partial to rank r+1 for its next step. Rank r then holds chunk r+1.
//  2. all-gather the other way, step k = 0..n-2: read chunk r+2+k from rank r+1 into our
//     output; expose each chunk we hold to rank r-1 once we hold it.
// Every chunk written in phase 2 was exposed to rank r+1 in phase 1 (in place, chunk r is
// our input exposed at step 0): rank r+1's first phase-2 expose is sent after its last
// phase-1 read, so reading it tells us that rank r+1 is done with all we exposed. At the
// end rank r-1 signals that it is done with what we exposed in phase 2.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule peerRingAllReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  if (emptyOrSingleRank(s, n, args.count)) return s;
  const int next = wrapRank(r + 1, n), prev = wrapRank(r - 1, n);
  auto chunk = [&](Range (*buffer)(size_t, size_t), int index) {
    const Part p = partOf(args.count, n, wrapRank(index, n));
    return buffer(p.begin, p.size);
  };
  expose(s, next, chunk(in, r));
  int folded = -1;
  for (int k = 0; k < n - 1; ++k) {
    const int c = r - k - 1;
    folded = peerReduce(s, prev, chunk(in, c), chunk(out, c), /*finalize=*/k == n - 2);
    if (k < n - 2) expose(s, next, chunk(out, c), folded);
  }
  int held = folded;  // chunk r+1, complete
  for (int k = 0; k < n - 1; ++k) {
    expose(s, prev, chunk(out, r + 1 + k), held);
    held = peerRead(s, next, chunk(out, r + 2 + k));
  }
  expose(s, next, out(0, 0), held);  // done with what rank r+1 exposed
  peerRead(s, prev, out(0, 0));      // rank r-1 is done with ours
  return s;
}

}  // namespace chorus
