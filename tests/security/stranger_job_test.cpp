// chorus_stranger_test: strangers knock on a running 3-rank job over tcp and are refused,
// and the job completes correctly. Self-contained launcher:
//   1. the driver hosts the store (it knows the secret, as chorus-run does) and starts
//      three ranks (itself, re-executed); rank 0 holds back until told to go;
//   2. strangers hit the store port: garbage, a wrong HMAC, silence;
//   3. the driver stands in for rank 0's host record, so ranks 1 and 2 set up their tcp
//      transport and listen; once rank 0 goes (5.), strangers hit both listening ports the
//      same way while the ranks run all-reduces (tcp connects on first use: a rank answers
//      its port while it runs collectives), which they keep running until told;
//   4. insiders (the secret, but not the rank) try to claim rank 1 and to change rank 1's
//      keys, and are refused;
//   5. rank 0 goes; every rank runs checked all-reduces;
//   6. a second job, torchrun-style without a secret (rank 0 hosts the store, the secret
//      is derived from the port): a process of another uid that derives it too is refused
//      by the store, and the job completes. Pass: every rank exits 0, each
//      loud stranger was disconnected, the refusals were logged (WARN, naming the address),
//      and the silent store stranger is dropped by the store's handshake deadline.
#include "../common/store_support.hpp"
#include "bootstrap/bootstrap.hpp"
#include "errors.hpp"
#include "security/handshake.hpp"
#include "store/store.hpp"

#include <chorus/chorus.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace chorus;
using namespace chorus::test_support;
using namespace std::chrono_literals;

