// Hierarchical all-reduce over nodes of L ranks each (a uniform Layout):
//  1. intra-node ring reduce-scatter: local rank i ends with its node's sum of shard
//     q = (i + 1) mod L (the ring's shift), in the output;
//  2. inter-node all-reduce of shard q among the ranks with local index i on the N
//     nodes, all at once (split rail: every local rank, hence every NIC, carries 1/L);
//     the inter-node algorithm is ring, recursive doubling or halving-doubling (hier,
//     hier_rd, hier_rhd: the tuner picks, as for the flat ones);
//  3. intra-node ring all-gather of the shards.
// Phase 3 moves each shard in N pieces (the inter-node ring's chunks), each behind the
// phase-2 step that completes it, so it starts while phase 2 is still finishing.
// Per rank: 2 (L-1)/L of the buffer over intra-node links, 2 (N-1)/(N L) over the network
// (ring) in 2 (L-1) + 2 (N-1) steps. Without a layout, on one node, with one rank per node
// or with unequal nodes it is the flat ring all-reduce (or the inter algorithm alone).
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/steps.hpp"

#include <algorithm>

namespace chorus {
namespace {

// Appends `sub` (an all-reduce among `peers`, built for count elements) so that it runs
// in place on output elements [base, base + count): Input and Output map there, Scratch
// past `scratchBase`; its steps without a producer wait for `gate`. Returns, for each of
// `pieces` (offsets relative to base), the last appended step that writes it.
std::vector<int> appendInPlace(Schedule& s, const Schedule& sub, const std::vector<int>& peers,
                               size_t base, size_t scratchBase, int gate,
                               const std::vector<Part>& pieces) {
  const int first = static_cast<int>(s.steps.size());
  std::vector<int> lastWriter(pieces.size(), gate);
  for (Step step : sub.steps) {
    for (Range* range : {&step.src, &step.dst}) {
      if (range->count == 0 && range->buffer == Buffer::Input && range->offset == 0) continue;
      range->offset += range->buffer == Buffer::Scratch ? scratchBase : base;
      if (range->buffer == Buffer::Input) range->buffer = Buffer::Output;
    }
    if (step.peer >= 0) step.peer = peers[step.peer];
    step.after = step.after >= 0 ? step.after + first : gate;
    s.steps.push_back(step);
    const int index = static_cast<int>(s.steps.size()) - 1;
    if (step.kind == StepKind::Send || step.dst.count == 0) continue;
    for (size_t j = 0; j < pieces.size(); ++j) {
      const size_t lo = base + pieces[j].begin, hi = lo + pieces[j].size;
      if (step.dst.offset < hi && lo < step.dst.offset + step.dst.count) lastWriter[j] = index;
    }
  }
  s.scratchCount = std::max(s.scratchCount, scratchBase + sub.scratchCount);
  return lastWriter;
}

template <ScheduleBuilder inter>
Schedule hierAllReduce(const CollectiveArgs& args) {
  using namespace steps;
  const Layout* layout = hierarchicalLayout(args.layout, args.nranks);
  if (!layout) return ringAllReduce(args);
  const int L = layout->uniformLocalSize(), N = layout->nodes();
  const int r = args.rank, i = layout->localIndex(r), node = layout->nodeOf(r);
  std::vector<int> rail;  // the ranks with local index i, one per node
  for (int n = 0; n < N; ++n) rail.push_back(layout->ranksOf(n)[i]);
  if (L == 1) {
    CollectiveArgs sub = args;
    sub.rank = node, sub.nranks = N, sub.layout = nullptr;
    Schedule s = inter(sub);
    for (Step& step : s.steps)
      if (step.peer >= 0) step.peer = rail[step.peer];
    return s;
  }

  Schedule s;
  if (args.count == 0) return s;
  const auto& local = layout->ranksOf(node);
  const int next = local[(i + 1) % L], prev = local[(i + L - 1) % L];
  auto shard = [&](int index) { return partOf(args.count, L, wrapRank(index, L)); };
  auto piecesOf = [&](Part p) {  // the inter-node ring's chunks of a shard
    std::vector<Part> pieces;
    for (int j = 0; j < N; ++j) pieces.push_back(partOf(p.size, N, j));
    return pieces;
  };

  // 1. Intra-node reduce-scatter (the first half of the ring all-reduce, over L ranks).
  int produced = -1;
  for (int k = 0; k < L - 1; ++k) {
    Part sent = shard(i - k), got = shard(i - k - 1);
    send(s, next, k == 0 ? in(sent.begin, sent.size) : out(sent.begin, sent.size), produced);
    produced = recvReduce(s, prev, in(got.begin, got.size), out(got.begin, got.size), false);
  }

  // 2. Inter-node all-reduce of shard q, in place in the output.
  const Part q = shard(i + 1);
  CollectiveArgs sub{Collective::AllReduce, node, N, q.size, 0, nullptr};
  std::vector<int> lastWriter =
      appendInPlace(s, inter(sub), rail, q.begin, 0, produced, piecesOf(q));

  // 3. Intra-node all-gather, shard by shard around the ring, each in N pieces.
  std::vector<int> ready = lastWriter;  // per piece of the shard sent next
  for (int k = 0; k < L - 1; ++k) {
    Part sent = shard(i + 1 - k), got = shard(i - k);
    std::vector<Part> out1 = piecesOf(sent), in1 = piecesOf(got);
    for (size_t j = 0; j < out1.size(); ++j)
      if (out1[j].size) send(s, next, out(sent.begin + out1[j].begin, out1[j].size), ready[j]);
    for (size_t j = 0; j < in1.size(); ++j) {
      // (In place, shard i arriving at k = 0 overwrites what phase 1 sent first; no gate
      // is needed: its final value cannot exist before that send has read our part.)
      ready[j] = in1[j].size ? recv(s, prev, out(got.begin + in1[j].begin, in1[j].size)) : -1;
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
