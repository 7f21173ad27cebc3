// Recursive halving-doubling all-reduce (Rabenseifner): a recursive-halving
// reduce-scatter over p' blocks (at each of log2(p') steps a rank sends the half of its
// current range its partner keeps and folds in the half it keeps), then a
// recursive-doubling all-gather that reverses it. 2 log2(p') steps; each rank sends and
// receives about 2 (p'-1)/p' of the vector: the ring's volume in logarithmic steps.
//
// Non-power-of-two p: the same fold as rd (the first 2(p - p') ranks pair up, the odd one
// sends its input to its even partner first and receives the result at the end: + count
// elements each way, 2 more steps).
//
// Bit-identical on every rank: every element is reduced by exactly one rank (the owner
// of its block) and then only copied, so all ranks get the owner's bits.
#include "algorithms/algorithms.hpp"
#include "algorithms/pof2_fold.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule rhdAllReduce(const CollectiveArgs& args) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  const size_t count = args.count;
  if (emptyOrSingleRank(s, n, count)) return s;
  const Pof2Fold fold = Pof2Fold::of(r, n);
  const int pof2 = fold.pof2;
  const bool folded = fold.paired;
  if (fold.sitsOut) {  // extra rank: hand over the input, get the result back
    handOver(s, r - 1, in(0, count), out(0, count));
    return s;
  }
  const int vrank = fold.vrank;
  // Elements of blocks [first, first + blocks) of the p' nearly equal blocks.
  auto blocks = [&](int first, int blocks) {
    Part a = partOf(count, pof2, first), b = partOf(count, pof2, first + blocks - 1);
    return Part{a.begin, b.begin + b.size - a.begin};
  };

  // `last` is the latest step that wrote something (empty steps complete at once in the
  // engine, so they cannot order anything). A step waits for it; when both cover the
  // same number of elements they are the same elements (the other half is empty), so
  // pipelining is safe; otherwise the engine waits for it to finish, which implies the
  // whole chain before it has finished.
  int last = -1;
  bool inOutput = false;  // the partial sums live in the output (else: still the input)
  auto track = [&](int step, size_t size) {
    if (size > 0) last = step;
  };
  if (folded) {
    track(recvReduce(s, r + 1, in(0, count), out(0, count), false), count);
    inOutput = true;
  }
  // Reduce-scatter: keep the half of [lo, lo + 2 mask) that holds our block.
  int lo = 0;
  for (int mask = pof2 / 2; mask >= 1; mask >>= 1) {
    const int peer = fold.realRank(vrank ^ mask);
    const bool lower = (vrank & mask) == 0;
    const Part keep = blocks(lower ? lo : lo + mask, mask);
    const Part give = blocks(lower ? lo + mask : lo, mask);
    auto at = [&](Part p) { return inOutput ? out(p.begin, p.size) : in(p.begin, p.size); };
    const int before = last;
    send(s, peer, at(give), before);
    track(recvReduce(s, peer, at(keep), out(keep.begin, keep.size), /*finalize=*/mask == 1, before),
          keep.size);
    inOutput = true;
    if (!lower) lo += mask;
  }
  // All-gather: swap the finished groups of mask blocks. The receives overwrite what the
  // reduce-scatter sent to the same peer, which that peer had consumed before it could
  // finish its own block and send anything back.
  for (int mask = 1; mask < pof2; mask <<= 1) {
    const int peer = fold.realRank(vrank ^ mask);
    const Part mine = blocks(vrank & ~(mask - 1), mask);
    const Part theirs = blocks((vrank ^ mask) & ~(mask - 1), mask);
    const int before = last;
    send(s, peer, out(mine.begin, mine.size), before);
    track(recv(s, peer, out(theirs.begin, theirs.size), before), theirs.size);
  }
  if (folded) send(s, r + 1, out(0, count), last);
  return s;
}

}  // namespace chorus
