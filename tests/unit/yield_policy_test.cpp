// Whether a waiting rank polls with sched_yield (src/engine/yield_policy.hpp): yields that
// come back quickly keep it yielding; one that took a tick ends this wait's yielding and
// makes the next kFirstSkip waits sleep at once; a probe that meets another long yield
// doubles that, up to kMaxSkip; kShortProbes probes in a row with short yields halve it. Pure
// arithmetic on given durations: no clock.
#include "engine/yield_policy.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using chorus::YieldPolicy;

namespace {

// Waits that sleep at once before the next one yields again.
int sleepsBeforeNextYield(YieldPolicy& policy) {
  int sleeps = 0;
  while (!policy.startYielding()) ++sleeps;
  return sleeps;
}

}  // namespace

TEST(YieldPolicy, ShortYieldsKeepYielding) {
  YieldPolicy policy;
  for (int wait = 0; wait < 100; ++wait) {
    ASSERT_TRUE(policy.startYielding());
    // A peer that polls or moves a slice: microseconds, up to just under the threshold.
    EXPECT_TRUE(policy.yielded(2us));
    EXPECT_TRUE(policy.yielded(YieldPolicy::kLongYield - 1ns));
    policy.yieldsWereShort();
  }
  EXPECT_EQ(policy.skip(), 0);
}

TEST(YieldPolicy, ATickLongYieldEndsTheWaitsYieldingAndSkipsTheNextWaits) {
  YieldPolicy policy;
  ASSERT_TRUE(policy.startYielding());
  EXPECT_TRUE(policy.yielded(3us));
  EXPECT_FALSE(policy.yielded(3900us));  // EEVDF, HZ 250: the computing thread's slice
  EXPECT_EQ(policy.skip(), YieldPolicy::kFirstSkip);
  EXPECT_EQ(sleepsBeforeNextYield(policy), YieldPolicy::kFirstSkip);
  EXPECT_EQ(policy.skipLeft(), 0);
}

TEST(YieldPolicy, ALongProbeAfterShortOnesStillDoubles) {
  YieldPolicy policy;
  policy.yielded(4ms);
  sleepsBeforeNextYield(policy);  // skip 8
  for (int probe = 1; probe < YieldPolicy::kShortProbes; ++probe) {
    policy.yieldsWereShort();
    sleepsBeforeNextYield(policy);
  }
  EXPECT_FALSE(policy.yielded(4ms));  // the run of short probes is broken: 16, and it restarts
  EXPECT_EQ(policy.skip(), 16);
  sleepsBeforeNextYield(policy);
  for (int probe = 1; probe < YieldPolicy::kShortProbes; ++probe) {
    policy.yieldsWereShort();
    EXPECT_EQ(policy.skip(), 16);
    sleepsBeforeNextYield(policy);
  }
  policy.yieldsWereShort();
  EXPECT_EQ(policy.skip(), 8);
}

TEST(YieldPolicy, RepeatedLongProbesDoubleTheSkipUpToTheMost) {
  YieldPolicy policy;
  int expected = YieldPolicy::kFirstSkip;
  for (int probe = 0; probe < 20; ++probe) {
    ASSERT_TRUE(policy.startYielding());
    EXPECT_FALSE(policy.yielded(YieldPolicy::kLongYield));  // exactly the threshold is long
    EXPECT_EQ(policy.skip(), expected);
    EXPECT_EQ(sleepsBeforeNextYield(policy), expected);
    expected = std::min(2 * expected, YieldPolicy::kMaxSkip);
  }
  EXPECT_EQ(policy.skip(), YieldPolicy::kMaxSkip);
}

