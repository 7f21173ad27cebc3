// Growing a communicator: the rules a joining replacement meets, in one process (the
// full grow across processes is tests/trainer/grow_back.sh).
#include "bootstrap/bootstrap.hpp"
#include "comm/comm_impl.hpp"
#include "store/store.hpp"
#include "time_bounds.hpp"

#include <chorus/chorus.h>

#include <gtest/gtest.h>

#include <future>
#include <string>

using namespace chorus;
using namespace std::chrono_literals;

namespace {

Error caught(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e;
  }
  return Error(Result::Success, "no error");
}

Options quick() {
  Options o;
  o.timeout = 400ms;
  return o;
}

}  // namespace

// A replacement of an epoch no newer than one that joined is refused; one no grow admits
// gives up at its timeout saying the members must grow.
TEST(GrowJoin, StaleEpochIsRefusedAndAnUnadmittedJoinTimesOut) {
  const auto secret = security::JobSecret::fromHex("0123456789abcdef", "test");
  TcpStoreServer server(net::SocketAddress::parse("127.0.0.1", 0), secret, -1);
  const Rendezvous rendezvous{server.address(), secret};
  Error late = caught([&] { detail::CommImpl::join(rendezvous, 1, 3, 2, quick()); });
  EXPECT_EQ(late.code(), Result::Timeout) << late.what();
  EXPECT_NE(std::string(late.what()).find("launch rank 1, epoch 2: no communicator admitted it"),
            std::string::npos)
      << late.what();
  EXPECT_NE(std::string(late.what()).find("must call grow()"), std::string::npos) << late.what();
  for (int epoch : {1, 2}) {
    Error stale = caught([&] { detail::CommImpl::join(rendezvous, 1, 3, epoch, quick()); });
    EXPECT_EQ(stale.code(), Result::InvalidUsage) << stale.what();
    EXPECT_NE(std::string(stale.what()).find("is stale: epoch 2 of that rank has joined already"),
              std::string::npos)
        << stale.what();
  }
  Error bad = caught([&] { detail::CommImpl::join(rendezvous, 3, 3, 1, quick()); });
  EXPECT_EQ(bad.code(), Result::InvalidArgument) << bad.what();
}

// grow() with nobody joining gives up at the timeout, naming what it waited for.
TEST(GrowJoin, GrowWithoutNewcomerTimesOut) {
  Communicator comm = Communicator::init(0, 1, getUniqueId(), quick());
  EXPECT_EQ(comm.pendingJoins(), 0);
  Error e = caught([&] { comm.grow(1); });
  EXPECT_EQ(e.code(), Result::Timeout) << e.what();
  EXPECT_NE(std::string(e.what()).find("for newcomer 1 of 1; none called join"), std::string::npos)
      << e.what();
  EXPECT_EQ(caught([&] { comm.grow(0); }).code(), Result::InvalidArgument);
}

// A process claiming the launch rank of a live member is not admitted: grow() fails with
// the reason and the joiner gets it too.
TEST(GrowJoin, LiveMembersRankCannotJoinAgain) {
  const UniqueId id = getUniqueId();
  Communicator comm = Communicator::init(0, 1, id, quick());
  // The joiner waits for the refusal longer than quick()'s 400 ms: that time also covers
  // this thread's polls and grow(), which a loaded or instrumented run can stretch.
  Options patient;
  patient.timeout = chorus::test::within(std::chrono::milliseconds(5000));
  auto joiner = std::async(std::launch::async, [&] {
    return caught([&] { detail::CommImpl::join(decodeUniqueId(id), 0, 1, 1, patient); });
  });
  for (auto giveUp = std::chrono::steady_clock::now() + 5s;
       comm.pendingJoins() == 0 && std::chrono::steady_clock::now() < giveUp;)
    std::this_thread::sleep_for(5ms);
  ASSERT_EQ(comm.pendingJoins(), 1);
  Error grown = caught([&] { comm.grow(1); });
  EXPECT_EQ(grown.code(), Result::InvalidUsage) << grown.what();
  EXPECT_NE(std::string(grown.what()).find("launch rank 0, which a member of this communicator"),
            std::string::npos)
      << grown.what();
  Error refused = joiner.get();
  EXPECT_EQ(refused.code(), Result::RemoteError) << refused.what();
  EXPECT_NE(std::string(refused.what()).find("rank 0 of the growing communicator failed"),
            std::string::npos)
      << refused.what();
  EXPECT_EQ(comm.pendingJoins(), 0);  // the arrival was taken, and refused
}

// The C API's grow, pending joins and failed ranks on a healthy 1-rank communicator.
TEST(GrowJoin, CApi) {
  chorusUniqueId id;
  ASSERT_EQ(chorusGetUniqueId(&id), chorusSuccess);
  chorusComm_t comm = nullptr;
  ASSERT_EQ(chorusCommInitRank(&comm, 1, id, 0), chorusSuccess);
  int pending = -1, failed = -1;
  EXPECT_EQ(chorusCommPendingJoins(comm, &pending), chorusSuccess);
  EXPECT_EQ(pending, 0);
  EXPECT_EQ(chorusCommGetFailedRanks(comm, nullptr, 0, &failed), chorusSuccess);
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(chorusCommGetFailedRanks(comm, nullptr, 1, &failed), chorusInvalidArgument);
  chorusComm_t grown = reinterpret_cast<chorusComm_t>(&pending);  // must be reset
  EXPECT_EQ(chorusCommGrow(comm, 0, &grown), chorusInvalidArgument);
  EXPECT_EQ(grown, nullptr);
  EXPECT_NE(std::string(chorusGetLastError(comm)).find("newcomers must be >= 1"),
            std::string::npos);
  EXPECT_EQ(chorusCommDestroy(comm), chorusSuccess);
}
