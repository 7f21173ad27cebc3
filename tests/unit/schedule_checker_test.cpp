// The symbolic checker is only as good as the broken schedules it rejects: each of these
// is wrong in one way the proofs in schedule_proof_test.cpp rely on catching.
#include "algorithms/algorithms.hpp"
#include "symbolic_checker.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace chorus {
namespace {

using symbolic::Case;
using symbolic::kElementWise;
using symbolic::prove;

// Every chunk after the first starts one element early: the last element of the buffer
// is never written.
Schedule offByOneRingAllReduce(const CollectiveArgs& args) {
  Schedule s = ringAllReduce(args);
  for (Step& step : s.steps)
    for (Range* range : {&step.src, &step.dst})
      if (range->offset > 0) --range->offset;
  return s;
}
// Drops every ordering: in place, data is overwritten before it is sent.
Schedule unorderedRdAllReduce(const CollectiveArgs& args) {
  Schedule s = rdAllReduce(args);
  for (Step& step : s.steps) step.after = -1;
  return s;
}
// Folds the own input in once more at the end.
Schedule doubleCountingAllReduce(const CollectiveArgs& args) {
  Schedule s = ringAllReduce(args);
  if (args.nranks > 1 && args.count > 0)
    s.steps.push_back({StepKind::Reduce,
                       -1,
                       {Buffer::Input, 0, 1},
                       {Buffer::Output, 0, 1},
                       static_cast<int>(s.steps.size()) - 1,
                       false});
  return s;
}
// Never divides (Avg): no step finalizes.
Schedule unfinalizedRdAllReduce(const CollectiveArgs& args) {
  Schedule s = rdAllReduce(args);
  for (Step& step : s.steps) step.finalize = false;
  return s;
}
// Receives may overwrite blocks not yet sent.
Schedule unorderedAllToAll(const CollectiveArgs& args) {
  Schedule s = pairwiseAllToAll(args);
  for (Step& step : s.steps) step.after = -1;
  return s;
}
// Forwards what it has not received yet.
Schedule eagerChainBroadcast(const CollectiveArgs& args) {
  Schedule s = chainBroadcast(args);
  for (Step& step : s.steps) step.after = -1;
  return s;
}
// Rank 1 receives one element less than it is sent.
Schedule shortReceiveAllGather(const CollectiveArgs& args) {
  Schedule s = ringAllGather(args);
  if (args.rank == 1)
    for (Step& step : s.steps)
      if (step.kind == StepKind::Recv && step.dst.count > 1) --step.dst.count;
  return s;
}
// Rank 0 receives from the wrong neighbour.
Schedule crossedRingAllGather(const CollectiveArgs& args) {
  Schedule s = ringAllGather(args);
  if (args.rank == 0)
    for (Step& step : s.steps)
      if (step.kind == StepKind::Recv) step.peer = 1;
  return s;
}

// One-sided: the result part is exposed before it is folded (its Expose waits for
// nothing): the fold then writes what a peer may be reading.
Schedule earlyExposePeerTwoshot(const CollectiveArgs& args) {
  Schedule s = peerTwoshotAllReduce(args);
  for (Step& step : s.steps)
    if (step.kind == StepKind::Expose && step.src.buffer == Buffer::Output) step.after = -1;
  return s;
}
// One-sided: never says it is done reading, so the peers' windows never close.
Schedule silentPeerTwoshot(const CollectiveArgs& args) {
  Schedule s = peerTwoshotAllReduce(args);
  std::erase_if(s.steps, [](const Step& step) {
    return (step.kind == StepKind::Expose || step.kind == StepKind::PeerRead) &&
           (step.kind == StepKind::Expose ? step.src.count : step.dst.count) == 0;
  });
  return s;
}
// One-sided writes: each rank writes its part into the peers behind its first fold, not
// its last (partial sums reach the peers).
Schedule earlyWritePeerPush(const CollectiveArgs& args) {
  Schedule s = peerPushAllReduce(args);
  int firstFold = -1;
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    Step& step = s.steps[i];
    if (step.kind == StepKind::PeerReduce && firstFold < 0) firstFold = i;
    if (step.kind == StepKind::PeerWrite) step.after = firstFold;
  }
  return s;
}
// One-sided writes: rank 0 says "written" before it has written (its signals wait for
// nothing), so the peers may finish while it still writes into their output.
Schedule earlySignalPeerPush(const CollectiveArgs& args) {
  Schedule s = peerPushAllReduce(args);
  if (args.rank == 0)
    for (Step& step : s.steps)
      if (step.kind == StepKind::Expose && step.src.count == 0) step.after = -1;
  return s;
}
// One-sided writes: rank 0 copies what rank 1 writes into its output as soon as it has
// exposed it (step 1), before rank 1 has said it is there.
Schedule eagerReaderPeerPush(const CollectiveArgs& args) {
  Schedule s = peerPushAllReduce(args);
  if (args.rank == 0 && args.nranks > 1) {
    const Part p = partOf(args.count, args.nranks, 1);
    s.scratchCount = p.size;
    s.steps.push_back({StepKind::Copy,
                       -1,
                       {Buffer::Output, p.begin, p.size},
                       {Buffer::Scratch, 0, p.size},
                       /*after=*/1,
                       false});
  }
  return s;
}
// One-sided, in place: rank 0 copies its result over its input as it folds, without
// waiting for the peers to say they are done reading that input.
Schedule overwritingPeerOneshot(const CollectiveArgs& args) {
  Schedule s = peerOneshotAllReduce(args);
  if (args.rank == 0 && !s.steps.empty() && s.steps.back().kind == StepKind::Copy)
    s.steps.back().after = static_cast<int>(s.steps.size()) - 2 * args.nranks;  // the fold
  return s;
}
// One-sided: the reader reads a stream message in place (Expose replaced by Send).
Schedule mixedPeerTwoshot(const CollectiveArgs& args) {
  Schedule s = peerTwoshotAllReduce(args);
  if (args.rank == 0)
    for (Step& step : s.steps)
      if (step.kind == StepKind::Expose && step.src.count > 0) step.kind = StepKind::Send;
  return s;
}

