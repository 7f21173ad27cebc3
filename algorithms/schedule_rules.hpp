// How a Schedule runs: the ordering rules every executor follows, in one place. The
// engine (src/engine) runs them on real transports, the replay (src/sim/replay.cpp, the
// tuner's cost model and chorus-sim) times them, and the symbolic checker (tests/unit)
// proves schedules correct under them. Pure functions over a Schedule and what its steps
// have done so far; nothing here moves data.
//
// 1. Message order. Steps with a peer (Send; Recv and RecvReduce) run through one queue
//    per peer and direction, in issue order: a step starts once the one before it in its
//    queue is complete (one exception: a write beside a fold, writesBehindFold). Each
//    queue is a byte stream, so the k-th non-empty send from rank a to rank b is the k-th
//    non-empty receive at b from a. Copy and Reduce are in no queue.
// 2. `after`. A step handles an element only after its `after` has handled it when both
//    cover the same number of elements (element-wise pipelining); otherwise it waits for
//    `after` to complete.
// 3. Empty steps move nothing and match no message, but keep their place in their queue
//    and complete only once their `after` has.
// 4. One-sided steps (Expose; PeerRead, PeerReduce and PeerWrite) are in the same queues
//    as Send and Recv (Expose goes out, the reads and writes come in: they take the
//    Expose's message) and are always a message, even when empty (then a pure signal). An
//    Expose starts only when its `after` is complete: the whole range must be written
//    before a peer may read any of it. The exposed range must not be written until a later
//    message from that peer has arrived, nor read where the peer writes it (the checker
//    proves it); the writer's writes are visible to the owner once that message is.
// 5. The wire. A message's bytes are padded to a multiple of kStreamAlign in its queue's
//    stream (every message starts aligned), and the first message of a call on each queue
//    carries the call's fingerprint (kCallHeaderBytes, the engine's WireHeader) ahead of it.
//    An Expose's message is its record (kExposeRecordBytes: where the range lives), whatever
//    the range's size: the reader moves the range's bytes itself.
// 6. Fold chains (an executor's freedom, not a constraint). A PeerReduce followed by
//    steps that each fold one more source into the same range (foldsIntoPrevious) may run
//    as one multi-source pass (kernels::reduceMany) over the elements every step of the
//    chain may handle: per element it applies the same ops in the same order as the steps
//    one after the other (rule 2 lets each handle an element right after the one before),
//    and no other step observes the range between two of them (nothing else is `after` a
//    step inside the chain, and only the last finalizes). So results are bit-identical, and
//    the checker, replay and simulator, which run the steps one by one, describe the same
//    execution.
// 7. Guards. A step marked `guard` waits for its `after` (a Send) only so as not to
//    overwrite what the send still reads: in place, where input and output are one
//    buffer. Where the memory the step writes shares no byte with the send's source (out
//    of place), the guard does not bind and the step runs as if its `after` were complete
//    (so a receiver's destination is free at once, and the zero-copy rendezvous may clear
//    to send). Each executor says whether the memories meet (guardBinds): the engine from
//    the resolved pointers, the checker from its stores (it proves every schedule both in
//    place and out of place); the replay, which has no memory, times the binding case.
#pragma once

#include "algorithms/schedule.hpp"

#include <cstddef>
#include <vector>