TEST(YieldPolicy, ShortProbesHalveTheSkipBackToYieldingEveryWait) {
  YieldPolicy policy;
  for (int probe = 0; probe < 4; ++probe) {  // 8, 16, 32, 64
    ASSERT_TRUE(policy.startYielding());
    policy.yielded(4ms);
    sleepsBeforeNextYield(policy);
  }
  ASSERT_EQ(policy.skip(), 64);
  // The computing thread went away: each probe's yields come back quickly. The skip
  // stays until kShortProbes of them in a row, then halves.
  int skip = 64;
  for (int expected : {32, 16, 8, 0}) {
    for (int probe = 1; probe < YieldPolicy::kShortProbes; ++probe) {
      EXPECT_TRUE(policy.yielded(5us));
      policy.yieldsWereShort();
      EXPECT_EQ(policy.skip(), skip);
      EXPECT_EQ(sleepsBeforeNextYield(policy), skip);
    }
    EXPECT_TRUE(policy.yielded(5us));
    policy.yieldsWereShort();
    EXPECT_EQ(policy.skip(), expected);
    EXPECT_EQ(sleepsBeforeNextYield(policy), expected);
    skip = expected;
  }
  for (int wait = 0; wait < 10; ++wait) EXPECT_TRUE(policy.startYielding());
}

TEST(YieldPolicy, NotAdaptiveAlwaysYields) {
  YieldPolicy policy(/*adaptive=*/false);
  for (int wait = 0; wait < 10; ++wait) {
    ASSERT_TRUE(policy.startYielding());
    EXPECT_TRUE(policy.yielded(10ms));
    policy.yieldsWereShort();
  }
  EXPECT_EQ(policy.skip(), 0);
}

// forget(): back to a fresh policy, as the tuning probe asks before each block
// (Engine::resetYieldPolicy): a learnt skip and a run of short probes are both gone.
TEST(YieldPolicy, ForgetYieldsAtTheNextWait) {
  YieldPolicy policy;
  policy.yielded(4ms);
  sleepsBeforeNextYield(policy);
  policy.yielded(4ms);  // skip 16, all 16 still to come
  ASSERT_EQ(policy.skipLeft(), 16);
  policy.forget();
  EXPECT_EQ(policy.skip(), 0);
  EXPECT_EQ(policy.skipLeft(), 0);
  EXPECT_TRUE(policy.startYielding());
}

TEST(YieldPolicy, ForgetStartsOverAsAFreshPolicy) {
  YieldPolicy policy, fresh;
  policy.yielded(4ms);
  sleepsBeforeNextYield(policy);
  for (int probe = 1; probe < YieldPolicy::kShortProbes; ++probe) {
    policy.yieldsWereShort();  // one short probe short of halving
    sleepsBeforeNextYield(policy);
  }
  policy.forget();
  // A long yield now starts at kFirstSkip (not doubled), as on a fresh policy.
  EXPECT_FALSE(policy.yielded(4ms));
  EXPECT_FALSE(fresh.yielded(4ms));
  EXPECT_EQ(policy.skip(), YieldPolicy::kFirstSkip);
  EXPECT_EQ(policy.skip(), fresh.skip());
  // And the run of short probes counts from zero: halving takes kShortProbes more.
  for (int probe = 1; probe < YieldPolicy::kShortProbes; ++probe) {
    policy.yieldsWereShort();
    EXPECT_EQ(policy.skip(), YieldPolicy::kFirstSkip);
  }
  policy.yieldsWereShort();
  EXPECT_EQ(policy.skip(), 0);
}

// yielding() says what startYielding() would, without counting a wait (the engine's
// hand-over at the start of a large call asks it).
TEST(YieldPolicy, YieldingAsksWithoutCountingAWait) {
  YieldPolicy policy;
  EXPECT_TRUE(policy.yielding());
  policy.yielded(4ms);
  for (int ask = 0; ask < 3 * YieldPolicy::kFirstSkip; ++ask) EXPECT_FALSE(policy.yielding());
  EXPECT_EQ(policy.skipLeft(), YieldPolicy::kFirstSkip);
  EXPECT_EQ(sleepsBeforeNextYield(policy), YieldPolicy::kFirstSkip);
  EXPECT_TRUE(policy.yielding());
}
