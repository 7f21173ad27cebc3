// Binomial-tree reduce: ceil(log2 p) steps. Ranks are numbered relative to the root; a
// rank folds in the whole vector of each child (rank + 2^j for each bit j below its
// lowest set bit, the smallest subtree first), then sends its partial sum to its parent
// (rank - lowest set bit). Every fold and the send are pipelined behind the one before.
// Each non-root rank sends count elements once; a rank receives count per child (the
// root log2 p times). Partial sums live in scratch (count) on inner ranks.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule treeReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t count = args.count;
  if (emptyOrSingleRank(s, n, count)) return s;
  const int vrank = wrapRank(r - args.root, n);
  auto realRank = [&](int v) { return wrapRank(v + args.root, n); };
  int children = 0;  // the lowest set bit of vrank; for the root the first power of two >= n
  int mask = 1;
  while (mask < n && (vrank & mask) == 0) mask <<= 1;
  for (int j = 1; j < mask && vrank + j < n; j <<= 1) ++children;
  // The root accumulates in its output, inner ranks in scratch; the first fold reads
  // the input, later ones the running sum.
  const Range sum = vrank == 0 ? out(0, count) : scratch(0, count);
  Range acc = in(0, count);
  int last = -1;
  for (int j = 1, i = 0; i < children; j <<= 1, ++i) {
    const bool final = vrank == 0 && i == children - 1;
    last = recvReduce(s, realRank(vrank + j), acc, sum, final, last);
    acc = sum;
  }
  if (vrank != 0) {
    send(s, realRank(vrank - mask), acc, last);
    if (children > 0) s.scratchCount = count;
  }
  return s;
}

}  // namespace chorus
