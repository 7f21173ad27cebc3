// The shared Schedule rules (algorithms/schedule_rules.hpp) on hand-built schedules, with
// the answers worked out by hand. The engine, the replay and the symbolic checker are
// tested through them elsewhere (multiproc collectives, sim, schedule proofs).
#include "algorithms/schedule_rules.hpp"
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace chorus {
namespace {

using namespace steps;

TEST(ScheduleRules, ElementsOfASendAreItsSourceOtherwiseItsDestination) {
  Schedule s;
  send(s, 1, in(0, 7));
  recvReduce(s, 1, in(0, 5), out(0, 5), false);
  copy(s, in(0, 3), out(0, 3));
  EXPECT_EQ(rules::elementsOf(s.steps[0]), 7u);
  EXPECT_EQ(rules::elementsOf(s.steps[1]), 5u);
  EXPECT_EQ(rules::elementsOf(s.steps[2]), 3u);
  EXPECT_FALSE(rules::isLocal(s.steps[0]));
  EXPECT_FALSE(rules::isLocal(s.steps[1]));
  EXPECT_TRUE(rules::isLocal(s.steps[2]));
}

TEST(ScheduleRules, EqualCountsPipelineUnequalCountsWaitForCompletion) {
  Schedule s;
  const int received = recv(s, 1, out(0, 8));
  const int forwarded = send(s, 2, out(0, 8), received);  // same count: element by element
  const int half = send(s, 3, out(0, 4), received);       // fewer: waits for all 8
  const int free = send(s, 4, out(4, 4));                 // no `after`
  EXPECT_TRUE(rules::pipelinesBehindAfter(s, s.steps[forwarded]));
  EXPECT_FALSE(rules::pipelinesBehindAfter(s, s.steps[half]));
  EXPECT_FALSE(rules::pipelinesBehindAfter(s, s.steps[free]));
  EXPECT_EQ(rules::allowedElements(s, forwarded, 0, false), 0u);
  EXPECT_EQ(rules::allowedElements(s, forwarded, 5, false), 5u);
  EXPECT_EQ(rules::allowedElements(s, forwarded, 8, true), 8u);
  EXPECT_EQ(rules::allowedElements(s, half, 7, false), 0u);
  EXPECT_EQ(rules::allowedElements(s, half, 8, true), 4u);
  EXPECT_EQ(rules::allowedElements(s, free, 0, false), 4u);
}

TEST(ScheduleRules, AnEmptyStepCompletesOnlyAfterItsAfter) {
  Schedule s;
  const int received = recv(s, 1, out(0, 8));
  const int empty = send(s, 2, out(0, 0), received);
  const int alone = send(s, 2, out(0, 0));
  EXPECT_FALSE(rules::emptyStepMayComplete(s.steps[empty], false));
  EXPECT_TRUE(rules::emptyStepMayComplete(s.steps[empty], true));
  EXPECT_TRUE(rules::emptyStepMayComplete(s.steps[alone], false));
}

TEST(ScheduleRules, QueuesArePerPeerAndDirectionAndEmptyStepsCarryNoMessage) {
  Schedule s;
  send(s, 1, in(0, 4));          // 0: first send to 1, message 0
  recv(s, 1, out(0, 4));         // 1: first receive from 1 (its own queue), message 0
  copy(s, in(0, 4), out(0, 4));  // 2: local, no queue
  send(s, 2, in(0, 4));          // 3: first send to 2
  send(s, 1, in(0, 0));          // 4: empty send to 1: after 0, no message
  send(s, 1, in(0, 4));          // 5: send to 1 after 4, message 1
  rules::QueueOrder order(3);
  std::vector<rules::QueueOrder::Place> places;
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i)
    places.push_back(order.link(s.steps[i], i));
  const int want[][2] = {{-1, 0}, {-1, 0}, {-1, -1}, {-1, 0}, {0, -1}, {4, 1}};
  for (size_t i = 0; i < places.size(); ++i) {
    EXPECT_EQ(places[i].previous, want[i][0]) << "step " << i;
    EXPECT_EQ(places[i].message, want[i][1]) << "step " << i;
  }
  // clear() starts the next schedule with empty queues.
  order.clear();
  const auto first = order.link(s.steps[5], 0);
  EXPECT_EQ(first.previous, -1);
  EXPECT_EQ(first.message, 0);
}

// Rule 6 by hand: a PeerReduce, then steps folding one more source each into the same
// range, each `after` the one before; anything else ends the chain.
TEST(ScheduleRules, FoldChainsAreConsecutiveFoldsIntoOneRangeNobodyElseWaitsOn) {
  Schedule s;
  const int head = peerReduce(s, 1, in(0, 8), out(0, 8), false);   // 0: out = in OP peer 1
  peerReduce(s, 2, out(0, 8), out(0, 8), false, head);             // 1: folds
  reduce(s, scratch(0, 8), out(0, 8), false, 1);                   // 2: folds (local source)
  peerReduce(s, 3, out(0, 8), out(0, 8), true, 2);                 // 3: folds, finalizes
  peerReduce(s, 1, out(0, 8), out(0, 8), false, 3);                // 4: after a finalize
  const int other = peerReduce(s, 2, in(0, 8), out(8, 8), false);  // 5: a new head
  peerReduce(s, 3, out(0, 8), out(8, 8), false, other);            // 6: src is not dst
  const int h2 = peerReduce(s, 1, in(0, 4), out(0, 4), false);     // 7: head
  peerReduce(s, 2, out(0, 4), out(0, 4), false, h2);               // 8: 7 has 2 waiters
  send(s, 3, out(0, 4), h2);                                       // 9: also waits on 7
  const int h3 = peerReduce(s, 1, in(0, 4), out(0, 4), false);     // 10: head
  reduce(s, out(0, 4), out(0, 4), false, h3);                      // 11: source is dst
  const int h4 = peerReduce(s, 1, in(0, 4), out(0, 4), false);     // 12: head
  peerReduce(s, 2, out(0, 4), out(0, 4), false, h4 - 1);           // 13: not after 12
  const std::vector<bool> want = {false, true,  true,  true,  false, false, false,
                                  false, false, false, false, false, false, false};
  EXPECT_EQ(rules::foldsIntoPrevious(s), want);
}

// The one-sided all-reduces fold every peer's part in one chain (np 4: three sources after
// the head's two), which the engine runs as one pass.
TEST(ScheduleRules, OneSidedAllReducesFoldEveryPeerInOneChain) {
  auto longestChain = [](const Schedule& s) {
    const std::vector<bool> folds = rules::foldsIntoPrevious(s);
    int longest = 0, length = 0;
    for (bool f : folds) longest = std::max(longest, length = f ? length + 1 : 0);
    return longest;
  };
  for (int rank = 0; rank < 4; ++rank) {
    CollectiveArgs args;
    args.rank = rank;
    args.nranks = 4;
    args.count = 1000;
    EXPECT_EQ(longestChain(peerTwoshotAllReduce(args)), 2) << rank;
    EXPECT_EQ(longestChain(peerOneshotAllReduce(args)), 2) << rank;
    EXPECT_EQ(longestChain(peerStagedAllReduceChunked(args, 100)), 2) << rank;
  }
}

}  // namespace
}  // namespace chorus
