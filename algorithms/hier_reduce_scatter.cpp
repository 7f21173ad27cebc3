// Hierarchical reduce-scatter over nodes of L ranks each (a uniform Layout):
//  1. intra-node ring reduce-scatter in which local rank j's share is the N blocks of
//     its rail (the ranks with local index j, one per node): each transfer is N blocks;
//     local rank i ends with its node's partial sums of its rail's blocks (scratch);
//  2. inter-node ring reduce-scatter of those N blocks along the rail, all rails at once:
//     each rank ends with the full sum of its own block.
// Per rank: (L-1) N m within the node, (N-1) m to other nodes (m = count per rank).
// Without a usable layout (none, one node, unequal nodes) it is the flat ring.
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/steps.hpp"

#include <vector>

namespace chorus {

Schedule hierReduceScatter(const CollectiveArgs& args) {
  using namespace steps;
  const Layout* layout = hierarchicalLayout(args.layout, args.nranks);
  if (!layout) return ringReduceScatter(args);
  const int N = layout->nodes(), L = layout->uniformLocalSize(), r = args.rank;
  const int i = layout->localIndex(r), node = layout->nodeOf(r);
  const size_t m = args.count;
  Schedule s;
  if (m == 0) return s;
  auto rankAt = [&](int n, int j) { return layout->rankAt(n, j); };
  auto inputBlock = [&](int rank) { return in(static_cast<size_t>(rank) * m, m); };
  const size_t rail = static_cast<size_t>(N) * m;  // elements of one rail's N blocks

  // 1. Within the node: the partial of rail (i-k-1) leaves at step k; the partial of rail
  //    (i-k-2) arrives and is folded into scratch area k. Area L-2 ends as rail i's node
  //    sum (node n's block at n*m). L == 1: rail i's blocks are simply the input's.
  std::vector<int> partial(N, -1);  // per node block: the step that wrote it last
  auto railBlock = [&](size_t area, int n) { return scratch(area * rail + n * m, m); };
  for (int k = 0; k < L - 1; ++k) {
    for (int n = 0; n < N; ++n) {
      const int owner = rankAt(n, i - k - 1);
      send(s, rankAt(node, i + 1), k == 0 ? inputBlock(owner) : railBlock(k - 1, n), partial[n]);
    }
    for (int n = 0; n < N; ++n) {
      const int owner = rankAt(n, i - k - 2);
      partial[n] = recvReduce(s, rankAt(node, i - 1), inputBlock(owner), railBlock(k, n),
                              /*finalize=*/false);
    }
  }
  auto mine = [&](int n) {  // this rank's node sum of rail node n's block
    return L == 1 ? inputBlock(rankAt(n, i)) : railBlock(L - 2, n);
  };
  const size_t phase1 = static_cast<size_t>(L - 1) * rail;

  // 2. Along the rail: ring reduce-scatter of the N blocks; partials after phase 1's.
  const int railNext = rankAt(node + 1, i), railPrev = rankAt(node - 1, i);
  int produced = -1;
  for (int k = 0; k < N - 1; ++k) {
    const int sentNode = wrapRank(node - k - 1, N), gotNode = wrapRank(node - k - 2, N);
    send(s, railNext, k == 0 ? mine(sentNode) : scratch(phase1 + (k - 1) * m, m),
         k == 0 ? partial[sentNode] : produced);
    const bool last = k == N - 2;  // then the arriving block is ours
    produced =
        recvReduce(s, railPrev, mine(gotNode), last ? out(0, m) : scratch(phase1 + k * m, m), last);
    // The local term must be complete: wait for phase 1's fold of it when it is the
    // first use (recvReduce has one `after`: the local operand's producer).
    s.steps.back().after = partial[gotNode];
  }
  s.scratchCount = phase1 + static_cast<size_t>(N > 2 ? N - 2 : 0) * m;
  return s;
}

}  // namespace chorus
