// What a stranger on the same host could reach: the store's port (refused without the
// secret, and never stalled by a silent connection), shared memory segments and the mpirun
// rendezvous file (mode 0600 in a private directory; files and directories another user
// planted first do not stop the job), and listening sockets (bound to the chosen
// interface, not the wildcard address; the unique id's store on loopback by default).
#include "../common/process_support.hpp"
#include "../common/store_support.hpp"
#include "../unit/time_bounds.hpp"
#include "bootstrap/bootstrap.hpp"
#include "errors.hpp"
#include "security/handshake.hpp"
#include "store/hash_store.hpp"
#include "store/store.hpp"
#include "transports/transport.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

using namespace chorus;
using namespace chorus::test_support;
using namespace std::chrono_literals;

namespace {

const security::JobSecret kSecret = security::JobSecret::fromHex("5eed5eed5eed5eed", "test");
const security::JobSecret kOtherSecret = security::JobSecret::fromHex("5eed5eed5eed5eee", "test");

// The job's named segments in /dev/shm: the directory and the mailbox (FIFO segments are
// memfds, never named there).
std::vector<std::string> shmEntries(const std::string& token) {
  std::vector<std::string> out;
  if (token.empty()) return out;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("chorus", 0) == 0 && name.find(token) != std::string::npos)
        out.push_back(name);
    }
    ::closedir(d);
  }
  return out;
}

// Records the mode of every segment of the job when the ranks meet at "shm/mapped": by
// then all are created and none unlinked yet.
class SpyStore : public HashStore {
 public:
  int64_t add(const std::string& key, int64_t delta) override {
    if (key == "shm/mapped") {
      auto value = get("shm/token", deadlineIn(1s));
      std::string token(reinterpret_cast<char*>(value.data()), value.size());
      std::lock_guard lock(mutex_);
      for (auto& name : shmEntries(token)) {
        struct stat st {};
        if (::stat(("/dev/shm/" + name).c_str(), &st) == 0) modes[name] = st.st_mode & 07777;
      }
      this->token = token;
    }
    return HashStore::add(key, delta);
  }
  std::mutex mutex_;
  std::map<std::string, unsigned> modes;
  std::string token;
};

}  // namespace

TEST(Exposure, SilentAndGarbageStrangersDoNotStallTheStore) {
  auto server = loopbackStore(kSecret);
  std::vector<net::Socket> silent;
  for (int i = 0; i < 20; ++i)
    silent.push_back(net::Socket::connect(server->address(), deadlineIn(5s)));
  auto garbage = net::Socket::connect(server->address(), deadlineIn(5s));
  std::string junk(1000, '\xff');
  garbage.sendAll(junk.data(), junk.size(), deadlineIn(5s));
  // A half-finished hello, then nothing.
  auto half = net::Socket::connect(server->address(), deadlineIn(5s));
  auto hello = security::Initiator(kSecret.key(), {}).hello();
  half.sendAll(hello.data(), 5, deadlineIn(5s));

  auto start = Clock::now();
  TcpStoreClient client(server->address(), kSecret, 0, deadlineIn(5s));
  client.set("k", bytes("v"));
  EXPECT_EQ(client.get("k", deadlineIn(5s)).size(), 1u);
  EXPECT_LT(Clock::now() - start, chorus::test::within(2s));  // tsan reruns it
  EXPECT_TRUE(closedWithin(garbage, 5s));
  // A client that does not know the secret is told so, and the store keeps serving.
  EXPECT_THROW(TcpStoreClient(server->address(), kOtherSecret, 1, deadlineIn(5s)), Error);
  EXPECT_EQ(client.add("n", 2), 2);
  client.goodbye();
}

TEST(Exposure, ShmSegmentsAre0600AndUnlinked) {
  EnvGuard env;
  env.set("CHORUS_SOCKET_IFNAME", "lo");
  SpyStore store;
  for (int r = 0; r < 2; ++r) store.set("host/" + std::to_string(r), bytes("host"));
  std::vector<std::unique_ptr<Transport>> ranks(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        ranks[r] = makeShmTransport(TransportContext{r, 2, &store, "host", deadlineIn(20s)});
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : threads) t.join();
  ASSERT_TRUE(ranks[0] && ranks[1]);
  ASSERT_EQ(store.modes.size(), 2u) << "segments seen: " << store.modes.size();
  for (auto& [name, mode] : store.modes) EXPECT_EQ(mode, 0600u) << name;
  EXPECT_TRUE(shmEntries(store.token).empty()) << "segments left in /dev/shm";
}

TEST(Exposure, MpirunRendezvousFileIs0600) {
  EnvGuard env{"CHORUS_RANK", "RANK",        "CHORUS_ADDR",   "MASTER_ADDR",
               "CHORUS_PORT", "MASTER_PORT", "CHORUS_SECRET", "CHORUS_JOB_SECRET"};
  std::string job = "security-test-" + std::to_string(::getpid());
  env.set("OMPI_COMM_WORLD_RANK", "0");
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_MCA_ess_base_jobid", job);
  env.set("CHORUS_SOCKET_IFNAME", "lo");
  auto launch = readEnvironment(deadlineIn(5s));
  std::string path = rendezvousDirectory() + "/" + job + ".rdv";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, ::getuid());
  ::unlink(path.c_str());  // the process removes it at exit; do not leave it for others
  // The store it published listens on the chosen interface only.
  EXPECT_EQ(launch.rendezvous.store.toString().rfind("127.0.0.1:", 0), 0u)
      << launch.rendezvous.store.toString();
}

