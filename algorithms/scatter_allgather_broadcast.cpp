// Scatter + all-gather broadcast (for large messages): the root sends part i of p nearly
// equal parts straight to the i-th rank after it (one round: the engine drives all links
// at once), then the parts circulate along the ring starting at the root: at step k a
// rank forwards the part it received at step k-1 (its own at k = 0) to the next rank,
// p-1 steps. The root already holds everything, so it sends from its input and the rank
// before it sends nothing back. Each non-root rank receives count and sends about
// (p-1)/p count (the one before the root: nothing); the root sends about 2 (p-1)/p
// count, vs count * log2 p in a tree.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule scatterAllGatherBroadcast(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t count = args.count;
  if (count == 0) return s;
  const int vrank = wrapRank(r - args.root, n);  // parts are numbered from the root
  auto part = [&](int v) { return partOf(count, n, wrapRank(v, n)); };
  const int next = wrapRank(r + 1, n), prev = wrapRank(r - 1, n);
  if (vrank == 0) {
    copy(s, in(0, count), out(0, count));  // no-op when in-place
    for (int v = 1; v < n; ++v) {
      Part p = part(v);
      send(s, wrapRank(r + v, n), in(p.begin, p.size));
    }
    for (int k = 0; k < n - 1; ++k) {
      Part p = part(-k);
      send(s, next, in(p.begin, p.size));
    }
    return s;
  }
  Part own = part(vrank);
  int got = recv(s, args.root, out(own.begin, own.size));
  for (int k = 0; k < n - 1; ++k) {
    // Each part is forwarded as it arrives (same range, so pipelined element by element).
    Part sent = part(vrank - k), next_part = part(vrank - k - 1);
    if (vrank != n - 1) send(s, next, out(sent.begin, sent.size), got);
    got = recv(s, prev, out(next_part.begin, next_part.size));
  }
  return s;
}

}  // namespace chorus
