// One-shot all-reduce over one-sided reads: every rank folds every rank's whole input,
// read in place from the peers' memory, in one pass (one dependent step: the fewest
// waits, n times the reads of two-shot; for mid-sized messages). Inputs are folded in
// rank order (0, 1, 2, ...) on every rank, so all ranks get bit-identical results.
// The fold goes to scratch and one copy finishes it: in place the output is the input
// that the peers are reading, so the copy waits until every peer says it is done.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule peerOneshotAllReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t count = args.count;
  if (emptyOrSingleRank(s, n, count)) return s;
  s.scratchCount = count;
  const Range mine = in(0, count), acc = scratch(0, count);
  for (int k = 1; k < n; ++k) expose(s, wrapRank(r + k, n), mine);
  // acc = in0 OP in1 (the op commutes exactly, so ranks 0 and 1 start from their own).
  int folded = r <= 1 ? peerReduce(s, 1 - r, mine, acc, n == 2)
                      : peerReduce(s, 1, acc, acc, n == 2, peerRead(s, 0, acc));
  for (int j = 2; j < n; ++j)
    folded = j == r ? reduce(s, mine, acc, j == n - 1, folded)
                    : peerReduce(s, j, acc, acc, j == n - 1, folded);
  for (int k = 1; k < n; ++k) expose(s, wrapRank(r + k, n), out(0, 0), folded);  // done with P's
  int allDone = folded;
  for (int k = 1; k < n; ++k) allDone = peerRead(s, wrapRank(r - k, n), out(0, 0), allDone);
  copy(s, acc, out(0, count), false, allDone);
  return s;
}

}  // namespace chorus
