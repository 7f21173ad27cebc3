// Recursive-halving reduce-scatter: log2(p') steps; at each a rank sends the half of its
// current range of blocks that its partner keeps and folds the half it keeps into its
// partial sums. Each rank sends (p-1)/p of the input (count * p elements), at any p;
// a paired odd rank (below) sends all of it.
//
// Any p: with p' the largest power of two below p, the first 2(p - p') ranks pair up;
// the odd one sends its whole input to its even partner (which folds it in) and receives
// its block at the end. The p' remaining ranks halve over p' "virtual blocks": a paired
// even rank's virtual block is its own block and its partner's (2 count elements), the
// others' is their own block (count elements), so halves are uneven in general.
// Partial sums live in scratch (at most the whole input for a paired rank, about half of
// it otherwise); the input is never written, the output only with the final result.
#include "algorithms/algorithms.hpp"
#include "algorithms/pof2_fold.hpp"
#include "algorithms/steps.hpp"

#include <algorithm>

namespace chorus {

Schedule rhReduceScatter(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t m = args.count, total = m * static_cast<size_t>(n);
  if (emptyOrSingleRank(s, n, m)) return s;
  const Pof2Fold fold = Pof2Fold::of(r, n);
  const int pof2 = fold.pof2;
  const bool folded = fold.paired;
  if (fold.sitsOut) {  // extra rank: hand over the input, get our block back
    handOver(s, r - 1, in(0, total), out(0, m));
    return s;
  }
  const int vrank = fold.vrank;
  // Element offset of virtual block v (its real blocks are contiguous).
  auto start = [&](int v) { return m * static_cast<size_t>(fold.realRank(v)); };
  auto blocks = [&](int first, int count) {
    return Part{start(first), start(first + count) - start(first)};
  };

  // Every range below is non-empty (m > 0) and each step's range is a strict part of the
  // previous one's, so each step waits for the previous fold to finish.
  int last = -1;
  size_t base = 0;  // scratch holds element e at e - base
  bool inScratch = false;
  if (folded) {
    last = recvReduce(s, r + 1, in(0, total), scratch(0, total), /*finalize=*/false);
    inScratch = true;
    s.scratchCount = total;
  } else {
    base = blocks((vrank & (pof2 / 2)) == 0 ? 0 : pof2 / 2, pof2 / 2).begin;
  }
  auto at = [&](Part p) {
    return inScratch ? scratch(p.begin - base, p.size) : in(p.begin, p.size);
  };
  int lo = 0;
  for (int mask = pof2 / 2; mask >= 1; mask >>= 1) {
    const int peer = fold.realRank(vrank ^ mask);
    const bool lower = (vrank & mask) == 0;
    const Part keep = blocks(lower ? lo : lo + mask, mask);
    const Part give = blocks(lower ? lo + mask : lo, mask);
    send(s, peer, at(give), last);
    const bool final = mask == 1;
    Range dst = final && !folded ? out(0, m) : scratch(keep.begin - base, keep.size);
    if (dst.buffer == Buffer::Scratch)
      s.scratchCount = std::max(s.scratchCount, dst.offset + dst.count);
    last = recvReduce(s, peer, at(keep), dst, /*finalize=*/final, last);
    inScratch = true;
    if (!lower) lo += mask;
  }
  if (folded) {  // our virtual block is our block and the partner's
    copy(s, scratch(static_cast<size_t>(r) * m - base, m), out(0, m), false, last);
    send(s, r + 1, scratch(static_cast<size_t>(r + 1) * m - base, m), last);
  }
  return s;
}

}  // namespace chorus
