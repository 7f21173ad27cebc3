// peer_staged (algorithms/peer_staged_allreduce.cpp) with small chunks, so that every part
// is cut into several rounds and the two scratch slots are reused: the registered
// schedule's chunks are 256 Ki elements, more than the other proofs' counts, which
// therefore prove it with one round only. And the
// checker rejecting the staged schedule broken in the ways its windows rely on.
#include "algorithms/algorithms.hpp"
#include "symbolic_checker.hpp"

#include <gtest/gtest.h>

#include <string>

namespace chorus {
namespace {

using symbolic::Case;
using symbolic::kElementWise;
using symbolic::prove;

template <size_t kChunk>
Schedule stagedInChunksOf(const CollectiveArgs& args) {
  return peerStagedAllReduceChunked(args, kChunk);
}

// The copy into scratch is exposed before it is made: peers fold what is not there yet.
Schedule earlyExposeStaged(const CollectiveArgs& args) {
  Schedule s = peerStagedAllReduceChunked(args, 2);
  for (Step& step : s.steps)
    if (step.kind == StepKind::Expose && step.src.buffer == Buffer::Scratch && step.after >= 0 &&
        s.steps[static_cast<size_t>(step.after)].kind == StepKind::Copy)
      step.after = -1;
  return s;
}
// The folded chunk is copied into the output before the fold is complete.
Schedule earlyCopyOutStaged(const CollectiveArgs& args) {
  Schedule s = peerStagedAllReduceChunked(args, 2);
  for (Step& step : s.steps)
    if (step.kind == StepKind::Copy && step.src.buffer == Buffer::Scratch) step.after = -1;
  return s;
}
// Copies the next round into a slot without waiting for the peer to have folded it.
Schedule eagerCopyStaged(const CollectiveArgs& args) {
  Schedule s = peerStagedAllReduceChunked(args, 2);
  for (Step& step : s.steps)
    if (step.kind == StepKind::Copy && step.src.buffer == Buffer::Input) step.after = -1;
  return s;
}

TEST(Schedule, PeerStagedInSmallChunksAtRankCounts1To9) {
  const Algorithm chunked[] = {
      {"staged1", Collective::AllReduce, stagedInChunksOf<1>, "", true, true},
      {"staged3", Collective::AllReduce, stagedInChunksOf<3>, "", true, true},
  };
  for (const Algorithm& a : chunked)
    for (int p = 1; p <= 9; ++p)
      for (size_t count : {size_t{1}, size_t(p - 1), size_t(3 * p + 2), size_t(7 * p + 5)})
        for (bool inPlace : {false, true})
          for (bool fused : {false, true}) {  // with the engine's one-pass folds (rule 6)
            ASSERT_EQ(prove(a, Case{p, count, 0, inPlace, kElementWise, -1, nullptr, fused}), "")
                << a.name << " p " << p << " count " << count << " in place " << inPlace;
            if (inPlace && p > 1)
              ASSERT_EQ(prove(a, Case{p, count, 0, inPlace, 2, /*late=*/p / 2, nullptr, fused}), "")
                  << a.name << " p " << p << " count " << count << " late rank";
          }
}

TEST(Schedule, TheCheckerRejectsBrokenStagedSchedules) {
  struct Broken {
    const char* what;
    ScheduleBuilder build;
    Case c;
    const char* says;  // part of the error
  };
  const Broken cases[] = {
      {"scratch exposed before the copy", earlyExposeStaged, Case{3, 13, 0, false, 1},
       "overwrites what its step 3 exposed while rank 1 may still read it"},
      {"result copied out before it is folded", earlyCopyOutStaged,
       Case{4, 17, 0, true, kElementWise}, "finalized before all contributions"},
      {"a slot's input overwritten while a peer may fold it", eagerCopyStaged,
       Case{3, 20, 0, false, 1}, "mixed input elements"},
  };
  for (const Broken& b : cases) {
    const Algorithm broken{"broken", Collective::AllReduce, b.build, "", true, true};
    const std::string error = prove(broken, b.c);
    EXPECT_NE(error, "") << b.what;
    EXPECT_NE(error.find(b.says), std::string::npos) << b.what << ": " << error;
  }
}

}  // namespace
}  // namespace chorus
