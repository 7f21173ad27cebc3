#include "bootstrap/bootstrap.hpp"
#include "../common/process_support.hpp"
#include "../common/store_support.hpp"
#include "errors.hpp"
#include "store/store.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

using namespace chorus;
using namespace chorus::test_support;
using namespace std::chrono_literals;

namespace {

// Clears every variable readEnvironment looks at; the guard puts them back afterwards.
class Env : public ::testing::Test {
 protected:
  void set(const char* name, const std::string& value) { env_.set(name, value); }
  void clear(const char* name) { env_.clear(name); }
  EnvGuard env_{"CHORUS_RANK",
                "CHORUS_WORLD_SIZE",
                "CHORUS_LOCAL_RANK",
                "CHORUS_ADDR",
                "CHORUS_PORT",
                "CHORUS_SECRET",
                "RANK",
                "WORLD_SIZE",
                "LOCAL_RANK",
                "MASTER_ADDR",
                "MASTER_PORT",
                "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_LOCAL_RANK",
                "OMPI_MCA_ess_base_jobid",
                "PMIX_NAMESPACE",
                "OMPI_MCA_orte_ess_jobid",
                "TORCHELASTIC_RUN_ID",
                "CHORUS_SOCKET_IFNAME"};
};

}  // namespace

TEST(UniqueId, RoundTripsIpv4AndIpv6) {
  for (const char* host : {"127.0.0.1", "::1", "fd00::1234"}) {
    Rendezvous r;
    r.store = net::SocketAddress::parse(host, 4242);
    r.secret = security::JobSecret::random();
    UniqueId id = encodeUniqueId(r);
    EXPECT_EQ(std::string(id.bytes.data(), 8), "CHORUSID");
    Rendezvous back = decodeUniqueId(id);
    EXPECT_EQ(back.store.toString(), r.store.toString());
    EXPECT_EQ(back.store.family(), r.store.family());
    EXPECT_EQ(back.secret, r.secret);
  }
}

TEST(UniqueId, RejectsWhatIsNotAnId) {
  UniqueId zeros;
  Error e = errorOf([&] { decodeUniqueId(zeros); });
  EXPECT_EQ(e.code(), Result::InvalidArgument);
  EXPECT_TRUE(says(e, "magic"));

  Rendezvous r;
  r.store = net::SocketAddress::parse("127.0.0.1", 1);
  UniqueId id = encodeUniqueId(r);
  id.bytes[8] = 9;  // version
  EXPECT_EQ(errorOf([&] { decodeUniqueId(id); }).code(), Result::InvalidArgument);
  id = encodeUniqueId(r);
  id.bytes[10] = 77;  // address family
  EXPECT_EQ(errorOf([&] { decodeUniqueId(id); }).code(), Result::InvalidArgument);
}

TEST_F(Env, GetUniqueIdStartsAWorkingStore) {
  UniqueId a = getUniqueId(), b = getUniqueId();
  Rendezvous ra = decodeUniqueId(a), rb = decodeUniqueId(b);
  EXPECT_NE(ra.secret, rb.secret);
  EXPECT_NE(ra.store.toString(), rb.store.toString());
  TcpStoreClient client(ra.store, ra.secret, 0, deadlineIn(10s));
  EXPECT_EQ(client.add("n", 3), 3);
  EXPECT_THROW(TcpStoreClient(rb.store, ra.secret, 0, deadlineIn(10s)), Error);  // wrong job
  client.goodbye();
}

TEST_F(Env, ProcessStoreFollowsSocketIfname) {
  set("CHORUS_SOCKET_IFNAME", "=lo");
  Rendezvous r = startProcessStore(2, false);
  EXPECT_EQ(r.store.toString().rfind("127.0.0.1:", 0), 0u) << r.store.toString();
  set("CHORUS_SOCKET_IFNAME", "=nosuchif9");
  Error e = errorOf([] { startProcessStore(0, false); });
  EXPECT_EQ(e.code(), Result::InvalidArgument);
  EXPECT_TRUE(says(e, "nosuchif9"));
}

