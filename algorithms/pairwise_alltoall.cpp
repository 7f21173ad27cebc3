// Pairwise all-to-all: at step k = 1..n-1 a rank sends block (r+k)%n of its input to rank
// (r+k)%n and receives block r of rank (r-k)%n into output block (r-k)%n; its own block is
// copied locally. `count` is the elements of one block. Each rank sends and receives
// (n-1)/n of its buffer, in n-1 messages each way.
//
// In-place (input and output the same memory), output block j is both what is sent to
// rank j and where rank j's block lands. The receive from j therefore waits, element by
// element, for the send to j (`after`): nothing is overwritten before it has left. The
// receive is gated on our own send only, never on a peer, so no cycle forms; out of place
// the order costs nothing, since both streams run side by side anyway.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

#include <vector>

namespace chorus {

Schedule pairwiseAllToAll(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t m = args.count;  // elements per block
  if (m == 0) return s;
  auto block = [&](int index) { return static_cast<size_t>(wrapRank(index, n)) * m; };
  copy(s, in(block(r), m), out(block(r), m));  // no-op when in-place
  std::vector<int> sentTo(n, -1);              // step index of the send to each peer
  for (int k = 1; k < n; ++k) {
    const int peer = wrapRank(r + k, n);
    sentTo[peer] = send(s, peer, in(block(peer), m));
  }
  for (int k = 1; k < n; ++k) {
    const int peer = wrapRank(r - k, n);
    guarded(s, recv(s, peer, out(block(peer), m), sentTo[peer]));  // in place: block sent
  }
  return s;
}

}  // namespace chorus
