// Recursive-doubling all-reduce: log2(p) steps; at each step a rank swaps its whole
// partial vector with the rank whose (virtual) rank differs in one bit and folds it in.
// Each rank sends and receives count * log2(p) elements: for small messages.
//
// Non-power-of-two p (p' = largest power of two below p, e = p - p'): the first 2e ranks
// pair up; the odd one sends its input to its even partner first (which folds it in) and
// receives the result at the end, so the extras take 2 steps and their partners
// log2(p') + 2.
//
// Bit-identical on every rank: at the step over bit k both partners combine the same two
// partials (their groups of 2^k ranks), one as a OP b and the other as b OP a, which is
// the same bits because sum/prod/min/max are commutative in IEEE arithmetic; by induction
// every rank holds the same bits for the same group, so the reduction tree is the same
// for every rank and every element.
#include "algorithms/algorithms.hpp"
#include "algorithms/pof2_fold.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule rdAllReduce(const CollectiveArgs& args) {
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

  // Every step covers the whole vector, so each one pipelines behind the one before:
  // a send behind the fold that produced its data, a fold behind the send that still
  // reads the memory it overwrites (a guard: in place, and from the second step on, where
  // the output is the accumulator; the first fold out of place writes the output while
  // its send reads the input, so it need not wait, and its rendezvous may clear to send).
  int last = -1;  // the step that last wrote the output; -1: the data is still the input
  if (folded) last = recvReduce(s, r + 1, in(0, count), out(0, count), /*finalize=*/false);
  for (int mask = 1; mask < pof2; mask <<= 1) {
    const int peer = fold.realRank(vrank ^ mask);
    const Range mine = last < 0 ? in(0, count) : out(0, count);
    int sent = send(s, peer, mine, last);
    last =
        guarded(s, recvReduce(s, peer, mine, out(0, count), /*finalize=*/mask * 2 == pof2, sent));
  }
  if (folded) send(s, r + 1, out(0, count), last);
  return s;
}

}  // namespace chorus
