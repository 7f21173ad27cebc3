// One-shot all-reduce: every rank sends its whole buffer to every other rank and
// folds the n buffers in rank order 0, 1, ..., n-1, so every rank computes the same
// bits. One step of latency but n-1 times the bytes of the ring: for small messages.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule oneshotAllReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t count = args.count;
  if (count == 0) return s;
  // The sends are chained element by element, and the first fold waits for the last
  // send. Folding happens in scratch and only the final copy writes the output: in-place,
  // the output is the input, which is both sent and folded in.
  int sent = -1;
  for (int k = 1; k < n; ++k) sent = send(s, wrapRank(r + k, n), in(0, count), sent);
  int folded = r == 0 ? copy(s, in(0, count), scratch(0, count), n == 1, sent)
                      : recv(s, 0, scratch(0, count), sent);
  for (int p = 1; p < n; ++p) {
    const bool last = p == n - 1;
    folded = p == r ? reduce(s, in(0, count), scratch(0, count), last, folded)
                    : recvReduce(s, p, scratch(0, count), scratch(0, count), last, folded);
  }
  copy(s, scratch(0, count), out(0, count), false, folded);
  s.scratchCount = count;
  return s;
}

}  // namespace chorus
