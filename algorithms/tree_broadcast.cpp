// Binomial-tree broadcast: ceil(log2 p) steps. Ranks are numbered relative to the root;
// a rank receives the whole vector from the rank that differs in its lowest set bit,
// then forwards it to ranks + 2^j for each lower bit j, the largest subtree first. Each
// forward is pipelined behind the receive. The root sends count * ceil(log2 p) elements,
// every other rank receives count and sends count per child (at most log2 p children).
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule treeBroadcast(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t count = args.count;
  if (count == 0) return s;
  const int vrank = wrapRank(r - args.root, n);
  auto realRank = [&](int v) { return wrapRank(v + args.root, n); };
  int mask = 1;  // lowest set bit of vrank; for the root the first power of two >= n
  while (mask < n && (vrank & mask) == 0) mask <<= 1;
  int got = -1;
  Range data = in(0, count);
  if (vrank == 0) {
    copy(s, in(0, count), out(0, count));  // no-op when in-place
  } else {
    got = recv(s, realRank(vrank - mask), out(0, count));
    data = out(0, count);
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vrank + mask < n) send(s, realRank(vrank + mask), data, got);
  return s;
}

}  // namespace chorus
