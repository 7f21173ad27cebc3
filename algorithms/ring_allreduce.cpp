// Ring all-reduce: a ring reduce-scatter leaves each rank with one fully reduced chunk,
// then a ring all-gather circulates the chunks. 2(n-1) steps; each rank sends and
// receives 2(n-1)/n of the buffer. The output buffer doubles as the accumulator, so no
// scratch is needed and in-place works unchanged.
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule ringAllReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks;
  if (emptyOrSingleRank(s, n, args.count)) return s;
  // Positions on the ring (the layout's order: each node boundary crossed once).
  const RingOrder ring{args.layout, n};
  const int r = ring.positionOf(args.rank);
  const int next = ring.rankAt(r + 1), prev = ring.rankAt(r - 1);
  auto chunk = [&](int index) { return partOf(args.count, n, wrapRank(index, n)); };

  // Reduce-scatter: at step k send chunk r-k, receive chunk r-k-1 and fold in our part.
  int produced = -1;  // the step that last wrote the chunk we send next
  for (int k = 0; k < n - 1; ++k) {
    Part sent = chunk(r - k), got = chunk(r - k - 1);
    send(s, next, k == 0 ? in(sent.begin, sent.size) : out(sent.begin, sent.size), produced);
    produced = recvReduce(s, prev, in(got.begin, got.size), out(got.begin, got.size),
                          /*finalize=*/k == n - 2);
  }
  // All-gather: chunk r+1 is complete here; pass complete chunks around the ring.
  for (int k = 0; k < n - 1; ++k) {
    Part sent = chunk(r + 1 - k), got = chunk(r - k);
    send(s, next, out(sent.begin, sent.size), produced);
    produced = recv(s, prev, out(got.begin, got.size));
  }
  return s;
}

}  // namespace chorus