TEST_F(Env, ChorusVariablesTakePrecedence) {
  set("CHORUS_RANK", "2");
  set("CHORUS_WORLD_SIZE", "4");
  set("CHORUS_LOCAL_RANK", "1");
  set("CHORUS_ADDR", "127.0.0.1");
  set("CHORUS_PORT", "1234");
  set("CHORUS_SECRET", "00000000000000ff");
  set("RANK", "0");
  set("WORLD_SIZE", "8");
  set("LOCAL_RANK", "0");
  set("MASTER_ADDR", "10.9.9.9");
  set("MASTER_PORT", "999");
  set("OMPI_COMM_WORLD_RANK", "3");
  EnvLaunch l = readEnvironment(deadlineIn(5s));
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.nranks, 4);
  EXPECT_EQ(l.localRank, 1);
  EXPECT_EQ(l.rendezvous.store.toString(), "127.0.0.1:1234");
  EXPECT_EQ(l.rendezvous.secret.hex(), std::string(62, '0') + "ff");
  EXPECT_FALSE(l.rendezvous.secret.derived);
  EXPECT_FALSE(l.hostsStore);
  EXPECT_EQ(l.source, "chorus");
}

TEST_F(Env, TorchrunStyleRankZeroHostsWithADerivedSecret) {
  set("RANK", "0");
  set("WORLD_SIZE", "2");
  set("LOCAL_RANK", "0");
  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", "29500");
  EnvLaunch r0 = readEnvironment(deadlineIn(5s));
  EXPECT_EQ(r0.source, "torchrun");
  EXPECT_TRUE(r0.hostsStore);
  EXPECT_NE(r0.rendezvous.secret, security::JobSecret{});
  EXPECT_TRUE(r0.rendezvous.secret.derived);  // so the store checks local peers' uid
  set("RANK", "1");
  set("LOCAL_RANK", "1");
  EnvLaunch r1 = readEnvironment(deadlineIn(5s));
  EXPECT_FALSE(r1.hostsStore);
  EXPECT_EQ(r1.rank, 1);
  EXPECT_EQ(r1.localRank, 1);
  EXPECT_EQ(r1.rendezvous.secret, r0.rendezvous.secret);  // both ranks derive the same one
  set("TORCHELASTIC_RUN_ID", "job-7");
  EXPECT_NE(readEnvironment(deadlineIn(5s)).rendezvous.secret, r0.rendezvous.secret);
  clear("TORCHELASTIC_RUN_ID");
  set("MASTER_PORT", "29501");
  EXPECT_NE(readEnvironment(deadlineIn(5s)).rendezvous.secret, r0.rendezvous.secret);
  set("CHORUS_RANK", "0");  // a CHORUS_ variable overrides its torchrun twin
  EXPECT_EQ(readEnvironment(deadlineIn(5s)).rank, 0);
}

TEST_F(Env, MissingOrContradictoryVariablesAreNamed) {
  auto fails = [](const std::string& what) {
    Error e = errorOf([] { readEnvironment(deadlineIn(1s)); });
    EXPECT_EQ(e.code(), Result::InvalidArgument);
    EXPECT_TRUE(says(e, what)) << "'" << e.what() << "' does not name " << what;
  };
  fails("CHORUS_RANK");  // nothing set at all
  set("RANK", "1");
  fails("WORLD_SIZE");
  set("WORLD_SIZE", "two");
  fails("WORLD_SIZE='two'");
  set("WORLD_SIZE", "2");
  fails("MASTER_ADDR");
  set("RANK", "2");
  fails("RANK=2");  // not below the world size
  set("RANK", "1");
  set("MASTER_ADDR", "127.0.0.1");
  fails("MASTER_PORT");
  set("MASTER_PORT", "70000");
  fails("MASTER_PORT");
  set("MASTER_PORT", "80");
  set("CHORUS_SECRET", "not-hex");
  fails("CHORUS_SECRET");
  clear("CHORUS_SECRET");
  set("LOCAL_RANK", "-1");
  fails("LOCAL_RANK");
  clear("LOCAL_RANK");
  clear("MASTER_ADDR");
  fails("MASTER_PORT is set but");
  clear("MASTER_PORT");
  set("CHORUS_SECRET", "12");
  fails("CHORUS_SECRET");
  clear("CHORUS_SECRET");
  set("MASTER_PORT", "80");
  set("MASTER_ADDR", "no such host!.invalid");
  fails("MASTER_ADDR");
  set("MASTER_ADDR", "localhost");
  EXPECT_EQ(readEnvironment(deadlineIn(1s)).rank, 1);  // fine once all is set
}

