// Ring all-gather over one-sided reads: at step k = 0..n-2 rank r reads block r-1-k from
// rank r-1's memory straight into its own output (rank r-1's input at step 0, its output
// after), and exposes to rank r+1 each block once it holds it. Each block is written once
// and exposed only after, so no exposed range is ever overwritten; at the end rank r+1
// signals that it is done reading. Own block: copied locally (nothing in place).
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule peerRingAllGather(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t m = args.count;  // elements per block
  if (m == 0) return s;
  auto block = [&](int index) { return out(static_cast<size_t>(wrapRank(index, n)) * m, m); };
  // In place the copy writes (onto itself) what is exposed next: it goes first.
  const int own = copy(s, in(0, m), block(r));
  if (n == 1) return s;
  const int next = wrapRank(r + 1, n), prev = wrapRank(r - 1, n);
  expose(s, next, in(0, m), own);
  int held = -1;
  for (int k = 0; k < n - 1; ++k) {
    held = peerRead(s, prev, block(r - 1 - k));
    if (k < n - 2) expose(s, next, block(r - 1 - k), held);
  }
  expose(s, prev, out(0, 0), held);  // done with what rank r-1 exposed
  peerRead(s, next, out(0, 0));      // rank r+1 is done with ours
  return s;
}

}  // namespace chorus
