// Bruck all-gather, any p: ceil(log2 p) steps. At step k (d = 2^k) a rank sends the
// c = min(d, p - d) blocks it holds, r .. r+c-1 (mod p), to rank r - d and receives blocks
// r+d .. r+d+c-1 from rank r + d. Each rank sends and receives (p-1)/p of the output.
//
// The classic version gathers in rotated order in a scratch buffer and rotates into the
// output at the end; here blocks go straight to their place in the output instead: a
// range that wraps past block p-1 is sent as two messages (blocks up to p-1, then from
// 0), and since sender and receiver move the same blocks they cut at the same place. No
// scratch and no extra memory pass, at the price of at most one more message per step.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

#include <algorithm>
#include <vector>

namespace chorus {

Schedule bruckAllGather(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t m = args.count;  // elements per rank
  if (m == 0) return s;
  // Blocks [first, first + c) mod n as at most two output ranges.
  auto pieces = [&](int first, int c) {
    std::vector<Range> parts;
    int head = std::min(c, n - first);
    parts.push_back(out(static_cast<size_t>(first) * m, static_cast<size_t>(head) * m));
    if (head < c) parts.push_back(out(0, static_cast<size_t>(c - head) * m));
    return parts;
  };
  // A step that waits for `after` to finish entirely: a copy of the whole output onto
  // itself (no memory traffic), longer than any receive, so never pipelined behind it.
  auto barrier = [&](int after) { return copy(s, out(0, m * n), out(0, m * n), false, after); };

  int last = copy(s, in(0, m), out(static_cast<size_t>(r) * m, m));  // no-op when in-place
  for (int d = 1; d < n; d *= 2) {
    const int c = std::min(d, n - d);
    const int to = wrapRank(r - d, n), from = wrapRank(r + d, n);
    if (d == 1) {
      send(s, to, in(0, m));
    } else {
      // The blocks sent came from the copy and every receive so far. The receives are
      // chained, so the last one finishing implies all have; the barrier makes the
      // sends wait for that (a send as long as the last receive would otherwise be
      // pipelined behind it element by element, though it reads other blocks).
      const int ready = barrier(last);
      for (const Range& range : pieces(r, c)) send(s, to, range, ready);
    }
    for (const Range& range : pieces(from, c)) last = recv(s, from, range, last);
  }
  return s;
}

}  // namespace chorus
