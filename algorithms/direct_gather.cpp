// Direct gather: every rank sends its block straight to the root, which receives the
// n-1 blocks in rank order into their places (its own is copied, nothing when in place).
// The root receives (n-1)/n of the output; one step.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule directGather(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const size_t m = args.count;
  if (m == 0) return s;
  if (args.rank != args.root) {
    send(s, args.root, in(0, m));
    return s;
  }
  copy(s, in(0, m), out(static_cast<size_t>(args.root) * m, m));
  for (int r = 0; r < args.nranks; ++r)
    if (r != args.root) recv(s, r, out(static_cast<size_t>(r) * m, m));
  return s;
}

}  // namespace chorus
