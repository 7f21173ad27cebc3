// Hierarchical all-reduce over nodes of L ranks each (a uniform Layout):
//  1. intra-node ring reduce-scatter: local rank i ends with its node's sum of shard
//     q = (i + 1) mod L (the ring's shift), in the output;
//  2. inter-node all-reduce of shard q among the ranks with local index i on the N
//     nodes, all at once (split rail: every local rank, hence every NIC, carries 1/L);
//     the inter-node algorithm is ring, recursive doubling or halving-doubling (hier,
//     hier_rd, hier_rhd: the tuner picks, as for the flat ones);
//  3. intra-node ring all-gather of the shards.
// Phase 3 moves each shard in pieces (the inter-node ring's chunks, in the order phase 2
// completes them, neighbours completed together merged), each behind the phase-2 step
// that completes it, so it starts while phase 2 is still finishing.
// Per rank: 2 (L-1)/L of the buffer over intra-node links, 2 (N-1)/(N L) over the network
// (ring) in 2 (L-1) + 2 (N-1) steps. Without a layout, on one node, with one rank per node
// or with unequal nodes it is the flat ring all-reduce (or the inter algorithm alone).
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/steps.hpp"

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>

namespace chorus {
namespace {

// Appends `sub` (an all-reduce among `peers`, built for count elements) so that it runs
// in place on output elements [base, base + count): Input and Output map there, Scratch
// past `scratchBase`; its steps without a producer wait for `gate`. Returns the index of
// its first step in `s`.
template <typename PeerMap>
int appendInPlace(Schedule& s, const Schedule& sub, const PeerMap& peers, size_t base,
                  size_t scratchBase, int gate) {
  const int first = static_cast<int>(s.steps.size());
  for (Step step : sub.steps) {
    for (Range* range : {&step.src, &step.dst}) {
      if (range->count == 0 && range->buffer == Buffer::Input && range->offset == 0) continue;
      range->offset += range->buffer == Buffer::Scratch ? scratchBase : base;
      if (range->buffer == Buffer::Input) range->buffer = Buffer::Output;
    }
    if (step.peer >= 0) step.peer = peers(step.peer);
    step.after = step.after >= 0 ? step.after + first : gate;
    s.steps.push_back(step);
  }
  s.scratchCount = std::max(s.scratchCount, scratchBase + sub.scratchCount);
  return first;
}

// A shard's pieces for phase 3, in the order the inter-node all-reduce completes them:
// the inter-node ring's chunks (partOf(size, N, j)), sorted by the step of `sub` that last
// writes them (-1: none, ties in memory order), and neighbours completed by the same step
// merged into one (rd completes the whole shard at once: one piece). A node's order
// depends on its place among the nodes only through that place: shifted by a node, the
// pieces are the same ones shifted, so every node runs the same phase 3 (what compressed
// replay needs). O(steps log steps), not O(N): runs of chunks are painted at once.
struct Piece {
  Part part;   // relative to the shard
  int writer;  // the step of `sub` that completes it, -1 when none does
};
std::vector<Piece> completionOrder(const Schedule& sub, size_t size, int N) {
  const size_t base = size / N, extra = size % N, wide = extra * (base + 1);
  auto chunkOf = [&](size_t element) {  // the chunk holding an element (< size)
    return element < wide ? element / (base + 1) : extra + (element - wide) / base;
  };
  // Last writer by runs of chunks: run start -> writer, up to the next start.
  std::map<size_t, int> runs{{0, -1}, {size_t(N), -1}};
  auto split = [&](size_t at) {
    auto it = runs.lower_bound(at);
    return it->first == at ? it : runs.emplace_hint(it, at, std::prev(it)->second);
  };
  for (size_t k = 0; k < sub.steps.size(); ++k) {
    const Step& step = sub.steps[k];
    const bool writesShard = step.dst.buffer == Buffer::Output || step.dst.buffer == Buffer::Input;
    if (step.kind == StepKind::Send || step.dst.count == 0 || !writesShard) continue;
    const size_t lo = chunkOf(step.dst.offset),
                 hi = chunkOf(step.dst.offset + step.dst.count - 1) + 1;
    auto last = split(hi), first = split(lo);
    runs.erase(first, last);
    runs.emplace(lo, static_cast<int>(k));
  }
  std::vector<Piece> pieces;
  for (auto it = runs.begin(); std::next(it) != runs.end(); ++it) {
    const Part a = partOf(size, N, static_cast<int>(it->first));
    const Part z = partOf(size, N, static_cast<int>(std::next(it)->first - 1));
    if (z.begin + z.size > a.begin)
      pieces.push_back({{a.begin, z.begin + z.size - a.begin}, it->second});
  }
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const Piece& a, const Piece& b) { return a.writer < b.writer; });
  std::vector<Piece> merged;
  for (const Piece& p : pieces) {
    if (!merged.empty() && merged.back().writer == p.writer &&
        merged.back().part.begin + merged.back().part.size == p.part.begin)
      merged.back().part.size += p.part.size;
    else
      merged.push_back(p);
  }
  return merged;
}

