// AlgorithmChoice (CHORUS_ALGO, Communicator::setAlgorithm): forcing, and exclusion with
// "^name", as NCCL_ALGO spells it. The expected sets are built here from allAlgorithms(), not
// from AlgorithmChoice.
#include "comm/algorithm_choice.hpp"

#include "errors.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace chorus {
namespace {

std::set<std::string> names(std::span<const Algorithm* const> algorithms) {
  std::set<std::string> out;
  for (const Algorithm* a : algorithms) out.insert(a->name);
  return out;
}

// The copy-path algorithms of a collective, less `without`.
std::set<std::string> copyPath(Collective c, const std::set<std::string>& without = {}) {
  std::set<std::string> out;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == c && !a.oneSided && !without.count(a.name)) out.insert(a.name);
  return out;
}

TEST(AlgorithmChoice, ByDefaultEveryCopyPathAlgorithmIsACandidate) {
  AlgorithmChoice choice;
  EXPECT_EQ(names(choice.candidates(Collective::AllReduce)), copyPath(Collective::AllReduce));
  EXPECT_EQ(choice.forced(Collective::AllReduce), nullptr);
  EXPECT_GE(copyPath(Collective::AllReduce).size(), 4u);  // ring, rd, rhd, twoshot, ...
}

TEST(AlgorithmChoice, ExcludedAlgorithmsAreNoCandidates) {
  AlgorithmChoice choice;
  choice.apply("allreduce:^ring,allreduce:^rd");
  EXPECT_EQ(names(choice.candidates(Collective::AllReduce)),
            copyPath(Collective::AllReduce, {"ring", "rd"}));
  EXPECT_TRUE(choice.excluded(*findAlgorithm(Collective::AllReduce, "ring")));
  EXPECT_TRUE(choice.excluded(*findAlgorithm(Collective::AllReduce, "rd")));
  EXPECT_FALSE(choice.excluded(*findAlgorithm(Collective::AllReduce, "rhd")));
  // Only the collective named: all-gather keeps its ring.
  EXPECT_EQ(names(choice.candidates(Collective::AllGather)), copyPath(Collective::AllGather));
  EXPECT_FALSE(choice.excluded(*findAlgorithm(Collective::AllGather, "ring")));
}

TEST(AlgorithmChoice, ExclusionWithoutACollectiveAppliesToEveryOneThatHasTheName) {
  AlgorithmChoice choice;
  choice.apply("^ring");
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    ASSERT_NE(findAlgorithm(c, "ring"), nullptr) << toString(c);
    EXPECT_EQ(names(choice.candidates(c)), copyPath(c, {"ring"})) << toString(c);
  }
}

TEST(AlgorithmChoice, OneSidedAlgorithmsCanBeExcluded) {
  // peer_staged is chosen apart from the candidates (Tuner::chooseStaged asks excluded()).
  const Algorithm* staged = findAlgorithm(Collective::AllReduce, "peer_staged");
  ASSERT_NE(staged, nullptr);
  AlgorithmChoice choice;
  EXPECT_FALSE(choice.excluded(*staged));
  choice.apply("allreduce:^peer_staged");
  EXPECT_TRUE(choice.excluded(*staged));
}

TEST(AlgorithmChoice, ForcingAndExclusionUndoEachOther) {
  AlgorithmChoice choice;
  choice.apply("allreduce:ring");
  EXPECT_STREQ(choice.forced(Collective::AllReduce)->name, "ring");
  choice.apply("allreduce:^ring");  // excluding the forced one drops the forcing
  EXPECT_EQ(choice.forced(Collective::AllReduce), nullptr);
  EXPECT_FALSE(names(choice.candidates(Collective::AllReduce)).count("ring"));
  choice.apply("allreduce:ring");  // forcing it again lifts the exclusion
  EXPECT_STREQ(choice.forced(Collective::AllReduce)->name, "ring");
  EXPECT_FALSE(choice.excluded(*findAlgorithm(Collective::AllReduce, "ring")));
  EXPECT_EQ(names(choice.candidates(Collective::AllReduce)), copyPath(Collective::AllReduce));
}

TEST(AlgorithmChoice, ExcludingEveryAlgorithmIsAnErrorAndChangesNothing) {
  AlgorithmChoice choice;
  choice.apply("allreduce:^rd");
  std::string all;
  for (const std::string& n : copyPath(Collective::AllReduce)) all += "allreduce:^" + n + ",";
  try {
    choice.apply(all);
    FAIL() << "no error for " << all;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("leave no allReduce algorithm"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(names(choice.candidates(Collective::AllReduce)),
            copyPath(Collective::AllReduce, {"rd"}));
}

TEST(AlgorithmChoice, UnknownNamesAreErrors) {
  AlgorithmChoice choice;
  EXPECT_THROW(choice.apply("allreduce:^nosuch"), Error);
  EXPECT_THROW(choice.apply("nocollective:ring"), Error);
  EXPECT_EQ(names(choice.candidates(Collective::AllReduce)), copyPath(Collective::AllReduce));
}

}  // namespace
}  // namespace chorus
