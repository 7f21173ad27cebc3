// The standard way to run a power-of-two algorithm on any p: with p' the largest power of
// two <= p and e = p - p', the first 2e ranks pair up; each odd one (an "extra" rank)
// hands its data to its even partner before and takes the result back after, and the p'
// remaining ranks run the algorithm as virtual ranks 0..p'-1.
#pragma once

namespace chorus {

struct Pof2Fold {
  int pof2;      // p'
  int extra;     // e = p - p'
  bool paired;   // one of the first 2e ranks
  bool sitsOut;  // an odd paired rank: only hands over and takes back
  int vrank;     // virtual rank among the p' (meaningless when sitsOut)

  static Pof2Fold of(int rank, int nranks) {
    int pof2 = 1;
    while (pof2 * 2 <= nranks) pof2 *= 2;
    const int extra = nranks - pof2;
    const bool paired = rank < 2 * extra;
    return {pof2, extra, paired, paired && rank % 2 == 1, paired ? rank / 2 : rank - extra};
  }
  // The real rank behind virtual rank v.
  int realRank(int v) const { return v < extra ? 2 * v : v + extra; }
};

}  // namespace chorus
