// The call fingerprint (engine/wire_header.hpp): which differences between two ranks'
// calls are mismatches, and that the error names the peer and what it called, exactly.
#include "engine/wire_header.hpp"

#include "algorithms/algorithms.hpp"

#include <gtest/gtest.h>

#include <string>

namespace chorus::detail {
namespace {

OpState call(Collective c, size_t count, DataType type, RedOp op = RedOp::Sum, int root = 0) {
  OpState s;
  s.collective = c;
  s.count = count;
  s.type = type;
  s.op = op;
  s.root = root;
  s.algorithmIndex = 0;
  return s;
}

TEST(WireHeader, MismatchNamesThePeerAndItsCall) {
  const OpState mine = call(Collective::AllReduce, 1000, DataType::Float32);
  WireHeader theirs = headerOf(mine);
  theirs.count = 500;
  const std::string algo0 = allAlgorithms()[0].name;
  EXPECT_EQ(mismatch(mine, theirs, 7),
            "mismatched calls: rank 7 called allReduce #0 (500 x float sum, " + algo0 + ")");
  theirs.count = 1000;
  theirs.sequence = 41;  // the sequence is descriptive: the streams' order pairs the calls
  EXPECT_EQ(mismatch(mine, theirs, 7), std::nullopt);
  theirs.op = static_cast<uint8_t>(RedOp::Max);
  EXPECT_EQ(mismatch(mine, theirs, 2),
            "mismatched calls: rank 2 called allReduce #41 (1000 x float max, " + algo0 + ")");
  theirs = headerOf(mine);
  theirs.type = static_cast<uint8_t>(DataType::Int32);
  EXPECT_NE(mismatch(mine, theirs, 1), std::nullopt);
  theirs = headerOf(mine);
  theirs.algorithm = 1;
  EXPECT_NE(mismatch(mine, theirs, 1), std::nullopt) << "another algorithm";
  theirs = headerOf(mine);
  theirs.collective = static_cast<uint8_t>(Collective::ReduceScatter);
  EXPECT_NE(mismatch(mine, theirs, 1), std::nullopt) << "another collective";
  theirs = headerOf(mine);
  theirs.magic = 0;
  const auto damaged = mismatch(mine, theirs, 4);
  ASSERT_NE(damaged, std::nullopt);
  EXPECT_NE(damaged->find("the stream from rank 4 is out of step"), std::string::npos) << *damaged;
}

TEST(WireHeader, RootMattersOnlyForRootedCollectives) {
  const OpState reduceAll = call(Collective::AllReduce, 16, DataType::Float64);
  WireHeader theirs = headerOf(reduceAll);
  theirs.root = 3;
  EXPECT_EQ(mismatch(reduceAll, theirs, 1), std::nullopt);
  const OpState bcast = call(Collective::Broadcast, 16, DataType::Float64, RedOp::Sum, 0);
  theirs = headerOf(bcast);
  theirs.root = 3;
  const auto m = mismatch(bcast, theirs, 1);
  ASSERT_NE(m, std::nullopt);
  EXPECT_NE(m->find("rank 1 called broadcast #0 (16 x double, "), std::string::npos) << *m;
  EXPECT_NE(m->find(", root 3)"), std::string::npos) << *m;
  // The op does not matter where nothing is reduced.
  theirs = headerOf(bcast);
  theirs.op = static_cast<uint8_t>(RedOp::Prod);
  EXPECT_EQ(mismatch(bcast, theirs, 1), std::nullopt);
}

TEST(WireHeader, SendMatchesARecvOfTheSameCountAndType) {
  const OpState recv = call(Collective::Recv, 64, DataType::Float32);
  const OpState send = call(Collective::Send, 64, DataType::Float32);
  EXPECT_EQ(mismatch(recv, headerOf(send), 0), std::nullopt);
  EXPECT_EQ(mismatch(send, headerOf(recv), 0), std::nullopt);
  EXPECT_NE(mismatch(recv, headerOf(recv), 0), std::nullopt) << "a recv facing a recv";
  EXPECT_NE(mismatch(recv, headerOf(call(Collective::Send, 64, DataType::Int32)), 0), std::nullopt)
      << "same count and size, another type";
  EXPECT_NE(mismatch(recv, headerOf(call(Collective::Send, 63, DataType::Float32)), 0),
            std::nullopt);
}

TEST(WireHeader, PerRankCountsAreCompared) {
  OpState mine = call(Collective::AllGatherV, 10, DataType::Int8);
  mine.countsHash = 1234;
  WireHeader theirs = headerOf(mine);
  EXPECT_EQ(mismatch(mine, theirs, 5), std::nullopt);
  theirs.countsHash = 99;
  const auto m = mismatch(mine, theirs, 5);
  ASSERT_NE(m, std::nullopt);
  EXPECT_NE(m->find("rank 5 called "), std::string::npos) << *m;
  EXPECT_NE(m->find(" with other per-rank counts"), std::string::npos) << *m;
}

}  // namespace
}  // namespace chorus::detail
