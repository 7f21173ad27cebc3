// Two-shot all-reduce over one-sided reads (buffers the transport can expose): rank r
// folds part r of every rank's input straight out of the peers' memory into its own
// output (one pass: each source read once, the destination written once), then reads
// every other part from the rank that finished it. No transport buffer, no staging copy.
//
// Phases, for rank r and each peer P:
//  1. expose input part P to P; fold part r of every input into output part r.
//  2. expose output part r to every P once folded: it tells P its part r of our input is
//     no longer read (P may now overwrite it, in place) and that our result is ready.
//  3. read output part P from P; then signal P that we are done with it, and wait for
//     the same signal from P before finishing (our output part r may not change while P
//     reads it).
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule peerTwoshotAllReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  if (emptyOrSingleRank(s, n, args.count)) return s;
  auto part = [&](int index) { return partOf(args.count, n, wrapRank(index, n)); };
  const Part mine = part(r);
  for (int k = 1; k < n; ++k) {
    const Part p = part(r + k);
    expose(s, wrapRank(r + k, n), in(p.begin, p.size));
  }
  int folded = -1;
  for (int k = 1; k < n; ++k) {
    const Range local = k == 1 ? in(mine.begin, mine.size) : out(mine.begin, mine.size);
    folded = peerReduce(s, wrapRank(r - k, n), local, out(mine.begin, mine.size),
                        /*finalize=*/k == n - 1, folded);
  }
  for (int k = 1; k < n; ++k) expose(s, wrapRank(r + k, n), out(mine.begin, mine.size), folded);
  for (int k = 1; k < n; ++k) {
    const Part p = part(r - k);
    const int read = peerRead(s, wrapRank(r - k, n), out(p.begin, p.size));
    expose(s, wrapRank(r - k, n), out(0, 0), read);  // done with P's part
  }
  for (int k = 1; k < n; ++k) peerRead(s, wrapRank(r + k, n), out(0, 0));  // P is done with ours
  return s;
}

}  // namespace chorus
