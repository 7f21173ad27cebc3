// The waiting rank's pause budget (src/engine/spin_budget.hpp): grows while the peers
// answer within it or just after it, halves when a wait outlasts it, stays within
// [floor, limit], and is zero when pausing is off. Pure arithmetic on given durations:
// no clock.
#include "engine/spin_budget.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using chorus::SpinBudget;

TEST(SpinBudget, GrowsWhileAnswersComeWithinIt) {
  SpinBudget budget(20us);
  EXPECT_EQ(budget.budget(), SpinBudget::kFloor);
  // 250 ns: an answer after 100 ns grows it by a quarter (312 ns, more than 2 x 100).
  budget.answered(100ns);
  EXPECT_EQ(budget.budget(), 312ns);
  // An answer after 200 ns: twice that (400 ns) beats a quarter more (390 ns).
  budget.answered(200ns);
  EXPECT_EQ(budget.budget(), 400ns);
  for (int i = 0; i < 40; ++i) budget.answered(budget.budget() / 2);
  EXPECT_EQ(budget.budget(), 20us);
}

TEST(SpinBudget, ANearMissGrowsItToTwiceTheWait) {
  // The typical quiet np=2 case: the answer comes at 400-600 ns, past the 250 ns floor.
  SpinBudget budget(20us);
  budget.expired();  // the wait ran past 250 ns: stays at the floor
  EXPECT_EQ(budget.budget(), 250ns);
  budget.answered(600ns);  // within 4 x 250 ns
  EXPECT_EQ(budget.budget(), 1200ns);
  budget.answered(500ns);  // within it now: a quarter more
  EXPECT_EQ(budget.budget(), 1500ns);
}

TEST(SpinBudget, HalvesWhenAWaitOutlastsItDownToTheFloor) {
  SpinBudget budget(20us);
  budget.answered(10us);  // long after the 250 ns budget: no growth
  EXPECT_EQ(budget.budget(), 250ns);
  for (int i = 0; i < 40; ++i) budget.answered(budget.budget());
  ASSERT_EQ(budget.budget(), 20us);
  budget.expired();
  EXPECT_EQ(budget.budget(), 10us);
  budget.answered(41us);  // beyond 4 x 10 us: the peer was off its core
  EXPECT_EQ(budget.budget(), 10us);
  for (int i = 0; i < 20; ++i) budget.expired();
  EXPECT_EQ(budget.budget(), SpinBudget::kFloor);
}

TEST(SpinBudget, ZeroLimitNeverPauses) {
  SpinBudget budget(0ns);
  EXPECT_EQ(budget.budget(), 0ns);
  budget.answered(0ns);
  budget.expired();
  budget.answered(0ns);
  EXPECT_EQ(budget.budget(), 0ns);
}

TEST(SpinBudget, LimitBelowTheFloorCapsIt) {
  SpinBudget budget(100ns);
  EXPECT_EQ(budget.budget(), 100ns);
  budget.expired();
  EXPECT_EQ(budget.budget(), 100ns);
  budget.answered(50ns);
  EXPECT_EQ(budget.budget(), 100ns);
}
