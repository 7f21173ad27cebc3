// One collective in flight: its schedule, its buffers and how far each step has come.
#pragma once

#include "algorithms/schedule.hpp"
#include "algorithms/schedule_rules.hpp"
#include "engine/rendezvous.hpp"
#include "memory/shared_memory.hpp"

#include <chorus/chorus.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace chorus::detail {

struct StepProgress {
  size_t bytes = 0;     // bytes of the step's stream (data, then padding) handled
  size_t elements = 0;  // elements fully done (sent, received, reduced, finalized)
  bool complete = false;
  // The call's fingerprint (wire_header.hpp) goes ahead of the op's first message to
  // each peer and is checked at the op's first message from each peer.
  bool withHeader = false;
  uint8_t headerBytes = 0;
  std::array<std::byte, 32> header{};
  // One-sided steps: the Expose record (where the range lives, engine.cpp) being sent or
  // received, and, once received, the peer's range mapped here (nullptr: read() reaches it).
  uint8_t recordBytes = 0;
  bool recordTaken = false;
  std::array<std::byte, rules::kExposeRecordBytes> record{};
  const std::byte* peerData = nullptr;
  // A read that did not finish at once (verbs): its elements, so that the engine asks for
  // the same range again until it completes.
  size_t readElements = 0;
  // Send and Recv of an announced message (engine/rendezvous.hpp); the offer travels in
  // `record`/`recordBytes` (free in these steps).
  RendezvousState rendezvous = RendezvousState::Undecided;
  // Receiver: the announced message lands in the channel's bounce buffer (a RecvReduce
  // that cannot fold in its destination, a Recv into an unregistered destination:
  // rendezvous_reduce.hpp), folded or copied out from there.
  bool intoBounce = false;
  // Receiver of an announced message: all of its written middle landed (the prefix
  // landed before is folded or copied out as it comes: `elements`).
  bool middleLanded = false;
  // Sender of an announced message written in part: bytes of its tail streamed (the
  // offer in `record` says how many it streams; `bytes` counts the head and the middle).
  size_t tailBytes = 0;
};

struct OpState {
  Collective collective = Collective::AllReduce;
  uint64_t sequence = 0;  // per communicator, counts every collective issued
  DataType type = DataType::Float32;
  RedOp op = RedOp::Sum;
  size_t count = 0;
  int root = 0;
  const char* algorithm = "";
  int algorithmIndex = -1;                        // in allAlgorithms(), travels in the fingerprint
  static constexpr int kMailboxAlgorithm = 0xfe;  // algorithmIndex of a mailbox op

  std::shared_ptr<const Schedule> schedule;  // null for a mailbox op
  // A small all-reduce through the transport's Mailbox instead of a schedule: every rank
  // posts its input, takes every peer's and reduces them in rank order.
  bool viaMailbox = false;
  uint32_t mailboxSeq = 0;  // its message number (the engine's count of mailbox ops)
  bool mailboxPosted = false;
  const std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;
  std::vector<std::byte> scratchStorage;  // lent by the engine's pool while in flight
  size_t elementSize = 1;
  uint32_t countsHash = 0;              // the v-collectives' per-rank counts, in the fingerprint
  bool barrier = false;                 // Communicator::barrier: described as such
  std::array<std::byte, 8> ownBytes{};  // a barrier's buffer
  // The registered (or memAlloc) memory holding input and output, when they are: what
  // Expose steps describe to peers.
  std::optional<LocalRegion> inputRegion, outputRegion;
  // Scratch that peers map (a schedule that exposes scratch, Algorithm::staged): a memAlloc
  // buffer lent by the engine's pool while in flight, described to peers by scratchRegion.
  std::shared_ptr<std::byte> sharedScratch;
  std::optional<LocalRegion> scratchRegion;

  std::vector<StepProgress> progress;
  // rules::foldsIntoPrevious of the schedule: which steps the engine folds in one
  // multi-source pass. Computed once per schedule and cached with it
  // (CommImpl::scheduleFor); null for a mailbox op, like the schedule.
  std::shared_ptr<const std::vector<bool>> foldsIntoPrevious;
  size_t stepsLeft = 0;
  bool done = false;
  Result error = Result::Success;
  std::string message;           // the failure, when error != Success
  std::vector<int> failedRanks;  // Error::failedRanks of the failure

  std::string describe() const;  // "allReduce #12 (1024 x float sum, ring)"
};

// Where a step's range lies in this rank's memory.
inline std::byte* resolve(const OpState& op, const Range& r) {
  std::byte* base = r.buffer == Buffer::Input    ? const_cast<std::byte*>(op.input)
                    : r.buffer == Buffer::Output ? op.output
                                                 : op.scratch;
  return base + r.offset * op.elementSize;
}

// The registered memory holding a step's range, or null (scratch, unregistered buffers).
inline const LocalRegion* regionOf(const OpState& op, const Range& r) {
  if (r.buffer == Buffer::Input && op.inputRegion) return &*op.inputRegion;
  if (r.buffer == Buffer::Output && op.outputRegion) return &*op.outputRegion;
  return nullptr;
}

}  // namespace chorus::detail