TEST_F(Env, MpirunWithoutAJobIdIsAClearError) {
  set("OMPI_COMM_WORLD_RANK", "1");
  set("OMPI_COMM_WORLD_SIZE", "2");
  Error e = errorOf([] { readEnvironment(deadlineIn(1s)); });
  EXPECT_EQ(e.code(), Result::InvalidArgument);
  EXPECT_TRUE(says(e, "OMPI_MCA_ess_base_jobid"));
}

TEST_F(Env, MpirunFileRendezvousSharesRankZerosStore) {
  std::string job = "chorus-test-" + std::to_string(::getpid());
  std::string path = rendezvousDirectory() + "/" + job + ".rdv";
  set("OMPI_MCA_ess_base_jobid", job);
  set("OMPI_COMM_WORLD_SIZE", "2");
  set("CHORUS_SOCKET_IFNAME", "=lo");

  // A stale file (written long ago, or for another job size) is never taken.
  std::ofstream(path) << "chorus-rendezvous 1\naddress 127.0.0.1:1\nsecret 1\nnranks 2\n"
                         "pid 1\nwritten 1\n";
  set("OMPI_COMM_WORLD_RANK", "1");
  Error e = errorOf([] { readEnvironment(deadlineIn(300ms)); });
  EXPECT_EQ(e.code(), Result::Timeout);
  EXPECT_TRUE(says(e, path));

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // rank 1: waits for rank 0's file
    ::close(fds[0]);
    std::string out;
    try {
      EnvLaunch l = readEnvironment(deadlineIn(20s));
      out = l.rendezvous.store.toString() + " " + l.rendezvous.secret.hex() + " " + l.source + " " +
            std::to_string(l.rank);
    } catch (const std::exception& ex) {
      out = std::string("error: ") + ex.what();
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::this_thread::sleep_for(200ms);  // let rank 1 find the stale file first
  set("OMPI_COMM_WORLD_RANK", "0");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  EnvLaunch r0 = readEnvironment(deadlineIn(10s));
  EXPECT_EQ(r0.source, "mpirun");
  EXPECT_FALSE(r0.hostsStore);  // already started by readEnvironment

  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 20000), 1) << "rank 1 never answered";
  char buf[512] = {};
  ASSERT_GT(::read(fds[0], buf, sizeof(buf) - 1), 0);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(std::string(buf),
            r0.rendezvous.store.toString() + " " + r0.rendezvous.secret.hex() + " mpirun 1");
  TcpStoreClient client(r0.rendezvous.store, r0.rendezvous.secret, 1, deadlineIn(5s));
  EXPECT_EQ(client.add("k", 1), 1);
  client.goodbye();
  ::unlink(path.c_str());
}

TEST(HostIdentity, IsStableAndNamesTheHost) {
  std::string a = hostIdentity();
  EXPECT_EQ(a, hostIdentity());
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_NE(a.find(host), std::string::npos);
  EXPECT_NE(a.find("netns:"), std::string::npos);
  EXPECT_GT(a.size(), 36u);  // the boot id alone is a 36-character UUID
}

TEST(JobSecret, RandomDiffersAndHexRoundTrips) {
  auto a = security::JobSecret::random(), b = security::JobSecret::random();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.hex().size(), 64u);
  EXPECT_EQ(security::JobSecret::fromHex(a.hex(), "x"), a);
  EXPECT_EQ(security::JobSecret::fromHex("0x1", "x").bytes[31], 1);
  EXPECT_EQ(security::JobSecret::fromHex("abc", "x").bytes[30], 0x0a);
  EXPECT_EQ(errorOf([] { security::JobSecret::fromHex(std::string(65, '1'), "S"); }).code(),
            Result::InvalidArgument);
  EXPECT_EQ(errorOf([] { security::JobSecret::fromHex("12g4", "S"); }).code(),
            Result::InvalidArgument);
  // A passphrase gives 256 bits that depend on every character.
  EXPECT_NE(security::JobSecret::fromPassphrase("pass1"),
            security::JobSecret::fromPassphrase("pass2"));
}