namespace {

constexpr int kRanks = 3;

int realStderr = 2;           // the driver sends fd 2 to a log file while it runs
std::vector<pid_t> children;  // killed if the driver fails half-way

int fail(const std::string& why) {
  ::dprintf(realStderr, "FAIL: %s\n", why.c_str());
  return 1;
}

// --- a rank --------------------------------------------------------------------------

int runRank(int rank) {
  try {
    // The driver's word: rank 0's go, and that the strangers are done knocking.
    std::optional<TcpStoreClient> gate;
    if (std::getenv("CHORUS_SECRET")) {
      auto launch = readEnvironment(deadlineIn(30s));
      gate.emplace(launch.rendezvous.store, launch.rendezvous.secret, -1, deadlineIn(30s));
      if (rank == 0) gate->get("security/go", deadlineIn(60s));
    }
    auto comm = Communicator::initFromEnv();
    const size_t count = 1 << 18;
    // The tcp transport connects on first use, so a rank answers whoever knocks on its
    // port while it runs collectives: keep running them until the driver has knocked.
    // Rank 0 decides and every rank follows its word (an all-reduce), so all call as many
    // all-reduces: ranks asking the store each for itself could disagree.
    const auto until = deadlineIn(60s);
    auto knocking = [&] {
      int32_t more =
          rank == 0 && gate && gate->add("security/knocked", 0) == 0 && Clock::now() < until;
      comm.allReduce(&more, &more, 1, DataType::Int32, RedOp::Max).wait();
      return more != 0;
    };
    for (int iteration = 0; iteration < 3 || knocking(); ++iteration) {
      std::vector<float> data(count, float(rank + 1 + iteration)), out(count);
      comm.allReduce(data.data(), out.data(), count, DataType::Float32, RedOp::Sum).wait();
      float want = float(kRanks * (kRanks + 1) / 2 + kRanks * iteration);
      for (size_t i = 0; i < count; ++i)
        if (out[i] != want) {
          std::fprintf(stderr, "rank %d: wrong result %g at %zu (want %g)\n", rank, out[i], i,
                       want);
          return 2;
        }
    }
    if (gate) gate->goodbye();
    std::printf("rank %d: all-reduces over %s correct\n", rank, comm.transportName().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 3;
  }
}

// --- strangers -----------------------------------------------------------------------

struct Strangers {
  std::vector<net::Socket> silent;  // held open until the job is over
  std::string failures;
};

// Garbage, a wrong HMAC and silence against one listening port.
void knock(const net::SocketAddress& address, const std::string& name, Strangers& out) {
  auto deadline = deadlineIn(10s);
  {
    auto s = net::Socket::connect(address, deadline);
    std::string junk(300, 'x');
    s.sendAll(junk.data(), junk.size(), deadline);
    if (!closedWithin(s, 5s)) out.failures += name + ": garbage was not refused; ";
  }
  {
    // The full handshake with the wrong key: the challenge does not verify, and our
    // made-up proof must be refused.
    auto s = net::Socket::connect(address, deadline);
    auto wrongKey = security::randomKey();
    security::Initiator initiator(wrongKey, security::asBytes("stranger"));
    auto hello = initiator.hello();
    s.sendAll(hello.data(), hello.size(), deadline);
    uint8_t challenge[security::kChallengeSize];
    s.recvAll(challenge, sizeof(challenge), deadline);
    if (initiator.answer(challenge))
      out.failures += name + ": a challenge verified under a wrong key; ";
    auto proof = security::randomKey();
    s.sendAll(proof.data(), proof.size(), deadline);
    if (!closedWithin(s, 5s)) out.failures += name + ": a wrong HMAC was not refused; ";
  }
  out.silent.push_back(net::Socket::connect(address, deadline));
  std::printf("strangers: knocked on %s (%s)\n", name.c_str(), address.toString().c_str());
}

// Clients that know the secret but act for a rank that is not theirs: another process
// claiming rank 1 (held by the running rank 1), and overwrites of rank 1's keys. Each is
// refused with a clear error, and the job goes on.
void insiders(const net::SocketAddress& store, const security::JobSecret& secret,
              TcpStoreClient& observer, Strangers& out) {
  auto expectRefused = [&](const std::string& what, const std::string& want,
                           const std::function<void()>& f) {
    const Error e = errorOf(f);
    if (e.code() == Result::Success) {
      out.failures += what + " was allowed; ";
      return;
    }
    std::printf("insiders: %s refused: %s\n", what.c_str(), e.what());
    if (e.code() != Result::InvalidUsage || !says(e, want))
      out.failures += what + " failed in the wrong way: " + e.what() + "; ";
  };
  expectRefused("another process claiming rank 1", "rank 1 is already held",
                [&] { TcpStoreClient(store, secret, 1, deadlineIn(10s)); });
  expectRefused("overwriting rank 1's tcp token", "belongs to rank 1",
                [&] { observer.set("comm0/tcp/1/token", bytes(std::string(32, 'x'))); });
  expectRefused("adding to rank 1's address", "not a counter",
                [&] { observer.add("comm0/tcp/1", 1); });
}

// "1.2.3.4:5", or the first of "nic=1.2.3.4:5,nic=[::1]:6" (one listener per rail).
net::SocketAddress parseAddress(std::string t) {
  t = t.substr(0, t.find(','));
  if (auto eq = t.find('='); eq != std::string::npos) t = t.substr(eq + 1);
  auto colon = t.rfind(':');
  return net::SocketAddress::parse(t.substr(0, colon), uint16_t(std::stoi(t.substr(colon + 1))));
}

// --- the driver ----------------------------------------------------------------------

// fork + execve of ourselves with `env`, stderr to `log`, everything prepared before the
// fork (we have threads).
pid_t startSelf(std::vector<std::string> env, const std::string& log) {
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char arg0[] = "chorus_stranger_test";
  char* argv[] = {arg0, nullptr};
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, 2);
    ::execve("/proc/self/exe", argv, envp.data());
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

pid_t startRank(int rank, uint16_t port, const security::JobSecret& secret,
                const std::string& log) {
  std::vector<std::string> env = {"CHORUS_RANK=" + std::to_string(rank),
                                  "CHORUS_WORLD_SIZE=" + std::to_string(kRanks),
                                  "CHORUS_ADDR=127.0.0.1",
                                  "CHORUS_PORT=" + std::to_string(port),
                                  "CHORUS_SECRET=" + secret.hex(),
                                  "CHORUS_TRANSPORT=tcp",
                                  "CHORUS_SOCKET_IFNAME=lo",
                                  "CHORUS_DEBUG=WARN",
                                  "CHORUS_STRANGER_RANK=" + std::to_string(rank)};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("CHORUS_", 0) != 0) env.push_back(*e);
  return startSelf(std::move(env), log);
}

// A rank of the torchrun-style job: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, no secret.
pid_t startTorchRank(int rank, uint16_t port, const std::string& log) {
  std::vector<std::string> env = {"RANK=" + std::to_string(rank),
                                  "WORLD_SIZE=" + std::to_string(kRanks),
                                  "MASTER_ADDR=127.0.0.1",
                                  "MASTER_PORT=" + std::to_string(port),
                                  "CHORUS_TRANSPORT=tcp",
                                  "CHORUS_SOCKET_IFNAME=lo",
                                  "CHORUS_DEBUG=WARN",
                                  "CHORUS_STRANGER_RANK=" + std::to_string(rank)};
  for (char** e = environ; *e; ++e) {
    std::string v = *e;
    if (v.rfind("CHORUS_", 0) != 0 && v.rfind("RANK=", 0) != 0 && v.rfind("WORLD_SIZE=", 0) != 0 &&
        v.rfind("MASTER_", 0) != 0 && v.rfind("TORCHELASTIC_", 0) != 0)
      env.push_back(v);
  }
  return startSelf(std::move(env), log);
}

// Waits for every rank; "" when all exited 0.
std::string reap(const std::vector<pid_t>& pids, const std::string& job) {
  std::string failures;
  for (size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    auto deadline = Clock::now() + 60s;
    pid_t got = 0;
    while ((got = ::waitpid(pids[r], &status, WNOHANG)) == 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(20ms);
    if (got == 0) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      failures += job + " rank " + std::to_string(r) + " hung; ";
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failures +=
          job + " rank " + std::to_string(r) + " failed (status " + std::to_string(status) + "); ";
    }
  }
  return failures;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int drive() {
  // Our own WARN lines (the store's refusals) go to a file we check, then echo.
  std::string base = "/tmp/chorus-stranger-" + std::to_string(::getpid());
  std::string driverLog = base + "-driver.log";
  int savedErr = realStderr = ::dup(2);
  int logFd = ::open(driverLog.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(logFd, 2);
  ::setenv("CHORUS_DEBUG", "WARN", 1);

  auto secret = security::JobSecret::random();
  auto server = loopbackStore(secret);
  auto storeAddress = server->address();
  Strangers strangers;
  auto start = Clock::now();
  knock(storeAddress, "the store", strangers);
  auto silentStoreSince = Clock::now();
  try {  // a would-be client with the wrong secret is turned away with a clear error
    auto wrong = secret;
    wrong.bytes[31] ^= 1;
    TcpStoreClient(storeAddress, wrong, 0, deadlineIn(5s));
    strangers.failures += "a store client with the wrong secret was let in; ";
  } catch (const Error& e) {
    std::printf("strangers: wrong-secret store client refused: %s\n", e.what());
  }

  std::vector<pid_t>& pids = children;
  std::vector<std::string> logs;
  for (int r = 0; r < kRanks; ++r) {
    logs.push_back(base + "-rank" + std::to_string(r) + ".log");
    pids.push_back(startRank(r, storeAddress.port(), secret, logs.back()));
  }
  TcpStoreClient observer(storeAddress, secret, -1, deadlineIn(30s));
  // Rank 0's host record, so that ranks 1 and 2 go on to listen for it.
  observer.set("comm0/host/0", bytes(hostIdentity()));
  std::vector<std::string> rankAddresses;
  for (int r = 1; r < kRanks; ++r) {
    const std::string key = "comm0/tcp/" + std::to_string(r);
    rankAddresses.push_back(text(observer.get(key, deadlineIn(30s))));
    // The token is the rank's last tcp key: until it is set, the insiders' overwrite of it
    // below would create it (the store's first writer owns a key) and lock rank 1 out.
    observer.get(key + "/token", deadlineIn(30s));
  }
  insiders(storeAddress, secret, observer, strangers);
  observer.set("security/go", {});
  // While the ranks run their all-reduces (they answer their tcp ports only then).
  for (int r = 1; r < kRanks; ++r)
    knock(parseAddress(rankAddresses[size_t(r - 1)]), "rank " + std::to_string(r) + "'s tcp port",
          strangers);
  observer.add("security/knocked", 1);

  std::string failures = strangers.failures + reap(pids, "job with strangers");
  auto jobSeconds = std::chrono::duration<double>(Clock::now() - start).count();
  // The silent store stranger goes at the store's handshake deadline (10 s).
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(silentStoreSince + 15s - Clock::now());
  if (!closedWithin(strangers.silent[0], std::max(left, std::chrono::milliseconds(200))))
    failures += "the silent store stranger was never dropped; ";
  strangers.silent.clear();
  observer.goodbye();
  server.reset();

  ::dup2(savedErr, 2);
  std::string driverText = slurp(driverLog);
  std::fprintf(stderr, "--- driver (store) log:\n%s", driverText.c_str());
  auto countRefusals = [](const std::string& t) {
    size_t n = 0;
    for (size_t at = 0;
         (at = t.find("refused a connection from 127.0.0.1:", at)) != std::string::npos; ++at)
      ++n;
    return n;
  };
  if (countRefusals(driverText) < 3)  // garbage, wrong HMAC, wrong-secret client (+ silence)
    failures += "the store logged fewer than 3 refusals; ";
  for (int r = 0; r < kRanks; ++r) {
    std::string t = slurp(logs[r]);
    std::fprintf(stderr, "--- rank %d log:\n%s", r, t.c_str());
    if (r > 0 && countRefusals(t) < 2)
      failures += "rank " + std::to_string(r) +
                  " logged fewer "
                  "than 2 refusals; ";
    ::unlink(logs[r].c_str());
  }
  ::unlink(driverLog.c_str());
  std::printf("job with strangers: %.1f s\n", jobSeconds);
  if (!failures.empty()) return fail(failures);
  std::printf("PASS: every stranger refused and logged, the job completed correctly\n");
  return 0;
}

}  // namespace

// Phase 6: no secret. Rank 0 starts alone and hosts the store; a stranger process of
// another uid, with the same variables (so the same derived secret), tries to join as
// rank 1 and is refused; then ranks 1 and 2 join and the job completes.
int driveWithoutSecret() {
  if (::getuid() != 0) {
    if (std::getenv("CI")) return fail("needs root to start a process of another uid (CI=true)");
    std::printf("SKIP phase 6: needs root to start a process of another uid\n");
    return 0;
  }
  uint16_t port;
  {
    auto probe = net::Socket::listen(net::SocketAddress::parse("127.0.0.1", 0));
    port = probe.localAddress().port();
  }
  std::string base = "/tmp/chorus-stranger-" + std::to_string(::getpid()) + "-nosecret";
  std::vector<std::string> logs;
  for (int r = 0; r < kRanks; ++r) logs.push_back(base + "-rank" + std::to_string(r) + ".log");
  children.push_back(startTorchRank(0, port, logs[0]));
  auto store = net::SocketAddress::parse("127.0.0.1", port);
  { net::Socket::connect(store, deadlineIn(30s)); }  // rank 0's store is up

  std::string failures;
  pid_t stranger = ::fork();
  if (stranger == 0) {
    int rc = 3;
    try {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(4);
      ::setenv("RANK", "1", 1), ::setenv("WORLD_SIZE", "3", 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1),
          ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      auto launch = readEnvironment(deadlineIn(10s));  // derives the job's secret
      TcpStoreClient(launch.rendezvous.store, launch.rendezvous.secret, 1, deadlineIn(10s));
      rc = 1;  // let in
    } catch (const Error& e) {
      rc = e.code() == Result::RemoteError ? 0 : 2;
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(stranger, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    failures += "the other-uid stranger was not refused (status " + std::to_string(status) + "); ";
  else
    std::printf("strangers: a process of uid 65534 with the derived secret was refused\n");
  for (int r = 1; r < kRanks; ++r) children.push_back(startTorchRank(r, port, logs[r]));
  failures += reap(children, "no-secret job");
  std::string rank0 = slurp(logs[0]);
  if (rank0.find("refused a local connection from a process of uid 65534") == std::string::npos)
    failures += "rank 0's store did not log the refusal; ";
  for (int r = 0; r < kRanks; ++r) {
    std::fprintf(stderr, "--- no-secret job, rank %d log:\n%s", r, slurp(logs[r]).c_str());
    ::unlink(logs[r].c_str());
  }
  children.clear();
  if (!failures.empty()) return fail(failures);
  std::printf(
      "PASS: without a secret, a stranger of another uid was refused and the job completed\n");
  return 0;
}

int main() {
  if (const char* r = std::getenv("CHORUS_STRANGER_RANK")) return runRank(std::atoi(r));
  try {
    int rc = drive();
    children.clear();
    return rc != 0 ? rc : driveWithoutSecret();
  } catch (const std::exception& e) {
    for (pid_t p : children) ::kill(p, SIGKILL);
    for (pid_t p : children) ::waitpid(p, nullptr, 0);
    return fail(e.what());  // the logs are left in /tmp for a look
  }
}
