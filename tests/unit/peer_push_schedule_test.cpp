// peer_push (algorithms/peer_push_allreduce.cpp) with small chunks, so that every part is
// cut into several rounds: the registered schedule's chunks are 256 Ki elements, more
// than the other proofs' counts, which therefore prove it with one round only.
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
Schedule pushInChunksOf(const CollectiveArgs& args) {
  return peerPushAllReduceChunked(args, kChunk);
}

TEST(Schedule, PeerPushInSmallChunksAtRankCounts1To9) {
  const Algorithm chunked[] = {
      {"push1", Collective::AllReduce, pushInChunksOf<1>, "", true},
      {"push3", Collective::AllReduce, pushInChunksOf<3>, "", true},
  };
  for (const Algorithm& a : chunked)
    for (int p = 1; p <= 9; ++p)
      for (size_t count : {size_t{1}, size_t(p - 1), size_t(3 * p + 2), size_t(7 * p + 5)})
        for (bool inPlace : {false, true})
          for (bool fused : {false, true}) {  // with the engine's one-pass folds (rule 6)
            ASSERT_EQ(prove(a, Case{p, count, 0, inPlace, kElementWise, -1, nullptr, fused}), "")
                << a.name << " p " << p << " count " << count << " in place " << inPlace;
            if (p > 1)
              ASSERT_EQ(prove(a, Case{p, count, 0, inPlace, 2, /*late=*/p / 2, nullptr, fused}), "")
                  << a.name << " p " << p << " count " << count << " late rank";
          }
}

// A round's write waits for the first fold of its chunk only (partial sums reach the
// peers while the chunk is still being folded).
Schedule earlyWritePushInChunks(const CollectiveArgs& args) {
  Schedule s = peerPushAllReduceChunked(args, 2);
  int firstFold = -1;
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    Step& step = s.steps[i];
    if (step.kind == StepKind::PeerReduce &&
        (i == 0 || s.steps[i - 1].kind != StepKind::PeerReduce))
      firstFold = i;
    if (step.kind == StepKind::PeerWrite) step.after = firstFold;
  }
  return s;
}

TEST(Schedule, TheCheckerRejectsBrokenPushSchedules) {
  const Algorithm broken{"broken", Collective::AllReduce, earlyWritePushInChunks, "", true};
  // Rank 1 late: its writes run last, so its reads are over before its "written" (else
  // that shows first: schedule_checker_test.cpp, "written before the reads are over").
  const std::string error = prove(broken, Case{3, 13, 0, false, kElementWise, /*late=*/1});
  EXPECT_NE(error.find("want ranks {[0,3)}"), std::string::npos) << error;
}

}  // namespace
}  // namespace chorus
