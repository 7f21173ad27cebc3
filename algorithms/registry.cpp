// The table of algorithms. Adding one = one file + one line here.
#include "algorithms/algorithms.hpp"

#include <array>
#include <vector>

namespace chorus {

namespace {
constexpr size_t kOneshotBytes = 64 << 10;  // bytes x nranks
constexpr size_t kRecursiveDoublingBytes = 16 << 10;
constexpr size_t kRabenseifnerBytes = 256 << 10;
constexpr std::array kAlgorithms = {
    Algorithm{"ring", Collective::AllReduce, ringAllReduce,
              "ring reduce-scatter then ring all-gather, pipelined"},
    Algorithm{"oneshot", Collective::AllReduce, oneshotAllReduce,
              "one step: every rank sends everything to everyone, folded in rank order"},
    Algorithm{"twoshot", Collective::AllReduce, twoshotAllReduce,
              "direct reduce-scatter then direct all-gather: ring volume in two steps"},
    Algorithm{"rd", Collective::AllReduce, rdAllReduce,
              "recursive doubling: log2 n steps of the whole vector, for small messages"},
    Algorithm{"rhd", Collective::AllReduce, rhdAllReduce,
              "recursive halving reduce-scatter then recursive doubling all-gather"},
    Algorithm{"hier", Collective::AllReduce, hierRingAllReduce,
              "intra-node reduce-scatter, inter-node ring per shard, intra-node all-gather"},
    Algorithm{"hier_rd", Collective::AllReduce, hierRdAllReduce,
              "as hier, with recursive doubling between nodes"},
    Algorithm{"hier_rhd", Collective::AllReduce, hierRhdAllReduce,
              "as hier, with recursive halving-doubling between nodes"},
    Algorithm{"peer_oneshot", Collective::AllReduce, peerOneshotAllReduce,
              "one-sided: every rank folds all inputs read in place from the peers", true},
    Algorithm{"peer_twoshot", Collective::AllReduce, peerTwoshotAllReduce,
              "one-sided: fold part r of all inputs in place, then read the other parts", true},
    Algorithm{"peer_push", Collective::AllReduce, peerPushAllReduce,
              "one-sided: fold part r of all inputs in place, then write it into every peer", true},
    Algorithm{"peer_ring", Collective::AllReduce, peerRingAllReduce,
              "one-sided ring: fold each chunk from the neighbour in place, then gather back",
              true},
    Algorithm{"peer_staged", Collective::AllReduce, peerStagedAllReduce,
              "one-sided for any buffers: copy the input into peer-mappable scratch in chunks, "
              "fold part r from the peers' scratch, read the other parts",
              true, true},
    Algorithm{"ring", Collective::AllGather, ringAllGather, "ring, n-1 steps"},
    Algorithm{"rd", Collective::AllGather, rdAllGather,
              "recursive doubling, log2 n steps (Bruck when n is not a power of two)"},
    Algorithm{"bruck", Collective::AllGather, bruckAllGather, "Bruck, ceil(log2 n) steps, any n"},
    Algorithm{"peer_ring", Collective::AllGather, peerRingAllGather,
              "one-sided ring: read each block from the neighbour's memory, n-1 steps", true},
    Algorithm{"hier", Collective::AllGather, hierAllGather,
              "ring along each rail between nodes, then ring of whole rails within the node"},
    Algorithm{"ring", Collective::ReduceScatter, ringReduceScatter, "ring, n-1 steps"},
    Algorithm{"rhd", Collective::ReduceScatter, rhReduceScatter,
              "recursive halving, log2 n steps (+2 when n is not a power of two)"},
    Algorithm{"peer_direct", Collective::ReduceScatter, peerDirectReduceScatter,
              "one-sided: fold block r of every input read in place, one pass", true},
    Algorithm{"hier", Collective::ReduceScatter, hierReduceScatter,
              "ring of whole rails within the node, then ring along each rail between nodes"},
    Algorithm{"ring", Collective::Broadcast, chainBroadcast, "pipelined chain from the root"},
    Algorithm{"tree", Collective::Broadcast, treeBroadcast,
              "binomial tree, ceil(log2 n) steps, for small messages"},
    Algorithm{"scatter_allgather", Collective::Broadcast, scatterAllGatherBroadcast,
              "direct scatter from the root then ring all-gather, for large messages"},
    Algorithm{"peer_direct", Collective::Broadcast, peerDirectBroadcast,
              "one-sided: every rank reads the root's buffer in place", true},
    Algorithm{"ring", Collective::Reduce, chainReduce, "pipelined chain into the root"},
    Algorithm{"tree", Collective::Reduce, treeReduce,
              "binomial tree, ceil(log2 n) steps, for small messages"},
    Algorithm{"rsg", Collective::Reduce, reduceScatterGatherReduce,
              "ring reduce-scatter then direct gather to the root, for large messages"},
    Algorithm{"pairwise", Collective::AllToAll, pairwiseAllToAll,
              "pairwise exchange: n-1 steps, step k sends to r+k and receives from r-k"},
    Algorithm{"peer_direct", Collective::AllToAll, peerDirectAllToAll,
              "one-sided: read block r of every peer's input in place", true},
    Algorithm{"direct", Collective::Gather, directGather,
              "every rank sends its block straight to the root, one step"},
    Algorithm{"direct", Collective::Scatter, directScatter,
              "the root sends each rank its block straight, one step"},
    Algorithm{"ring", Collective::AllGatherV, ringAllGatherV,
              "ring, n-1 steps, a block per rank of its own size"},
    Algorithm{"ring", Collective::ReduceScatterV, ringReduceScatterV,
              "ring, n-1 steps, a block per rank of its own size"},
    Algorithm{"direct", Collective::Send, directSend, "one stream to the peer"},
    Algorithm{"direct", Collective::Recv, directRecv, "one stream from the peer"},
};
}  // namespace

std::span<const Algorithm> allAlgorithms() { return kAlgorithms; }

const Algorithm* findAlgorithm(Collective collective, std::string_view name) {
  for (const Algorithm& a : kAlgorithms)
    if (a.collective == collective && name == a.name) return &a;
  return nullptr;
}

const Algorithm& defaultAlgorithm(Collective collective, size_t bytes, int nranks) {
  // Interim thresholds measured with chorus-perf on 2 cores over shared memory (the
  // tuner's cost model will take this over): up to 4 ranks one step (oneshot) wins while
  // every rank can afford to receive everything; beyond that recursive doubling's log2 p
  // steps win for small messages and Rabenseifner (rhd) in the middle; the ring at large.
  static const Algorithm* oneshot = findAlgorithm(Collective::AllReduce, "oneshot");
  static const Algorithm* rd = findAlgorithm(Collective::AllReduce, "rd");
  static const Algorithm* rhd = findAlgorithm(Collective::AllReduce, "rhd");
  if (collective == Collective::AllReduce) {
    if (nranks <= 4 && bytes * static_cast<size_t>(nranks) <= kOneshotBytes) return *oneshot;
    if (nranks > 4 && bytes <= kRecursiveDoublingBytes) return *rd;
    if (nranks > 4 && bytes <= kRabenseifnerBytes) return *rhd;
  }
  for (const Algorithm& a : kAlgorithms)
    if (a.collective == collective) return a;
  return kAlgorithms[0];  // unreachable: every collective has an entry
}

const char* toString(Collective collective) {
  switch (collective) {
    case Collective::AllReduce:
      return "allReduce";
    case Collective::AllGather:
      return "allGather";
    case Collective::ReduceScatter:
      return "reduceScatter";
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Reduce:
      return "reduce";
    case Collective::Send:
      return "send";
    case Collective::Recv:
      return "recv";
    case Collective::AllToAll:
      return "allToAll";
    case Collective::Gather:
      return "gather";
    case Collective::Scatter:
      return "scatter";
    case Collective::AllGatherV:
      return "allGatherV";
    case Collective::ReduceScatterV:
      return "reduceScatterV";
  }
  return "unknown";
}

namespace {
bool scheduleWrites(const Algorithm& a) {
  if (!a.oneSided) return false;
  const Schedule s = a.build({.collective = a.collective, .rank = 0, .nranks = 2, .count = 2});
  for (const Step& step : s.steps)
    if (step.kind == StepKind::PeerWrite) return true;
  return false;
}
}  // namespace

bool writesIntoPeers(const Algorithm& algorithm) {
  // The registry's answers read off their 2-rank schedules once: asked on every call that
  // the tuner or a forced algorithm takes one-sided.
  static const std::vector<bool> writes = [] {
    std::vector<bool> all;
    for (const Algorithm& a : allAlgorithms()) all.push_back(scheduleWrites(a));
    return all;
  }();
  const std::span<const Algorithm> all = allAlgorithms();
  for (size_t i = 0; i < all.size(); ++i)
    if (&all[i] == &algorithm) return writes[i];
  return scheduleWrites(algorithm);  // not in the registry (tests' variants)
}

}  // namespace chorus
