// The replay follows the engine's rules (algorithms/schedule_rules.hpp) on hand-built
// schedules whose times are worked out by hand: an empty step completes only once its
// `after` has (rule 3), messages are padded to 8 bytes and the call's 32-byte header goes
// with the first message of each queue (rule 5), and a lone Send/Recv is timed by the
// same replay. Link: 10 us latency, 1000 B/us, free local work, no per-message overhead
// unless stated.
#include "algorithms/steps.hpp"
#include "sim/replay.hpp"
#include "tuner/cost_model.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace chorus::sim {
namespace {

using namespace steps;

const double kFree = std::numeric_limits<double>::infinity();
const LinkModel kLink{10, 1000, kFree, kFree, 0};

double replayed(const std::vector<Schedule>& schedules, const LinkModel& link = kLink) {
  LinkClassNetwork net(static_cast<int>(schedules.size()), link);
  const ReplayResult r = replay(schedules, 1, net);
  EXPECT_FALSE(r.deadlock);
  return r.micros;
}

// Rank 0 forwards an empty step to rank 2 after a 1 MB receive from rank 1, then 8 bytes
// in the same queue. The 8 bytes wait for the empty step, which waits for the receive:
// (1e6 + 32 header) B / 1000 + 10 us, then (8 + 32) B / 1000 + 10 us.
TEST(SimReplayRules, EmptyStepWaitsForItsAfter) {
  std::vector<Schedule> s(3);
  const int received = recv(s[0], 1, out(0, 1000000));
  send(s[0], 2, out(0, 0), received);
  send(s[0], 2, in(0, 8));
  send(s[1], 0, in(0, 1000000));
  recv(s[2], 0, out(0, 8));
  EXPECT_NEAR(replayed(s), 1000.032 + 10 + 0.040 + 10, 1e-9);
}

// Two 5-byte messages on one queue: 8 + 32 bytes, then 8 bytes, then the latency.
TEST(SimReplayRules, MessagesArePaddedAndTheFirstCarriesTheCallHeader) {
  std::vector<Schedule> s(2);
  send(s[0], 1, in(0, 5));
  send(s[0], 1, in(5, 5));
  recv(s[1], 0, out(0, 5));
  recv(s[1], 0, out(5, 5));
  EXPECT_NEAR(replayed(s), 0.040 + 0.008 + 10, 1e-9);
}

// A lone Send or Recv of 5 floats (20 B: 24 padded + 32 header) with 2 us overhead on each
// side: the same replay, not a formula of its own.
TEST(SimReplayRules, SendAndRecvAreReplayed) {
  const LinkModel link{10, 1000, kFree, kFree, 2};
  const double expected = 2 + 0.056 + 10 + 2;
  for (Collective c : {Collective::Send, Collective::Recv}) {
    const Algorithm* direct = findAlgorithm(c, "direct");
    ASSERT_NE(direct, nullptr);
    EXPECT_NEAR(predictMicros(*direct, c, 2, 5, 4, link), expected, 1e-9) << toString(c);
    EXPECT_EQ(predictMicros(*direct, c, 2, 0, 4, link), 0) << toString(c);
  }
}

}  // namespace
}  // namespace chorus::sim
