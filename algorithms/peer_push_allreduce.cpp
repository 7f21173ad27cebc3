// Two-shot all-reduce over one-sided writes (buffers the transport can expose): rank r
// folds part r of every rank's input straight out of the peers' memory into its own
// output, as peer_twoshot does, then writes each chunk it folded into every peer's output
// itself, while the chunk is still in cache, instead of each peer reading the part back
// from memory. Per rank and call the same bytes move, with one pass over memory fewer:
// peer_twoshot's read-back reads n-1 parts from memory (and writes them), here the n-1
// copies of one's own part are read from cache.
//
// A round covers one chunk of every part (all parts cut into the same number of rounds,
// kChunkElements at most, so that a chunk stays in cache between its fold and its
// writes). For rank r and each peer P:
//  1. expose, round by round, input chunk j of part P (P folds it) and output chunk j of
//     part P (P writes its result there).
//  2. round j: fold chunk j of part r from every input into the output, then write it
//     into every P's output. (The peer's steps run in order: P's next fold from us waits
//     for our write to P, which keeps the rounds apart.)
//  3. once all written, signal P: its part r is there and its input is no longer read;
//     finish once every P has signalled the same (only then is the output whole, and only
//     then may this rank's input change).
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

#include <algorithm>
#include <vector>

namespace chorus {
namespace {
// 256 Ki elements (1 MiB of float), as peer_staged's chunks: the fold's destination and
// its sources' lines stay in the 2 MiB L2 until the writes read it.
constexpr size_t kChunkElements = size_t{256} << 10;
}  // namespace

Schedule peerPushAllReduceChunked(const CollectiveArgs& args, size_t chunkElements) {
  using namespace steps;
  Schedule s;
  const int n = args.nranks, r = args.rank;
  if (emptyOrSingleRank(s, n, args.count)) return s;
  const Rounds cut(args.count, n, chunkElements);
  const size_t rounds = cut.rounds;
  auto chunkOf = [&](int index, size_t j) { return cut.chunkOf(index, j); };
  for (int k = 1; k < n; ++k) {
    const int peer = wrapRank(r + k, n);
    for (size_t j = 0; j < rounds; ++j) {
      const Part q = chunkOf(peer, j);
      expose(s, peer, in(q.begin, q.size));
      expose(s, peer, out(q.begin, q.size));
    }
  }
  std::vector<int> lastWrite(static_cast<size_t>(n), -1);
  for (size_t j = 0; j < rounds; ++j) {
    const Part mine = chunkOf(r, j);
    int folded = -1;
    for (int k = 1; k < n; ++k) {
      const Range local = k == 1 ? in(mine.begin, mine.size) : out(mine.begin, mine.size);
      folded = peerReduce(s, wrapRank(r - k, n), local, out(mine.begin, mine.size),
                          /*finalize=*/k == n - 1, folded);
    }
    for (int k = 1; k < n; ++k) {
      const int peer = wrapRank(r - k, n);
      lastWrite[static_cast<size_t>(peer)] = peerWrite(s, peer, out(mine.begin, mine.size), folded);
    }
  }
  for (int k = 1; k < n; ++k) {  // written, and done with P's input
    const int peer = wrapRank(r - k, n);
    expose(s, peer, out(0, 0), lastWrite[static_cast<size_t>(peer)]);
  }
  for (int k = 1; k < n; ++k) peerRead(s, wrapRank(r + k, n), out(0, 0));  // P is done with ours
  return s;
}

Schedule peerPushAllReduce(const CollectiveArgs& args) {
  return peerPushAllReduceChunked(args, kChunkElements);
}

}  // namespace chorus