TEST(Exposure, ListenersBindTheChosenInterface) {
  EnvGuard env;
  env.set("CHORUS_SOCKET_IFNAME", "lo");
  auto r = startProcessStore(-1, false);
  EXPECT_EQ(r.store.toString().rfind("127.0.0.1:", 0), 0u) << r.store.toString();
  HashStore store;
  std::vector<std::thread> threads;
  std::string errors[2];
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      try {
        makeTcpTransport(TransportContext{rank, 2, &store, "host", deadlineIn(20s)});
      } catch (const std::exception& e) {
        errors[rank] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0] + errors[1], "");
  for (int rank = 0; rank < 2; ++rank) {
    std::string address = text(store.get("tcp/" + std::to_string(rank), deadlineIn(1s)));
    EXPECT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
  }
}

// Another user cannot abort an mpirun job by creating its rendezvous file first: not at
// the old predictable /tmp path, not by taking the private directory's name (nor by a
// symlink there). The job finds a directory of its own, and both ranks meet.
TEST(Exposure, HostileRendezvousFilesDoNotAbortTheJob) {
  if (::getuid() != 0) {
    if (std::getenv("CI")) FAIL() << "needs root to create files of another uid (CI=true)";
    GTEST_SKIP() << "needs root to create files of another uid";
  }
  const uid_t nobody = 65534;
  char scratch[] = "/tmp/chorus-exposure-XXXXXX";
  ASSERT_NE(::mkdtemp(scratch), nullptr);
  ASSERT_EQ(::chmod(scratch, 0755), 0);  // the stranger must reach tmp/ inside
  const std::string tmp = std::string(scratch) + "/tmp", home = std::string(scratch) + "/home";
  ASSERT_EQ(::mkdir(tmp.c_str(), 01777), 0);
  ASSERT_EQ(::chmod(tmp.c_str(), 01777), 0);  // like /tmp: anybody creates, sticky
  ASSERT_EQ(::mkdir(home.c_str(), 0700), 0);
  std::string job = "hostile-" + std::to_string(::getpid());
  EnvGuard env{"CHORUS_RANK",    "RANK",           "CHORUS_ADDR",   "MASTER_ADDR",
               "CHORUS_PORT",    "MASTER_PORT",    "CHORUS_SECRET", "CHORUS_JOB_SECRET",
               "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"};
  env.set("TMPDIR", tmp);
  env.set("HOME", home);
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_MCA_ess_base_jobid", job);
  env.set("CHORUS_SOCKET_IFNAME", "lo");

  // The stranger's traps: the old fixed path, and the private directory's name, taken.
  const std::string oldPath = "/tmp/chorus-" + job + ".rdv";
  const std::string squat = tmp + "/chorus-" + std::to_string(::getuid());
  pid_t stranger = ::fork();
  if (stranger == 0) {
    if (::setgid(nobody) != 0 || ::setuid(nobody) != 0) ::_exit(1);
    int fd = ::open(oldPath.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    bool ok = fd >= 0 && ::write(fd, "chorus-rendezvous 1\naddress 127.0.0.1:1\n", 40) == 40;
    ok = ok && ::mkdir(squat.c_str(), 0777) == 0 && ::chmod(squat.c_str(), 0777) == 0;
    ::_exit(ok ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(stranger, &status, 0), stranger);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the stranger could not set up";

  std::string dir = rendezvousDirectory();
  EXPECT_EQ(dir, home + "/.cache/chorus");  // the squatted one is skipped
  struct stat st {};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, ::getuid());
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // Both ranks of the job meet through it.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t rank1 = ::fork();
  if (rank1 == 0) {
    ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    std::string out = "error";
    try {
      auto l = readEnvironment(deadlineIn(20s));
      out = l.rendezvous.store.toString() + " " + l.rendezvous.secret.hex();
    } catch (const std::exception& e) {
      out = e.what();
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  env.set("OMPI_COMM_WORLD_RANK", "0");
  std::string mine = "rank 0 failed";
  try {
    auto l = readEnvironment(deadlineIn(20s));
    mine = l.rendezvous.store.toString() + " " + l.rendezvous.secret.hex();
    struct stat file {};
    ASSERT_EQ(::lstat((dir + "/" + job + ".rdv").c_str(), &file), 0);
    EXPECT_EQ(file.st_mode & 07777, 0600u);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "rank 0: " << e.what();
  }
  char buf[512] = {};
  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30000), 1) << "rank 1 never answered";
  ASSERT_GT(::read(fds[0], buf, sizeof(buf) - 1), 0);
  ::close(fds[0]);
  ::waitpid(rank1, nullptr, 0);
  EXPECT_EQ(std::string(buf), mine);  // the same store, the same secret

  // A symlink in the private directory's place is not followed either.
  ASSERT_EQ(::rmdir(squat.c_str()), 0);
  ASSERT_EQ(::symlink(home.c_str(), squat.c_str()), 0);
  EXPECT_EQ(rendezvousDirectory(), home + "/.cache/chorus");
  ::unlink(oldPath.c_str());
  std::filesystem::remove_all(scratch);
}

// getUniqueId's store listens on loopback unless CHORUS_SOCKET_IFNAME says otherwise, and
// an id made on another host (or network namespace) says so instead of hanging.
TEST(Exposure, UniqueIdStoreIsOnLoopbackAndSaysWhenFarAway) {
  EnvGuard env{"CHORUS_SOCKET_IFNAME"};
  UniqueId id = getUniqueId();
  Rendezvous r = decodeUniqueId(id);
  EXPECT_EQ(r.store.toString().rfind("127.0.0.1:", 0), 0u) << r.store.toString();
  id.bytes[68] ^= 1;  // the creator's host fingerprint
  try {
    decodeUniqueId(id);
    ADD_FAILURE() << "a loopback id from another host was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("CHORUS_SOCKET_IFNAME"), std::string::npos) << e.what();
  }
}
