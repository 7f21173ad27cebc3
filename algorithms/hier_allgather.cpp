// Hierarchical all-gather over nodes of L ranks each (a uniform Layout):
//  1. inter-node ring all-gather along the rail (the ranks with this local index, one per
//     node): every rail runs at once, so every NIC carries 1/L of the traffic;
//  2. intra-node ring all-gather of whole rails: at each of L-1 steps a rank forwards the
//     N blocks of one rail, block by block, each behind the step that brought it.
// Per rank: (N-1) m to other nodes, (L-1) N m within the node (m = count per rank).
// Without a usable layout (none, one node, unequal nodes) it is the flat ring.
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/steps.hpp"

#include <vector>

namespace chorus {

Schedule hierAllGather(const CollectiveArgs& args) {
  using namespace steps;
  const Layout* layout = hierarchicalLayout(args.layout, args.nranks);
  if (!layout) return ringAllGather(args);
  const int N = layout->nodes(), L = layout->uniformLocalSize(), r = args.rank;
  const int i = layout->localIndex(r), node = layout->nodeOf(r);
  const size_t m = args.count;
  Schedule s;
  if (m == 0) return s;
  auto rankAt = [&](int n, int j) { return layout->rankAt(n, j); };
  auto block = [&](int rank) { return out(static_cast<size_t>(rank) * m, m); };
  std::vector<int> writer(args.nranks, -1);  // the step that put each rank's block here

  writer[r] = copy(s, in(0, m), block(r));  // no-op when in place
  // 1. Along the rail.
  const int railNext = rankAt(node + 1, i), railPrev = rankAt(node - 1, i);
  for (int k = 0; k < N - 1; ++k) {
    const int sent = rankAt(node - k, i), got = rankAt(node - k - 1, i);
    send(s, railNext, k == 0 ? in(0, m) : block(sent), k == 0 ? -1 : writer[sent]);
    writer[got] = recv(s, railPrev, block(got));
  }
  // 2. Within the node, rail by rail.
  const int next = rankAt(node, i + 1), prev = rankAt(node, i - 1);
  for (int k = 0; k < L - 1; ++k) {
    for (int n = 0; n < N; ++n) {
      const int sent = rankAt(n, i - k);
      send(s, next, k == 0 && sent == r ? in(0, m) : block(sent),
           k == 0 && sent == r ? -1 : writer[sent]);
    }
    for (int n = 0; n < N; ++n) {
      const int got = rankAt(n, i - k - 1);
      writer[got] = recv(s, prev, block(got));
    }
  }
  return s;
}

}  // namespace chorus