template <ScheduleBuilder inter>
Schedule hierAllReduce(const CollectiveArgs& args) {
  using namespace steps;
  const Layout* layout = hierarchicalLayout(args.layout, args.nranks);
  if (!layout) return ringAllReduce(args);
  const int L = layout->uniformLocalSize(), N = layout->nodes();
  const int r = args.rank, i = layout->localIndex(r), node = layout->nodeOf(r);
  // The ranks with local index i, one per node (looked up, not listed: O(1) a peer).
  auto rail = [&](int n) { return layout->ranksOf(n)[i]; };
  if (L == 1) {
    CollectiveArgs sub = args;
    sub.rank = node, sub.nranks = N, sub.layout = nullptr;
    Schedule s = inter(sub);
    for (Step& step : s.steps)
      if (step.peer >= 0) step.peer = rail(step.peer);
    return s;
  }

  Schedule s;
  if (args.count == 0) return s;
  const auto& local = layout->ranksOf(node);
  const int next = local[(i + 1) % L], prev = local[(i + L - 1) % L];
  auto shard = [&](int index) { return partOf(args.count, L, wrapRank(index, L)); };

  // 1. Intra-node reduce-scatter (the first half of the ring all-reduce, over L ranks).
  int produced = -1;
  for (int k = 0; k < L - 1; ++k) {
    Part sent = shard(i - k), got = shard(i - k - 1);
    send(s, next, k == 0 ? in(sent.begin, sent.size) : out(sent.begin, sent.size), produced);
    produced = recvReduce(s, prev, in(got.begin, got.size), out(got.begin, got.size), false);
  }

  // 2. Inter-node all-reduce of shard q, in place in the output. Every shard's pieces
  // (this node's completion order) from the inter-node schedule of its size (shards
  // differ by at most one element: two sizes at most).
  const Part q = shard(i + 1);
  const Schedule own = inter(CollectiveArgs{Collective::AllReduce, node, N, q.size, 0, nullptr});
  std::deque<std::pair<size_t, std::vector<Piece>>> orders{
      {q.size, completionOrder(own, q.size, N)}};
  auto piecesOf = [&](size_t size) -> const std::vector<Piece>& {
    for (const auto& [known, pieces] : orders)
      if (known == size) return pieces;
    const CollectiveArgs sub{Collective::AllReduce, node, N, size, 0, nullptr};
    return orders.emplace_back(size, completionOrder(inter(sub), size, N)).second;
  };
  const int first = appendInPlace(s, own, rail, q.begin, 0, produced);

  // 3. Intra-node all-gather, shard by shard around the ring, each in its pieces, each
  // piece sent once it is complete.
  std::vector<int> ready;  // per piece of the shard sent next
  for (const Piece& p : piecesOf(q.size))
    ready.push_back(p.writer >= 0 ? first + p.writer : produced);
  for (int k = 0; k < L - 1; ++k) {
    Part sent = shard(i + 1 - k), got = shard(i - k);
    const std::vector<Piece>& out1 = piecesOf(sent.size);
    for (size_t j = 0; j < out1.size(); ++j)
      send(s, next, out(sent.begin + out1[j].part.begin, out1[j].part.size), ready[j]);
    const std::vector<Piece>& in1 = piecesOf(got.size);
    ready.resize(in1.size());
    for (size_t j = 0; j < in1.size(); ++j) {
      // (In place, shard i arriving at k = 0 overwrites what phase 1 sent first; no gate
      // is needed: its final value cannot exist before that send has read our part.)
      ready[j] = recv(s, prev, out(got.begin + in1[j].part.begin, in1[j].part.size));
    }
  }
  return s;
}

}  // namespace

Schedule hierRingAllReduce(const CollectiveArgs& args) {
  return hierAllReduce<ringAllReduce>(args);
}
Schedule hierRdAllReduce(const CollectiveArgs& args) { return hierAllReduce<rdAllReduce>(args); }
Schedule hierRhdAllReduce(const CollectiveArgs& args) { return hierAllReduce<rhdAllReduce>(args); }

}  // namespace chorus
