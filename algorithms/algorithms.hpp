// The algorithm registry: every algorithm is a pure function from CollectiveArgs to a
// Schedule, registered under a short name ("ring", ...).
#pragma once

#include "algorithms/schedule.hpp"

#include <span>
#include <string_view>

namespace chorus {

using ScheduleBuilder = Schedule (*)(const CollectiveArgs& args);

struct Algorithm {
  const char* name;
  Collective collective;
  ScheduleBuilder build;
  const char* description;
  // Reads peers' buffers in place (one-sided steps): runs only when every rank's buffers
  // are registered or from memAlloc, and the transport offers PeerMemory.
  bool oneSided = false;
  // One-sided over its own scratch, which the engine then lends from peer-mappable memory
  // (Engine::lendScratch): runs on any buffers, over a transport whose PeerMemory maps.
  bool staged = false;
};

std::span<const Algorithm> allAlgorithms();
// Whether the algorithm's schedules write into peers' memory (StepKind::PeerWrite), which
// only some transports can (PeerMemory::write).
bool writesIntoPeers(const Algorithm& algorithm);
// nullptr when no algorithm of that name exists for the collective.
const Algorithm* findAlgorithm(Collective collective, std::string_view name);
// The default when nothing is forced, by message size (the tuner will take this over).
const Algorithm& defaultAlgorithm(Collective collective, size_t bytes = 0, int nranks = 1);

Schedule ringAllReduce(const CollectiveArgs& args);
Schedule oneshotAllReduce(const CollectiveArgs& args);
Schedule twoshotAllReduce(const CollectiveArgs& args);
Schedule rdAllReduce(const CollectiveArgs& args);
Schedule rhdAllReduce(const CollectiveArgs& args);
Schedule hierRingAllReduce(const CollectiveArgs& args);
Schedule hierRdAllReduce(const CollectiveArgs& args);
Schedule hierRhdAllReduce(const CollectiveArgs& args);
Schedule peerOneshotAllReduce(const CollectiveArgs& args);
Schedule peerTwoshotAllReduce(const CollectiveArgs& args);
Schedule peerPushAllReduce(const CollectiveArgs& args);
// peer_push with parts cut into chunks of at most `chunkElements` (tests use small ones).
Schedule peerPushAllReduceChunked(const CollectiveArgs& args, size_t chunkElements);
Schedule peerRingAllReduce(const CollectiveArgs& args);
Schedule peerStagedAllReduce(const CollectiveArgs& args);
// peer_staged with parts cut into chunks of at most `chunkElements` (tests use small ones).
Schedule peerStagedAllReduceChunked(const CollectiveArgs& args, size_t chunkElements);
inline constexpr size_t kStagedChunkElements = size_t{256} << 10;
Schedule peerRingAllGather(const CollectiveArgs& args);
Schedule peerDirectReduceScatter(const CollectiveArgs& args);
Schedule peerDirectBroadcast(const CollectiveArgs& args);
Schedule peerDirectAllToAll(const CollectiveArgs& args);
Schedule ringAllGather(const CollectiveArgs& args);
Schedule rdAllGather(const CollectiveArgs& args);
Schedule bruckAllGather(const CollectiveArgs& args);
Schedule hierAllGather(const CollectiveArgs& args);
Schedule hierReduceScatter(const CollectiveArgs& args);
Schedule ringReduceScatter(const CollectiveArgs& args);
Schedule rhReduceScatter(const CollectiveArgs& args);
Schedule chainBroadcast(const CollectiveArgs& args);
Schedule treeBroadcast(const CollectiveArgs& args);
Schedule scatterAllGatherBroadcast(const CollectiveArgs& args);
Schedule chainReduce(const CollectiveArgs& args);
Schedule treeReduce(const CollectiveArgs& args);
Schedule reduceScatterGatherReduce(const CollectiveArgs& args);
Schedule pairwiseAllToAll(const CollectiveArgs& args);
Schedule directGather(const CollectiveArgs& args);
Schedule directScatter(const CollectiveArgs& args);
Schedule ringAllGatherV(const CollectiveArgs& args);
Schedule ringReduceScatterV(const CollectiveArgs& args);
Schedule directSend(const CollectiveArgs& args);
Schedule directRecv(const CollectiveArgs& args);

}  // namespace chorus
