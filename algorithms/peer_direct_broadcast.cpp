// Direct broadcast over one-sided reads: the root exposes its buffer to every rank, and
// each reads it straight into its output (n-1 readers of the root's memory at once, one
// pass per byte), then signals the root that it is done, so the root returns only when no
// one reads its buffer any more.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule peerDirectBroadcast(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank, root = args.root;
  const size_t m = args.count;
  if (m == 0) return s;
  if (r == root) {
    // In place the copy writes (onto itself) what is exposed next: it goes first.
    const int own = copy(s, in(0, m), out(0, m));
    for (int k = 1; k < n; ++k) expose(s, wrapRank(root + k, n), in(0, m), own);
    for (int k = 1; k < n; ++k) peerRead(s, wrapRank(root + k, n), out(0, 0));  // done
    return s;
  }
  const int read = peerRead(s, root, out(0, m));
  expose(s, root, out(0, 0), read);
  return s;
}

}  // namespace chorus
