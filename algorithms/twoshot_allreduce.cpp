// Two-shot all-reduce: a direct reduce-scatter (every rank sends part j straight to rank
// j, which folds the n-1 parts it receives into its own) followed by a direct all-gather
// (every rank sends its finished part to every other). The same bytes as the ring, but
// two dependent steps instead of 2(n-1): far less exposed to ranks waiting on each other,
// which matters when ranks share cores.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule twoshotAllReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  if (args.count == 0) return s;
  auto part = [&](int index) { return partOf(args.count, n, wrapRank(index, n)); };
  const Part mine = part(r);
  for (int k = 1; k < n; ++k) {
    Part p = part(r + k);
    send(s, wrapRank(r + k, n), in(p.begin, p.size));
  }
  int folded = copy(s, in(mine.begin, mine.size), out(mine.begin, mine.size), n == 1);
  for (int k = 1; k < n; ++k) {
    folded = recvReduce(s, wrapRank(r - k, n), out(mine.begin, mine.size),
                        out(mine.begin, mine.size), /*finalize=*/k == n - 1, folded);
  }
  for (int k = 1; k < n; ++k) send(s, wrapRank(r + k, n), out(mine.begin, mine.size), folded);
  for (int k = 1; k < n; ++k) {
    Part p = part(r - k);
    recv(s, wrapRank(r - k, n), out(p.begin, p.size));
  }
  return s;
}

}  // namespace chorus
