// Direct reduce-scatter over one-sided reads: rank r folds block r of every rank's input
// straight out of the peers' memory into its output, one pass (each source read once, the
// destination written once; the engine moves the chain of folds slice by slice, so the
// destination stays in cache), in rank order r+1, r+2, ... from its own block.
//
// A ring over one-sided reads needs each partial sum in memory the next rank can map, and
// a second such buffer so that one step's partial is not overwritten while the neighbour
// still reads the previous one; the output holds one block and scratch cannot be exposed,
// so the reduce-scatter reads directly (n-1 reads per rank, as the ring).
//
// In place our output block r is our input block r, which no peer reads. Every peer then
// signals that it is done with the block we exposed to it.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule peerDirectReduceScatter(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t m = args.count;  // elements per block
  if (m == 0) return s;
  auto block = [&](int index) { return in(static_cast<size_t>(wrapRank(index, n)) * m, m); };
  if (n == 1) {
    copy(s, block(0), out(0, m), /*finalize=*/true);
    return s;
  }
  for (int k = 1; k < n; ++k) expose(s, wrapRank(r + k, n), block(r + k));
  int folded = -1;
  for (int k = 1; k < n; ++k)
    folded = peerReduce(s, wrapRank(r + k, n), k == 1 ? block(r) : out(0, m), out(0, m),
                        /*finalize=*/k == n - 1, folded);
  for (int k = 1; k < n; ++k) expose(s, wrapRank(r - k, n), out(0, 0), folded);  // done
  for (int k = 1; k < n; ++k) peerRead(s, wrapRank(r + k, n), out(0, 0));        // they are
  return s;
}

}  // namespace chorus
