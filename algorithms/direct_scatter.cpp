// Direct scatter: the root sends block r straight to rank r (its own block is copied,
// nothing when in place); every other rank receives one block. One step.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule directScatter(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const size_t m = args.count;
  if (m == 0) return s;
  if (args.rank != args.root) {
    recv(s, args.root, out(0, m));
    return s;
  }
  for (int r = 0; r < args.nranks; ++r)
    if (r != args.root) send(s, r, in(static_cast<size_t>(r) * m, m));
  copy(s, in(static_cast<size_t>(args.root) * m, m), out(0, m));
  return s;
}

}  // namespace chorus
