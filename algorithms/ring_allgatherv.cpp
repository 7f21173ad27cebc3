// Ring all-gather-v: the ring all-gather with a block per rank of its own size (counts,
// packed in rank order). n-1 steps; at step k a rank forwards the block it received at
// step k-1, so each send is pipelined behind that receive (same size). Empty blocks keep
// their (empty) steps, which keep the order.
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule ringAllGatherV(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks;
  if (offsetOf(args, n) == 0) return s;  // nothing anywhere
  const size_t mine = countOf(args, args.rank);
  copy(s, in(0, mine), out(offsetOf(args, args.rank), mine));  // no-op when in place
  const RingOrder ring{args.layout, n};
  const int r = ring.positionOf(args.rank);
  const int next = ring.rankAt(r + 1), prev = ring.rankAt(r - 1);
  auto block = [&](int position) {
    const int owner = ring.rankAt(position);
    return out(offsetOf(args, owner), countOf(args, owner));
  };
  int produced = -1;
  for (int k = 0; k < n - 1; ++k) {
    send(s, next, k == 0 ? in(0, mine) : block(r - k), produced);
    produced = recv(s, prev, block(r - k - 1));
  }
  return s;
}

}  // namespace chorus
