// Direct all-to-all over one-sided reads: rank r reads block r of every peer's input in
// place. In place, output block j is the input block j that rank j is reading, and rank j
// overwrites the block we read only once we are done: so the blocks are read into
// scratch, every rank signals every peer that it is done, and only then are they copied
// into the output (out of place the schedule cannot tell, and does the same). Own block:
// copied locally (nothing in place).
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule peerDirectAllToAll(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t m = args.count;  // elements per block
  if (m == 0) return s;
  auto at = [&](int index) { return static_cast<size_t>(wrapRank(index, n)) * m; };
  copy(s, in(at(r), m), out(at(r), m));  // no-op in place
  if (n == 1) return s;
  s.scratchCount = static_cast<size_t>(n - 1) * m;
  for (int k = 1; k < n; ++k) expose(s, wrapRank(r + k, n), in(at(r + k), m));
  for (int k = 1; k < n; ++k) {
    const int peer = wrapRank(r - k, n);
    const int read = peerRead(s, peer, scratch(static_cast<size_t>(k - 1) * m, m));
    expose(s, peer, out(0, 0), read);  // done with its block
  }
  for (int k = 1; k < n; ++k) {
    const int peer = wrapRank(r - k, n);
    const int done = peerRead(s, peer, out(0, 0));  // it is done with our block `peer`
    copy(s, scratch(static_cast<size_t>(k - 1) * m, m), out(at(peer), m), false, done);
  }
  return s;
}

}  // namespace chorus
