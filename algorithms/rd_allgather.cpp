// Recursive-doubling all-gather (power-of-two p): log2(p) steps; at step k a rank swaps
// the 2^k blocks it holds with the rank whose rank differs in bit k, receiving straight
// into the output. Each rank sends and receives (p-1)/p of the output.
//
// Other p: the doubling pairs do not exist, so the schedule is Bruck's (ceil(log2 p)
// steps, the same bytes), which the tests check like any other.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule rdAllGather(const CollectiveArgs& args) {
  using namespace steps;
  const int n = args.nranks, r = args.rank;
  if ((n & (n - 1)) != 0) return bruckAllGather(args);
  Schedule s;
  const size_t m = args.count;  // elements per rank
  if (m == 0) return s;
  // Every step's range is non-empty and twice the last one's, so each waits for the
  // previous receive to finish, which implies everything before it has.
  int last = copy(s, in(0, m), out(static_cast<size_t>(r) * m, m));  // no-op when in-place
  for (int mask = 1; mask < n; mask <<= 1) {
    const int peer = r ^ mask;
    const size_t mine = static_cast<size_t>(r & ~(mask - 1)) * m;
    const size_t theirs = static_cast<size_t>(peer & ~(mask - 1)) * m;
    const size_t size = static_cast<size_t>(mask) * m;
    if (mask == 1) {
      send(s, peer, in(0, m));
    } else {
      send(s, peer, out(mine, size), last);
    }
    last = recv(s, peer, out(theirs, size), last);
  }
  return s;
}

}  // namespace chorus
