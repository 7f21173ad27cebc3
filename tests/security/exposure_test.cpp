// What a stranger on the same host could reach: the store's port (refused without the
// secret, and never stalled by a silent connection), shared memory segments and the mpirun
// rendezvous file (mode 0600, unlinked when done), and listening sockets (bound to the
// chosen interface, not the wildcard address).
#include "bootstrap/bootstrap.hpp"
#include "errors.hpp"
#include "security/connection_auth.hpp"
#include "store/hash_store.hpp"
#include "store/store.hpp"
#include "transports/transport.hpp"

#include <dirent.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

using namespace chorus;
using namespace std::chrono_literals;

namespace {

const security::JobSecret kSecret = security::JobSecret::fromHex("5eed5eed5eed5eed", "test");
const security::JobSecret kOtherSecret = security::JobSecret::fromHex("5eed5eed5eed5eee", "test");

bool closedWithin(net::Socket& s, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  char buf[64];
  while (Clock::now() < deadline) {
    pollfd p{s.fd(), POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    ssize_t n = ::recv(s.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

std::vector<std::string> shmEntries(const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(e->d_name);
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
      auto token = get("shm/token", deadlineIn(1s));
      std::string prefix =
          "chorus-" + std::string(reinterpret_cast<char*>(token.data()), token.size());
      std::lock_guard lock(mutex_);
      for (auto& name : shmEntries(prefix)) {
        struct stat st {};
        if (::stat(("/dev/shm/" + name).c_str(), &st) == 0) modes[name] = st.st_mode & 07777;
      }
      this->prefix = prefix;
    }
    return HashStore::add(key, delta);
  }
  std::mutex mutex_;
  std::map<std::string, unsigned> modes;
  std::string prefix;
};

}  // namespace

TEST(Exposure, SilentAndGarbageStrangersDoNotStallTheStore) {
  TcpStoreServer server(net::SocketAddress::parse("127.0.0.1", 0), kSecret, -1);
  std::vector<net::Socket> silent;
  for (int i = 0; i < 20; ++i)
    silent.push_back(net::Socket::connect(server.address(), deadlineIn(5s)));
  auto garbage = net::Socket::connect(server.address(), deadlineIn(5s));
  std::string junk(1000, '\xff');
  garbage.sendAll(junk.data(), junk.size(), deadlineIn(5s));
  // A half-finished hello, then nothing.
  auto half = net::Socket::connect(server.address(), deadlineIn(5s));
  auto hello = security::Initiator(kSecret.key(), {}).hello();
  half.sendAll(hello.data(), 5, deadlineIn(5s));

  auto start = Clock::now();
  TcpStoreClient client(server.address(), kSecret, 0, deadlineIn(5s));
  std::string value = "v";
  client.set("k", std::as_bytes(std::span(value)));
  EXPECT_EQ(client.get("k", deadlineIn(5s)).size(), 1u);
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_TRUE(closedWithin(garbage, 5s));
  // A client that does not know the secret is told so, and the store keeps serving.
  EXPECT_THROW(TcpStoreClient(server.address(), kOtherSecret, 1, deadlineIn(5s)), Error);
  EXPECT_EQ(client.add("n", 2), 2);
  client.goodbye();
}

TEST(Exposure, ShmSegmentsAre0600AndUnlinked) {
  ::setenv("CHORUS_SOCKET_IFNAME", "lo", 1);
  SpyStore store;
  std::string host = "host";
  for (int r = 0; r < 2; ++r)
    store.set("host/" + std::to_string(r), std::as_bytes(std::span(host)));
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
  EXPECT_TRUE(shmEntries(store.prefix).empty()) << "segments left in /dev/shm";
}

TEST(Exposure, MpirunRendezvousFileIs0600) {
  for (const char* v : {"CHORUS_RANK", "RANK", "CHORUS_ADDR", "MASTER_ADDR", "CHORUS_PORT",
                        "MASTER_PORT", "CHORUS_SECRET", "CHORUS_JOB_SECRET"})
    ::unsetenv(v);
  std::string job = "security-test-" + std::to_string(::getpid());
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  ::setenv("OMPI_MCA_ess_base_jobid", job.c_str(), 1);
  ::setenv("CHORUS_SOCKET_IFNAME", "lo", 1);
  auto launch = readEnvironment(deadlineIn(5s));
  std::string path = rendezvousDirectory() + "/" + job + ".rdv";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, ::getuid());
  ::unlink(path.c_str());  // the process removes it at exit; do not leave it for others
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid"})
    ::unsetenv(v);
  // The store it published listens on the chosen interface only.
  EXPECT_EQ(launch.rendezvous.store.toString().rfind("127.0.0.1:", 0), 0u)
      << launch.rendezvous.store.toString();
}

TEST(Exposure, ListenersBindTheChosenInterface) {
  ::setenv("CHORUS_SOCKET_IFNAME", "lo", 1);
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
    auto v = store.get("tcp/" + std::to_string(rank), deadlineIn(1s));
    std::string address(reinterpret_cast<char*>(v.data()), v.size());
    EXPECT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
  }
}
