// Reduce-scatter + gather reduce (for large messages): a ring reduce-scatter over p
// nearly equal parts (p-1 steps; afterwards rank r holds part r+1 fully reduced), then
// every rank sends its part straight to the root (one round). Each rank sends about
// (p-1)/p count in the ring plus count/p to the root; the root receives about
// 2 (p-1)/p count, vs count * log2 p for the binomial tree. Partial sums live in scratch
// on every rank except for the root's own part, which is reduced into its output.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

#include <vector>

namespace chorus {

Schedule reduceScatterGatherReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t count = args.count;
  if (emptyOrSingleRank(s, n, count)) return s;
  const bool root = r == args.root;
  const int next = wrapRank(r + 1, n), prev = wrapRank(r - 1, n);
  auto part = [&](int index) { return partOf(count, n, wrapRank(index, n)); };
  // Scratch holds element e at e (only the parts passed on are ever written).
  std::vector<int> reads(n, -1);  // per part: the root's last step reading its input
  int produced = -1;
  for (int k = 0; k < n - 1; ++k) {
    Part sent = part(r - k), got = part(r - k - 1);
    int step = send(s, next, k == 0 ? in(sent.begin, sent.size) : scratch(sent.begin, sent.size),
                    produced);
    if (k == 0) reads[wrapRank(r, n)] = step;
    const bool last = k == n - 2;  // the arriving part is r + 1: complete here
    Range dst = last && root ? out(got.begin, got.size) : scratch(got.begin, got.size);
    produced = recvReduce(s, prev, in(got.begin, got.size), dst, /*finalize=*/last);
    reads[wrapRank(r - k - 1, n)] = produced;
  }
  s.scratchCount = count;
  Part mine = part(r + 1);
  if (!root) {
    send(s, args.root, scratch(mine.begin, mine.size), produced);
    return s;
  }
  // Gather: rank j sends part j + 1. In-place, the output is the input, so each part is
  // written only after this rank's ring steps have read it.
  for (int j = 0; j < n; ++j) {
    if (j == r) continue;
    const int index = wrapRank(j + 1, n);
    Part p = part(index);
    recv(s, j, out(p.begin, p.size), reads[index]);
  }
  return s;
}

}  // namespace chorus
