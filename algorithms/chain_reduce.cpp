// Pipelined chain reduce along the ring ending at the root: the rank after the root
// starts, each rank folds in its contribution as the partial result streams through.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule chainReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t count = args.count;
  if (emptyOrSingleRank(s, n, count)) return s;
  const int position = wrapRank(r - args.root - 1, n);  // 0 starts, n-1 is the root
  const int next = wrapRank(r + 1, n), prev = wrapRank(r - 1, n);
  if (position == 0) {
    send(s, next, in(0, count));
  } else if (position < n - 1) {
    int folded = recvReduce(s, prev, in(0, count), scratch(0, count), /*finalize=*/false);
    send(s, next, scratch(0, count), folded);
    s.scratchCount = count;
  } else {
    recvReduce(s, prev, in(0, count), out(0, count), /*finalize=*/true);
  }
  return s;
}

}  // namespace chorus