// Calls one-shot's first fold's wait on the sends a guard (rule 7): it writes scratch, which
// no send reads, so the wait never binds; but the final copy, in place, relies on it (it
// overwrites the input the sends still read).
Schedule guardedOneshot(const CollectiveArgs& args) {
  Schedule s = oneshotAllReduce(args);
  for (Step& step : s.steps)
    if (step.after >= 0 && s.steps[step.after].kind == StepKind::Send &&
        step.kind != StepKind::Send) {
      step.guard = true;
      break;
    }
  return s;
}

// Finalizes again what the reduce-scatter finalized: the all-gather's receives divide once
// more (Avg would be divided twice).
Schedule refinalizingRingAllReduce(const CollectiveArgs& args) {
  Schedule s = ringAllReduce(args);
  for (Step& step : s.steps)
    if (step.kind == StepKind::Recv) step.finalize = true;
  return s;
}
// A stray extra send to the next rank, which nothing receives.
Schedule straySendRingAllReduce(const CollectiveArgs& args) {
  Schedule s = ringAllReduce(args);
  if (args.nranks > 1)
    s.steps.push_back({StepKind::Send,
                       (args.rank + 1) % args.nranks,
                       {Buffer::Output, 0, 1},
                       {},
                       static_cast<int>(s.steps.size()) - 1,
                       false});
  return s;
}
// Two ranks that each receive before they send: neither ever moves.
Schedule receiveFirstExchange(const CollectiveArgs& args) {
  Schedule s;
  const int peer = 1 - args.rank;
  s.steps.push_back({StepKind::Recv, peer, {}, {Buffer::Output, 0, args.count}, -1, false});
  s.steps.push_back({StepKind::Send, peer, {Buffer::Input, 0, args.count}, {}, 0, false});
  return s;
}
// Rank 0 exposes part of its output to the rank opposite in the ring, which has no link
// with rank 0 (ring neighbours only).
Schedule unreadExposeRingAllReduce(const CollectiveArgs& args) {
  Schedule s = ringAllReduce(args);
  if (args.rank == 0)
    s.steps.push_back({StepKind::Expose,
                       args.nranks / 2,
                       {Buffer::Output, 0, 1},
                       {},
                       static_cast<int>(s.steps.size()) - 1,
                       false});
  return s;
}

std::string proveBroken(Collective collective, ScheduleBuilder build, const Case& c) {
  const Algorithm broken{"broken", collective, build, ""};
  return prove(broken, c);
}

