// The waiting rank's pause budget (src/engine/spin_budget.hpp): grows while the peers
// answer within it, halves when a wait outlasts it, stays within [floor, limit], and is
// zero when pausing is off. Pure arithmetic on given durations: no clock.
#include "engine/spin_budget.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using chorus::SpinBudget;

TEST(SpinBudget, GrowsToTheLimitWhileAnswersComeWithinIt) {
  SpinBudget budget(20us);
  EXPECT_EQ(budget.budget(), SpinBudget::kFloor);
  // 250 -> 250 + 62 + 250 = 562 (an answer after 100 ns counts as the floor).
  budget.answered(100ns);
  EXPECT_EQ(budget.budget(), 562ns);
  for (int i = 0; i < 40; ++i) budget.answered(budget.budget() / 2);
  EXPECT_EQ(budget.budget(), 20us);
  budget.answered(1us);
  EXPECT_EQ(budget.budget(), 20us);
}

TEST(SpinBudget, HalvesWhenAWaitOutlastsItDownToTheFloor) {
  SpinBudget budget(20us);
  for (int i = 0; i < 40; ++i) budget.answered(budget.budget());
  ASSERT_EQ(budget.budget(), 20us);
  budget.expired();
  EXPECT_EQ(budget.budget(), 10us);
  // An answer after the budget ran out was already counted as expired: no growth.
  budget.answered(15us);
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