namespace chorus::rules {

// The elements a step handles: what a send streams or a PeerWrite writes into the peer's
// memory, what anything else writes.
inline size_t elementsOf(const Step& step) {
  return isOutgoing(step.kind) || step.kind == StepKind::PeerWrite ? step.src.count
                                                                   : step.dst.count;
}

// Copy and Reduce: no peer, no queue.
inline bool isLocal(const Step& step) { return chorus::isLocal(step.kind); }

// Rules 1, 3 and 4: whether the step is a message of its queue (matched in order).
inline bool isMessage(const Step& step) {
  return !isLocal(step) && (elementsOf(step) > 0 || isOneSided(step.kind));
}

// Rule 2: true when `step` (of `schedule`) follows its `after` element by element.
inline bool pipelinesBehindAfter(const Schedule& schedule, const Step& step) {
  return step.after >= 0 && elementsOf(schedule.steps[step.after]) == elementsOf(step);
}

// Rule 2: how many elements of step `index` may be handled now, given that its `after`
// has handled `afterElements` of its own and whether it is complete (both ignored when
// the step has no `after`).
inline size_t allowedElements(const Schedule& schedule, int index, size_t afterElements,
                              bool afterComplete) {
  const Step& step = schedule.steps[index];
  if (step.after < 0 || afterComplete) return elementsOf(step);
  if (step.kind == StepKind::Expose) return 0;  // rule 4
  return pipelinesBehindAfter(schedule, step) ? afterElements : 0;
}

// Rule 7: whether the step's `after` binds, given whether the memory the step writes
// shares a byte with what its `after` reads. An unbound guard counts as complete.
inline bool guardBinds(const Step& step, bool writesWhatAfterReads) {
  return !step.guard || writesWhatAfterReads;
}

// Rule 3: whether an empty step may complete, given whether its `after` is complete.
inline bool emptyStepMayComplete(const Step& step, bool afterComplete) {
  return step.after < 0 || afterComplete;
}

// Rule 6: for each step, whether it folds into the pass of the step before it (so the
// chain's head is a PeerReduce whose next step returns true). A member reads its range's
// current value (src == dst, the head's dst) and one source that is not that range: the
// peer's exposed range (PeerReduce), or a local range in another buffer (Reduce: dst =
// dst OP src, the same order). Computed once per schedule; O(steps).
inline std::vector<bool> foldsIntoPrevious(const Schedule& schedule) {
  const std::vector<Step>& steps = schedule.steps;
  std::vector<int> waiters(steps.size(), 0);  // how many steps are `after` each step
  for (const Step& step : steps)
    if (step.after >= 0) ++waiters[static_cast<size_t>(step.after)];
  auto same = [](const Range& a, const Range& b) {
    return a.buffer == b.buffer && a.offset == b.offset && a.count == b.count;
  };
  std::vector<bool> folds(steps.size(), false);
  for (size_t i = 1; i < steps.size(); ++i) {
    const Step& step = steps[i];
    const Step& previous = steps[i - 1];
    const bool inChain = previous.kind == StepKind::PeerReduce || folds[i - 1];
    const bool foldsOneMore = (step.kind == StepKind::PeerReduce && same(step.src, step.dst)) ||
                              (step.kind == StepKind::Reduce && step.src.buffer != step.dst.buffer);
    folds[i] = inChain && foldsOneMore && step.after == static_cast<int>(i) - 1 &&
               !previous.finalize && waiters[i - 1] == 1 && step.dst.count > 0 &&
               same(step.dst, previous.dst);
  }
  return folds;
}

// Rule 5: the bytes a message of `dataBytes` puts on its stream; `firstOfCall`: it is the
// call's first message on its queue (QueueOrder's Place::message == 0).
inline constexpr size_t kStreamAlign = 8;
inline constexpr size_t kCallHeaderBytes = 32;
// Rule 5: an Expose's message, the engine's ExposeRecord (16 bytes and the transport's
// description, PeerMemory::kMaxBlob).
inline constexpr size_t kExposeRecordBytes = 128;
inline size_t wireBytes(size_t dataBytes, bool firstOfCall) {
  return (dataBytes + kStreamAlign - 1) / kStreamAlign * kStreamAlign +
         (firstOfCall ? kCallHeaderBytes : 0);
}

// Rule 1's exception: a PeerWrite right behind a PeerReduce in its queue (both take the
// peer's Expose records, in order) runs beside it: it starts once that PeerReduce has
// taken its record (so the write's record is the next one), without waiting for the
// PeerReduce to complete; the step after the write waits for both. The write's `after`
// (rule 2) still orders its elements: a write of what a fold chain produced follows the
// fold slice by slice, while the folded range is in cache (perf/README.md, "A write
// beside the fold": peer_push 16 MiB). In place, peer_push's write lands on the range the
// fold reads from the same peer, each element behind its read (by rule 2, through the
// fold chain): the symbolic checker proves it, as it proves every schedule's order.
inline bool writesBehindFold(StepKind kind, StepKind previousKind) {
  return kind == StepKind::PeerWrite && previousKind == StepKind::PeerReduce;
}

// Rule 1 for executors that see one schedule at a time: the place of each message step
// in its queue. Link the steps of one schedule in order, then clear() before the next;
// the cost is O(1) a step and O(queues used) a clear, whatever the rank count.
class QueueOrder {
 public:
  struct Place {
    // The step whose completion it waits for: the one before it in its queue, or, for a
    // write beside a fold (writesBehindFold), what that fold waits for. -1: none (first
    // in its queue, or a local step).
    int previous = -1;
    // The fold a write runs beside (the step before it in its queue). The step after such
    // a write waits for that fold too: its `previous` is the write, whose `beside` it is.
    int beside = -1;
    int message = -1;  // messages (isMessage): which message of the queue it is (0, 1, ...)
  };

  explicit QueueOrder(int nranks) : queues_(2 * static_cast<size_t>(nranks)) {}

  // Step `index` of the schedule being linked; its peer must be in [0, nranks).
  Place link(const Step& step, int index) {
    if (isLocal(step)) return {};
    const size_t q = 2 * static_cast<size_t>(step.peer) + isOutgoing(step.kind);
    Queue& queue = queues_[q];
    if (queue.last < 0) used_.push_back(q);
    Place place{queue.last, -1, -1};
    if (queue.last >= 0 && writesBehindFold(step.kind, queue.lastKind)) {
      place.beside = queue.last;
      place.previous = queue.lastPrevious;
    }
    queue.lastPrevious = place.previous;
    queue.last = index;
    queue.lastKind = step.kind;
    if (isMessage(step)) place.message = queue.messages++;
    return place;
  }

  void clear() {
    for (size_t q : used_) queues_[q] = {};
    used_.clear();
  }

 private:
  struct Queue {
    int last = -1;
    int lastPrevious = -1;  // the Place::previous given to `last`
    StepKind lastKind = StepKind::Copy;
    int messages = 0;
  };
  std::vector<Queue> queues_;  // 2 peer + 1 for sends, 2 peer for receives
  std::vector<size_t> used_;
};

}  // namespace chorus::rules