TEST(Schedule, TheCheckerRejectsBrokenSchedules) {
  struct Broken {
    const char* what;
    Collective collective;
    ScheduleBuilder build;
    Case c;
    const char* says;  // part of the error
  };
  const Broken cases[] = {
      {"ring chunk off by one, p = 257", Collective::AllReduce, offByOneRingAllReduce,
       Case{257, 2 * 257 + 3, 0, false, 2}, "output elements [516, 517): got nothing written"},
      {"ring chunk off by one, p = 5", Collective::AllReduce, offByOneRingAllReduce,
       Case{5, 12, 0, true, kElementWise}, "contributes twice"},
      {"rd without ordering, in place", Collective::AllReduce, unorderedRdAllReduce,
       Case{8, 7, 0, true, kElementWise}, ""},
      {"double counting", Collective::AllReduce, doubleCountingAllReduce, Case{4, 7, 0, false, 1},
       "contributes twice"},
      {"never finalized", Collective::AllReduce, unfinalizedRdAllReduce, Case{6, 9, 0, false, 1},
       "want ranks {[0,6)}, input element = position + 0, finalized"},
      {"all-to-all without ordering, in place", Collective::AllToAll, unorderedAllToAll,
       Case{4, 3, 0, true, kElementWise, 0}, ""},
      {"chain forwards before receiving", Collective::Broadcast, eagerChainBroadcast,
       Case{5, 10, 2, false, 2}, "nothing written"},
      {"a receive shorter than its message", Collective::AllGather, shortReceiveAllGather,
       Case{4, 3, 0, false, 1}, "a message of 3 elements from rank 0 into a receive of 2"},
      {"a receive from the wrong peer", Collective::AllGather, crossedRingAllGather,
       Case{4, 3, 0, false, 1}, "sends to rank 0, which never receives from it"},
      {"one-sided: result exposed before it is folded", Collective::AllReduce,
       earlyExposePeerTwoshot, Case{3, 7, 0, false, 1},
       "overwrites what its step 5 exposed while rank 1 may still read it"},
      {"one-sided: readers never say they are done", Collective::AllReduce, silentPeerTwoshot,
       Case{4, 9, 0, false, 1}, "may still read"},
      {"one-sided in place: input overwritten while peers read it", Collective::AllReduce,
       overwritingPeerOneshot, Case{3, 5, 0, true, 1}, "contributes twice"},
      {"one-sided: a stream message read in place", Collective::AllReduce, mixedPeerTwoshot,
       Case{3, 6, 0, false, 1}, "a stream message of"},
      // Rank 1 late: its writes run last, so its reads are over before its "written".
      {"one-sided writes: partial sums written", Collective::AllReduce, earlyWritePeerPush,
       Case{3, 7, 0, false, 1, /*late=*/1}, "want ranks {[0,3)}"},
      // A write runs beside the fold before it (rule 1's exception) and here waits for
      // nothing after the first fold, so its "written" goes while this rank still reads.
      {"one-sided writes: written before the reads are over", Collective::AllReduce,
       earlyWritePeerPush, Case{3, 7, 0, false, 1},
       "rank 2 finishes while rank 1 may still read what its step 2 exposed"},
      {"one-sided writes: written said too early", Collective::AllReduce, earlySignalPeerPush,
       Case{3, 7, 0, false, 1, /*late=*/0}, "may still write"},
      {"one-sided writes: read before written", Collective::AllReduce, eagerReaderPeerPush,
       Case{3, 7, 0, false, 1}, "reads what its step 1 exposed while rank 1 may still write it"},
      {"finalized twice", Collective::AllReduce, refinalizingRingAllReduce, Case{4, 9, 0, false, 1},
       "an element finalized twice"},
      {"a send nobody receives", Collective::AllReduce, straySendRingAllReduce,
       Case{3, 6, 0, false, 1}, "is never received"},
      {"both ranks receive first", Collective::AllGather, receiveFirstExchange,
       Case{2, 1, 0, false, 1}, "stuck at step 0"},
      {"exposed to a rank that never reads", Collective::AllReduce, unreadExposeRingAllReduce,
       Case{4, 8, 0, false, 1}, "exposes to rank 2, which never reads from it"},
      {"a guard that something later relies on, in place", Collective::AllReduce, guardedOneshot,
       Case{2, 5, 0, true, kElementWise, 0}, "rank"},
  };
  for (const Broken& b : cases) {
    std::string error = proveBroken(b.collective, b.build, b.c);
    EXPECT_NE(error, "") << b.what;
    EXPECT_NE(error.find(b.says), std::string::npos) << b.what << ": " << error;
  }
}

TEST(Schedule, TheCheckerRejectsBadStepsBeforeRunning) {
  static const Step kSelf{StepKind::Send, 0, {Buffer::Input, 0, 1}, {}, -1, false};
  static const Step kOut{StepKind::Copy,          -1, {Buffer::Input, 0, 1},
                         {Buffer::Output, 99, 1}, -1, false};
  static const Step kInput{StepKind::Copy,        -1, {Buffer::Output, 0, 1},
                           {Buffer::Input, 0, 1}, -1, false};
  static const Step kLater{StepKind::Copy,         -1, {Buffer::Input, 0, 1},
                           {Buffer::Output, 0, 1}, 5,  false};
  static const Step kOverlap{StepKind::Copy,         -1, {Buffer::Output, 0, 2},
                             {Buffer::Output, 1, 2}, -1, false};
  static const Step kSizes{StepKind::Copy,         -1, {Buffer::Input, 0, 2},
                           {Buffer::Output, 0, 1}, -1, false};
  static const Step kGuard{
      StepKind::Copy, -1, {Buffer::Input, 0, 1}, {Buffer::Output, 0, 1}, -1, false, /*guard=*/true};
  struct Bad {
    const Step* step;
    const char* says;
  };
  for (Bad bad : {Bad{&kSelf, "bad peer 0"}, Bad{&kOut, "out of bounds"},
                  Bad{&kInput, "writes its input"}, Bad{&kLater, "waits for a later step"},
                  Bad{&kOverlap, "overlap"}, Bad{&kGuard, "a guard that is not"},
                  Bad{&kSizes, "source and destination differ in size"}}) {
    static const Step* current;
    current = bad.step;
    ScheduleBuilder build = [](const CollectiveArgs& args) {
      Schedule s = ringAllReduce(args);
      if (args.rank == 0) s.steps.insert(s.steps.begin(), *current);
      return s;
    };
    std::string error = proveBroken(Collective::AllReduce, build, Case{3, 4, 0, false, 1});
    EXPECT_NE(error.find(bad.says), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace chorus
