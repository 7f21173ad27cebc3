// The store's rules (store.hpp): a rank belongs to the process that claimed it first, a
// key to the client that set it first, frames and holdings are capped, and with a derived
// secret only the job's uid may connect from this host. Each refusal is a clear error
// (or a dropped connection for raw protocol abuse), and the store keeps serving the
// others. Strangers are real processes (fork; setuid for another uid).
#include "../common/store_support.hpp"
#include "errors.hpp"
#include "store/store.hpp"
#include "store/store_wire.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

using namespace chorus;
using namespace chorus::test_support;
using namespace std::chrono_literals;

namespace {

const security::JobSecret kStoreSecret = security::JobSecret::fromHex("c0ffee", "test");

// Runs `child` in a forked process (as `uid` when >= 0) and returns its exit code.
int inChild(const std::function<int()>& child, int uid = -1) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 99;
    try {
      if (uid >= 0 && (::setgid(gid_t(uid)) != 0 || ::setuid(uid_t(uid)) != 0)) ::_exit(98);
      rc = child();
    } catch (...) {
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// 0: the client was refused in the expected way; 1: let in; 2: refused otherwise.
int claimFails(const net::SocketAddress& at, int rank, const std::string& want) {
  try {
    TcpStoreClient(at, kStoreSecret, rank, deadlineIn(10s));
    return 1;
  } catch (const Error& e) {
    return e.code() == Result::InvalidUsage && says(e, want) ? 0 : 2;
  }
}

}  // namespace

TEST(StoreRules, ARankBelongsToTheProcessThatClaimedIt) {
  auto server = loopbackStore(kStoreSecret);
  auto at = server->address();
  auto mine = std::make_unique<TcpStoreClient>(at, kStoreSecret, 1, deadlineIn(10s));
  // This process may open another client for its rank (one per communicator) ...
  auto second = std::make_unique<TcpStoreClient>(at, kStoreSecret, 1, deadlineIn(10s));
  // ... another process may not, and the rank is not reported dead by its attempt.
  EXPECT_EQ(inChild([&] { return claimFails(at, 1, "rank 1 is already held"); }), 0);
  EXPECT_EQ(mine->deadRanks(), std::vector<int>{});
  mine->set("still", bytes("serving"));
  EXPECT_EQ(text(second->get("still", deadlineIn(5s))), "serving");
  // Once every client of rank 1 has left cleanly, the rank is free for a new process.
  mine->goodbye();
  second->goodbye();
  EXPECT_EQ(inChild([&] {
              TcpStoreClient next(at, kStoreSecret, 1, deadlineIn(10s));
              next.goodbye();
              return 0;
            }),
            0);
  // A rank that died stays with its process: nobody takes its place.
  auto observer = std::make_unique<TcpStoreClient>(at, kStoreSecret, -1, deadlineIn(10s));
  EXPECT_EQ(inChild([&] {
              TcpStoreClient dies(at, kStoreSecret, 2, deadlineIn(10s));
              return 0;  // exits without goodbye
            }),
            0);
  auto deadline = deadlineIn(10s);
  while (observer->deadRanks().empty() && Clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(observer->deadRanks(), std::vector<int>{2});
  EXPECT_EQ(inChild([&] { return claimFails(at, 2, "rank 2 died"); }), 0);
}

TEST(StoreRules, AKeyBelongsToItsFirstSetter) {
  auto server = loopbackStore(kStoreSecret);
  auto at = server->address();
  TcpStoreClient rank0(at, kStoreSecret, 0, deadlineIn(10s)),
      rank1(at, kStoreSecret, 1, deadlineIn(10s));
  rank0.set("tcp/0/token", bytes("secret-of-0"));
  Error e = errorOf([&] { rank1.set("tcp/0/token", bytes("forged")); });
  EXPECT_EQ(e.code(), Result::InvalidUsage);
  EXPECT_TRUE(says(e, "belongs to rank 0")) << e.what();
  EXPECT_TRUE(says(errorOf([&] { rank1.add("tcp/0/token", 1); }), "not a counter"));
  rank1.set("tcp/0/token", bytes("secret-of-0"));  // the same bytes change nothing: allowed
  EXPECT_EQ(text(rank1.get("tcp/0/token", deadlineIn(5s))), "secret-of-0");
  rank0.set("tcp/0/token", bytes("new"));  // its owner may change it
  EXPECT_EQ(text(rank1.get("tcp/0/token", deadlineIn(5s))), "new");
  // Counters (made by add) take everybody's adds, and nobody's set.
  EXPECT_EQ(rank0.add("barrier", 1), 1);
  EXPECT_EQ(rank1.add("barrier", 1), 2);
  EXPECT_TRUE(says(errorOf([&] { rank1.set("barrier", bytes("x")); }), "a counter: only add"));
  EXPECT_TRUE(says(errorOf([&] { rank0.set("barrier", bytes("x")); }), "a counter: only add"));
  // Refusals leave both clients usable, and nobody is reported dead.
  EXPECT_EQ(rank0.add("barrier", 1), 3);
  EXPECT_EQ(rank0.deadRanks(), std::vector<int>{});
  rank0.goodbye();
  rank1.goodbye();
}

TEST(StoreRules, OversizeFramesAndHoldingsAreRefused) {
  auto server = loopbackStore(kStoreSecret);
  auto at = server->address();
  TcpStoreClient client(at, kStoreSecret, 0, deadlineIn(10s));
  // The client refuses to send a value over the cap, and stays usable.
  std::string big(store_wire::kMaxValue + 1, 'v');
  EXPECT_EQ(errorOf([&] { client.set("big", bytes(big)); }).code(), Result::InvalidArgument);
  EXPECT_EQ(client.add("n", 1), 1);

  // A raw client that authenticates, says hello, then announces a frame over the cap is
  // dropped at once, before the server buffers it.
  std::string hello = store_wire::helloPayload(-1, std::string(store_wire::kIncarnation, 'r'));
  auto raw = authenticatedStoreSocket(at, kStoreSecret, hello, deadlineIn(5s));
  std::string frame = store_wire::frame(store_wire::kHello, 1, hello);
  raw.sendAll(frame.data(), frame.size(), deadlineIn(5s));
  char answer[store_wire::kHeader + 4];
  raw.recvAll(answer, sizeof(answer), deadlineIn(5s));
  EXPECT_EQ(uint8_t(answer[4]), store_wire::kHelloOk);
  std::string header;
  store_wire::putInt(header, uint64_t(store_wire::kMaxFrame) + 1, 4);
  header += std::string(1, char(store_wire::kSet)) + std::string(4, '\0');
  raw.sendAll(header.data(), header.size(), deadlineIn(5s));
  EXPECT_TRUE(closedWithin(raw, 5s));
  // Before authentication the cap is the hello's size.
  auto early = authenticatedStoreSocket(at, kStoreSecret, hello, deadlineIn(5s));
  std::string long_hello;
  store_wire::putInt(long_hello, store_wire::kMaxHelloFrame + 1, 4);
  early.sendAll(long_hello.data(), long_hello.size(), deadlineIn(5s));
  EXPECT_TRUE(closedWithin(early, 5s));

  // One client may hold 64 MiB of keys and values: the fifth 15 MiB value is refused.
  std::string value(15u << 20, 'h');
  for (int i = 0; i < 4; ++i) client.set("held" + std::to_string(i), bytes(value));
  Error e = errorOf([&] { client.set("held4", bytes(value)); });
  EXPECT_EQ(e.code(), Result::InvalidUsage);
  EXPECT_TRUE(says(e, "would hold more than 64 MiB")) << e.what();
  client.set("held0", bytes("small"));  // replacing frees what the old value held
  client.set("held4", bytes(value));
  EXPECT_EQ(client.add("n", 1), 2);  // and the store serves on
  client.goodbye();
}

TEST(StoreRules, WithADerivedSecretOnlyTheJobsUidConnects) {
  if (::getuid() != 0) {
    if (std::getenv("CI")) FAIL() << "needs root to start a process of another uid (CI=true)";
    GTEST_SKIP() << "needs root to start a process of another uid";
  }
  const int nobody = 65534;
  auto derived = security::JobSecret::fromHex("d371ed", "test");
  derived.derived = true;
  auto server = loopbackStore(derived);
  auto at = server->address();
  TcpStoreClient job(at, derived, 0, deadlineIn(10s));
  auto stranger = [&] {
    try {
      TcpStoreClient(at, derived, 1, deadlineIn(10s)).goodbye();
      return 1;  // let in
    } catch (const Error& e) {
      return e.code() == Result::RemoteError ? 0 : 2;  // the store closed on us
    }
  };
  EXPECT_EQ(inChild(stranger, nobody), 0);
  EXPECT_EQ(inChild([&] { return stranger() == 0 ? 1 : 0; }), 0);  // our uid: let in
  job.set("job", bytes("completes"));
  EXPECT_EQ(text(job.get("job", deadlineIn(5s))), "completes");
  EXPECT_EQ(job.deadRanks(), std::vector<int>{});
  // The uid check is for derived secrets only: a real secret is enough proof.
  auto strong = loopbackStore(kStoreSecret);
  EXPECT_EQ(inChild(
                [&] {
                  TcpStoreClient c(strong->address(), kStoreSecret, 1, deadlineIn(10s));
                  c.goodbye();
                  return 0;
                },
                nobody),
            0);
  job.goodbye();
}
