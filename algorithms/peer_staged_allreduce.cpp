// Staged two-shot all-reduce for buffers peers cannot reach (ordinary malloc memory):
// each rank copies its input, chunk by chunk, into its own scratch, which the engine lends
// from peer-mappable memory (Algorithm::staged), and the peers fold straight out of it.
// Per byte that is one copy in, one fold reading every source once, and one read of the
// result, against the copy path's copies into and out of a transport's FIFO at every hop.
//
// Phases, for rank r, each peer P and each chunk c of a part (chunks pipeline: a peer folds
// chunk c while this rank still copies chunk c + 1):
//  1. copy chunk c of input part P into scratch part P, then expose it to P.
//  2. fold chunk c of part r: scratch part r = input part r + every peer's scratch part r
//     (read in place); copy it into output part r and expose it to every P.
//  3. read chunk c of output part P from P's scratch part P into our output part P.
//  4. signal P that we are done with its scratch, and wait for the same signal from P
//     before finishing (the engine reuses the scratch for the next call).
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

#include <vector>

namespace chorus {

Schedule peerStagedAllReduceChunked(const CollectiveArgs& args, size_t chunkElements) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  if (emptyOrSingleRank(s, n, args.count)) return s;
  s.scratchCount = args.count;
  auto part = [&](int index) { return partOf(args.count, n, wrapRank(index, n)); };
  const Part mine = part(r);
  // Every part is cut into the same number of chunks, so that chunk c of every part is
  // ready at about the same time.
  const size_t largest = partOf(args.count, n, 0).size;
  const size_t chunks = std::max<size_t>(1, (largest + chunkElements - 1) / chunkElements);
  auto chunkOf = [&](const Part& p, size_t c) {
    const Part q = partOf(p.size, static_cast<int>(chunks), static_cast<int>(c));
    return Part{p.begin + q.begin, q.size};
  };
  // The copy of each peer's chunk (phase 1): the read into the output waits for it in place.
  std::vector<int> copied(static_cast<size_t>(n) * chunks, -1);
  for (size_t c = 0; c < chunks; ++c)
    for (int k = 1; k < n; ++k) {
      const int peer = wrapRank(r + k, n);
      const Part q = chunkOf(part(peer), c);
      const int copy = steps::copy(s, in(q.begin, q.size), scratch(q.begin, q.size));
      copied[static_cast<size_t>(peer) * chunks + c] = copy;
      expose(s, peer, scratch(q.begin, q.size), copy);
    }
  for (size_t c = 0; c < chunks; ++c) {
    const Part q = chunkOf(mine, c);
    int folded = -1;
    for (int k = 1; k < n; ++k) {
      const Range local = k == 1 ? in(q.begin, q.size) : scratch(q.begin, q.size);
      folded = peerReduce(s, wrapRank(r - k, n), local, scratch(q.begin, q.size),
                          /*finalize=*/k == n - 1, folded);
    }
    steps::copy(s, scratch(q.begin, q.size), out(q.begin, q.size), false, folded);
    for (int k = 1; k < n; ++k) expose(s, wrapRank(r + k, n), scratch(q.begin, q.size), folded);
  }
  for (int k = 1; k < n; ++k) {
    const int peer = wrapRank(r - k, n);
    int read = -1;
    for (size_t c = 0; c < chunks; ++c) {
      const Part q = chunkOf(part(peer), c);
      read = peerRead(s, peer, out(q.begin, q.size), copied[static_cast<size_t>(peer) * chunks + c]);
    }
    expose(s, peer, out(0, 0), read);  // done with P's scratch
  }
  for (int k = 1; k < n; ++k) peerRead(s, wrapRank(r + k, n), out(0, 0));  // P is done with ours
  return s;
}

Schedule peerStagedAllReduce(const CollectiveArgs& args) {
  return peerStagedAllReduceChunked(args, kStagedChunkElements);
}

}  // namespace chorus
