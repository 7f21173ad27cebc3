// Pipelined chain broadcast along the ring from the root: every rank forwards each piece
// as soon as it arrives, so large messages move at link speed after n-1 hops of latency.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule chainBroadcast(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t count = args.count;
  if (count == 0) return s;
  const int position = wrapRank(r - args.root, n);  // 0 = root, n-1 = end of the chain
  const int next = wrapRank(r + 1, n), prev = wrapRank(r - 1, n);
  if (position == 0) {
    if (n > 1) send(s, next, in(0, count));
    copy(s, in(0, count), out(0, count));  // no-op when in-place
    return s;
  }
  int got = recv(s, prev, out(0, count));
  if (position < n - 1) send(s, next, out(0, count), got);
  return s;
}

}  // namespace chorus
