// Staged two-shot all-reduce for buffers peers cannot reach (ordinary malloc memory):
// each rank copies its input, one round at a time, into its own scratch, which the engine
// lends from peer-mappable memory (Algorithm::staged), and the peers fold straight out of
// it. The scratch holds two rounds (slots) and is reused, so it stays in the cache: per
// byte that is one copy in (cache), one fold reading every source once and one read of
// the result, against the copy path's copies into and out of a FIFO at every hop.
//
// A round covers one chunk of every part. For rank r, round j (slot j % 2), each peer P:
//  1. copy chunk j of input part P into the slot's part P, expose it to P (the copy waits
//     until P's result of round j - 2 arrived: P has folded what the slot held).
//  2. fold chunk j of part r: slot part r = input part r + every peer's slot part r (read
//     in place; the fold waits until every peer said it is done with round j - 2's
//     result); copy it into output part r and expose it to every P.
//  3. read P's result of round j into output part P; tell P we are done with it; wait for
//     every P to be done with ours.
// The fold's wait in 2 is also implied by the per-peer order of in-place reads: round j's
// first fold reads from r - 1 after r - 1's "done" of round j - 1, which needs our round
// j - 1 fold, whose reads from every P came after P's "done" of round j - 2. The symbolic
// checker therefore proves the schedule without it (checked by hand); it stays explicit.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

#include <algorithm>
#include <vector>

namespace chorus {
namespace {
constexpr size_t kSlots = 2;
}  // namespace

Schedule peerStagedAllReduceChunked(const CollectiveArgs& args, size_t chunkElements) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  if (emptyOrSingleRank(s, n, args.count)) return s;
  // Every part is cut into the same number of chunks (rounds).
  const Rounds cut(args.count, n, chunkElements);
  const size_t rounds = cut.rounds;
  const size_t slotPart = cut.largestChunk();
  const size_t slots = std::min(kSlots, rounds);
  s.scratchCount = slots * static_cast<size_t>(n) * slotPart;
  auto chunkOf = [&](int index, size_t j) { return cut.chunkOf(index, j); };
  auto slotOf = [&](int index, size_t j, size_t size) {
    return scratch(
        ((j % slots) * static_cast<size_t>(n) + static_cast<size_t>(wrapRank(index, n))) * slotPart,
        size);
  };
  // Per round: the read of each peer's result (index by peer) and the last wait for the
  // peers to be done with ours; the slot's next round waits for them.
  std::vector<std::vector<int>> readOf(rounds, std::vector<int>(static_cast<size_t>(n), -1));
  std::vector<int> peersDone(rounds, -1);
  for (size_t j = 0; j < rounds; ++j) {
    const bool reuse = j >= slots;
    std::vector<int> copied(static_cast<size_t>(n), -1);
    for (int k = 1; k < n; ++k) {
      const int peer = wrapRank(r + k, n);
      const Part q = chunkOf(peer, j);
      const int waitFor = reuse ? readOf[j - slots][static_cast<size_t>(peer)] : -1;
      copied[static_cast<size_t>(peer)] =
          steps::copy(s, in(q.begin, q.size), slotOf(peer, j, q.size), false, waitFor);
      expose(s, peer, slotOf(peer, j, q.size), copied[static_cast<size_t>(peer)]);
    }
    const Part mine = chunkOf(r, j);
    const Range result = slotOf(r, j, mine.size);
    int folded = reuse ? peersDone[j - slots] : -1;
    for (int k = 1; k < n; ++k) {
      const Range local = k == 1 ? in(mine.begin, mine.size) : result;
      folded = peerReduce(s, wrapRank(r - k, n), local, result, /*finalize=*/k == n - 1, folded);
    }
    const int copiedOut = steps::copy(s, result, out(mine.begin, mine.size), false, folded);
    for (int k = 1; k < n; ++k) expose(s, wrapRank(r + k, n), result, folded);
    for (int k = 1; k < n; ++k) {
      const int peer = wrapRank(r - k, n);
      const Part q = chunkOf(peer, j);
      const int read = peerRead(s, peer, out(q.begin, q.size), copied[static_cast<size_t>(peer)]);
      readOf[j][static_cast<size_t>(peer)] = read;
      expose(s, peer, out(0, 0), read);  // done with P's result
    }
    int waited = copiedOut;  // our result is copied out and every peer is done with it
    for (int k = 1; k < n; ++k) waited = peerRead(s, wrapRank(r + k, n), out(0, 0), waited);
    peersDone[j] = waited;
  }
  return s;
}

Schedule peerStagedAllReduce(const CollectiveArgs& args) {
  return peerStagedAllReduceChunked(args, kStagedChunkElements);
}

}  // namespace chorus
