// chorus_poll_liveness_test: a program that only polls (as NCCL's non-blocking users and
// PyTorch do) must see a dead or stopped peer as an error, not InProgress forever.
//   chorus_poll_liveness_test --transport shm|tcp|ucx|ib [--fault kill|stop] [--ranks 4]
//                             [--victim 1] [--timeout-s 5] [--count N]
// Every rank runs one all-reduce to completion by polling and checks its result; then the
// victim SIGKILLs (or SIGSTOPs) itself and the others start a large all-reduce (--count
// elements, 2^20 by default; 4 takes the shm mailbox of small all-reduces) and poll it,
// each through one of the three polling interfaces by rank:
//   rank % 3 == 0: C API, non-blocking communicator, chorusCommGetAsyncError;
//   rank % 3 == 1: C++ Work::test();   rank % 3 == 2: C++ Communicator::asyncError().
// Each survivor must get an error naming the victim within CHORUS_TIMEOUT of the fault,
// and the same interface's structured list of failed ranks must hold exactly the victim
// after a kill (chorusCommGetFailedRanks, Error::failedRanks, Communicator::failedRanks)
// and be empty after a stop (a timeout: the stopped rank is suspected, not known dead)
// (stop: CHORUS_TIMEOUT plus the stall diagnosis, at most half of it, plus 2 s). It gives
// up polling at 3 x CHORUS_TIMEOUT + 10 s and fails ("still in progress"). The parent
// forks the ranks, hands them the unique id through pipes, and fails on any rank that
// does not exit as expected or a hang. Exit codes of a rank: 0 right error in time,
// 1 wrong or missing error, 2 too late, 3 set-up failed.
#include <chorus/chorus.h>
#include <chorus/chorus.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace {

struct Args {
  std::string transport = "shm", fault = "kill";
  int ranks = 4, victim = 1;
  double timeoutS = 5;
  size_t count = size_t{1} << 20;  // of the all-reduce after the fault
};

struct Shared {                  // MAP_SHARED, between the ranks
  std::atomic<int64_t> faultNs;  // when the victim struck
  std::atomic<int> firstDone;    // ranks whose first all-reduce completed
};

int64_t monoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t input(int rank, int call, size_t i) {
  return (int64_t{call + 1} << 44) | (int64_t{rank + 1} << 36) | static_cast<int64_t>(i);
}

// One rank's communicator behind the polling interface its rank selects.
class Poller {
 public:
  Poller(int rank, int nranks, const chorusUniqueId& id) : rank_(rank), style_(rank % 3) {
    if (style_ == 0) {
      chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
      config.blocking = 0;
      if (chorusCommInitRankConfig(&c_, nranks, id, rank, &config) != chorusSuccess)
        throw std::runtime_error(std::string("chorusCommInitRankConfig: ") +
                                 chorusGetLastError(nullptr));
    } else {
      chorus::UniqueId cppId;
      std::memcpy(cppId.bytes.data(), id.internal, cppId.bytes.size());
      cpp_ = chorus::Communicator::init(rank, nranks, cppId);
    }
  }
  ~Poller() {
    if (c_) chorusCommDestroy(c_);
  }
  const char* style() const {
    return style_ == 0 ? "chorusCommGetAsyncError" : style_ == 1 ? "Work::test" : "asyncError";
  }

  void start(const int64_t* in, int64_t* out, size_t count) {
    if (style_ == 0) {
      chorusResult_t r = chorusAllReduce(in, out, count, chorusInt64, chorusSum, c_);
      if (r != chorusSuccess && r != chorusInProgress)
        throw std::runtime_error(std::string("chorusAllReduce: ") + chorusGetLastError(c_));
    } else {
      work_ = cpp_.allReduce(in, out, count, chorus::DataType::Int64, chorus::RedOp::Sum);
    }
  }
  // One poll: true when done; throws with the communicator's message when it failed.
  bool poll() {
    if (style_ == 0) {
      chorusResult_t state = chorusInProgress;
      if (chorusCommGetAsyncError(c_, &state) != chorusSuccess)
        throw std::runtime_error(chorusGetLastError(c_));
      if (state == chorusInProgress) return false;
      if (state == chorusSuccess) return true;
      throw std::runtime_error(chorusGetLastError(c_));
    }
    if (style_ == 1) {
      try {
        return work_.test();
      } catch (const chorus::Error& e) {
        failed_ = e.failedRanks();
        throw;
      }
    }
    const chorus::Result state = cpp_.asyncError();
    if (state == chorus::Result::InProgress) return false;
    if (state == chorus::Result::Success) return true;
    throw std::runtime_error(cpp_.lastError());
  }
  // After poll() threw: the failed ranks, through the same interface.
  std::vector<int> failedRanks() {
    if (style_ == 0) {
      int n = -1;
      if (chorusCommGetFailedRanks(c_, nullptr, 0, &n) != chorusSuccess || n < 0)
        throw std::runtime_error("chorusCommGetFailedRanks failed to size the list");
      std::vector<int> ranks(n + 1, -7);  // one more than said: it must stay untouched
      int again = -1;
      if (chorusCommGetFailedRanks(c_, ranks.data(), n, &again) != chorusSuccess || again != n)
        throw std::runtime_error("chorusCommGetFailedRanks: the count changed");
      if (ranks[n] != -7) throw std::runtime_error("chorusCommGetFailedRanks wrote past maxRanks");
      ranks.pop_back();
      return ranks;
    }
    return style_ == 1 ? failed_ : cpp_.failedRanks();
  }

 private:
  int rank_, style_;
  chorusComm_t c_ = nullptr;
  chorus::Communicator cpp_;
  chorus::Work work_;
  std::vector<int> failed_;  // Work::test's Error::failedRanks
};

int runRank(const Args& a, int rank, int idFd, Shared* sh) {
  chorusUniqueId id;
  if (read(idFd, id.internal, sizeof id.internal) != static_cast<ssize_t>(sizeof id.internal)) {
    std::printf("rank %d: FAIL could not read the unique id\n", rank);
    return 3;
  }
  close(idFd);
  setenv("CHORUS_TRANSPORT", a.transport.c_str(), 1);
  setenv("CHORUS_TIMEOUT", std::to_string(a.timeoutS).c_str(), 1);
  std::unique_ptr<Poller> comm;
  const size_t small = 10007, large = std::max(small, a.count);
  std::vector<int64_t> in(large), out(large, -1);
  try {
    comm = std::make_unique<Poller>(rank, a.ranks, id);
    for (size_t i = 0; i < small; ++i) in[i] = input(rank, 0, i);
    comm->start(in.data(), out.data(), small);
    const int64_t giveUp = monoNs() + static_cast<int64_t>(a.timeoutS * 3e9);
    while (!comm->poll()) {
      if (monoNs() > giveUp) throw std::runtime_error("the first all-reduce never completed");
      usleep(200);
    }
    for (size_t i = 0; i < small; ++i) {
      int64_t want = 0;
      for (int q = 0; q < a.ranks; ++q) want += input(q, 0, i);
      if (out[i] != want) {
        std::printf("rank %d: FAIL first all-reduce wrong at %zu\n", rank, i);
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::printf("rank %d: FAIL set-up or first call: %s\n", rank, e.what());
    return 3;
  }
  ++sh->firstDone;
  if (rank == a.victim) {
    // Strike once every rank has its first result (the transport may still be delivering
    // the victim's last bytes: its progress thread does that while the engine is idle).
    const int64_t giveUp = monoNs() + static_cast<int64_t>(a.timeoutS * 3e9);
    while (sh->firstDone.load() < a.ranks && monoNs() < giveUp) usleep(1000);
    sh->faultNs = monoNs();
    raise(a.fault == "stop" ? SIGSTOP : SIGKILL);
    std::printf("rank %d: FAIL continued after SIGSTOP\n", rank);  // the parent kills it
    return 1;
  }
  for (size_t i = 0; i < large; ++i) in[i] = input(rank, 1, i);
  const int64_t start = monoNs();
  const int64_t giveUp = start + static_cast<int64_t>((3 * a.timeoutS + 10) * 1e9);
  long polls = 0;
  try {
    comm->start(in.data(), out.data(), a.count);
    while (monoNs() < giveUp) {
      ++polls;
      if (comm->poll()) {
        std::printf("rank %d: FAIL the all-reduce without rank %d reported success\n", rank,
                    a.victim);
        return 1;
      }
      usleep(200);
    }
    std::printf("rank %d: FAIL still in progress after %.0f s of %s (%ld polls)\n", rank,
                (monoNs() - start) / 1e9, comm->style(), polls);
    return 1;
  } catch (const std::exception& e) {
    const int64_t faultNs = sh->faultNs.load();
    const double s = (monoNs() - (faultNs ? faultNs : start)) / 1e9;
    const std::string msg = e.what(), who = "rank " + std::to_string(a.victim);
    std::printf("rank %d: error via %s after %ld polls, %.2f s after the fault: %s\n", rank,
                comm->style(), polls, s, msg.c_str());
    const size_t at = msg.find(who);
    const bool named = at != std::string::npos &&
                       (at + who.size() == msg.size() || !std::isdigit(msg[at + who.size()]));
    if (!named || msg.find("allReduce #1") == std::string::npos) {
      std::printf("rank %d: FAIL the error does not name %s and allReduce #1\n", rank, who.c_str());
      return 1;
    }
    std::vector<int> failed;
    try {
      failed = comm->failedRanks();
    } catch (const std::exception& e) {
      std::printf("rank %d: FAIL %s\n", rank, e.what());
      return 1;
    }
    const std::vector<int> want =
        a.fault == "kill" ? std::vector<int>{a.victim} : std::vector<int>{};
    if (failed != want) {
      std::string got;
      for (int r : failed) got += " " + std::to_string(r);
      std::printf("rank %d: FAIL failed ranks via %s: [%s ], want [%s ]\n", rank, comm->style(),
                  got.c_str(), a.fault == "kill" ? (" " + std::to_string(a.victim)).c_str() : "");
      return 1;
    }
    const double limit = a.fault == "stop" ? 1.5 * a.timeoutS + 2 : a.timeoutS;
    if (s > limit) {
      std::printf("rank %d: FAIL the error came %.2f s after the fault (limit %.1f s)\n", rank, s,
                  limit);
      return 2;
    }
    return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--transport")
      a.transport = v;
    else if (k == "--fault")
      a.fault = v;
    else if (k == "--ranks")
      a.ranks = std::atoi(v.c_str());
    else if (k == "--victim")
      a.victim = std::atoi(v.c_str());
    else if (k == "--timeout-s")
      a.timeoutS = std::atof(v.c_str());
    else if (k == "--count")
      a.count = std::strtoull(v.c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.ranks < 2 || a.victim < 0 || a.victim >= a.ranks ||
      (a.fault != "kill" && a.fault != "stop") || a.count == 0) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::printf("poll liveness test: %d ranks over %s, rank %d gets SIG%s, CHORUS_TIMEOUT=%g\n",
              a.ranks, a.transport.c_str(), a.victim, a.fault == "stop" ? "STOP" : "KILL",
              a.timeoutS);
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 2;
  auto* sh = new (mem) Shared{};
  std::vector<pid_t> pids(a.ranks);
  std::vector<int> pipes(a.ranks);
  for (int r = 0; r < a.ranks; ++r) {  // fork before any thread exists (the store's)
    int fds[2];
    if (pipe(fds) != 0) return 2;
    pids[r] = fork();
    if (pids[r] < 0) return 2;
    if (pids[r] == 0) {
      close(fds[1]);
      for (int q = 0; q < r; ++q) close(pipes[q]);
      const int code = runRank(a, r, fds[0], sh);
      std::fflush(stdout);
      _exit(code);
    }
    close(fds[0]);
    pipes[r] = fds[1];
  }
  chorusUniqueId id;
  if (chorusGetUniqueId(&id) != chorusSuccess) return 2;
  for (int r = 0; r < a.ranks; ++r) {
    if (write(pipes[r], id.internal, sizeof id.internal) != sizeof id.internal) return 2;
    close(pipes[r]);
  }
  // Survivors give up by themselves at 3 x timeout + 10 s; a rank past 4 x timeout + 40 s
  // hangs despite that.
  const int64_t hangAt = monoNs() + static_cast<int64_t>((4 * a.timeoutS + 40) * 1e9);
  std::vector<int> status(a.ranks, -1);
  int left = a.ranks;
  bool ok = true;
  while (left > 0) {
    for (int r = 0; r < a.ranks; ++r) {
      if (status[r] != -1) continue;
      int st;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) status[r] = st, --left;
    }
    if (left == 1 && a.fault == "stop" && status[a.victim] == -1) kill(pids[a.victim], SIGKILL);
    if (left > 0 && monoNs() > hangAt) {
      for (int r = 0; r < a.ranks; ++r)
        if (status[r] == -1) {
          std::printf("FAIL rank %d hangs\n", r);
          kill(pids[r], SIGKILL);
        }
      ok = false;
      for (int r = 0; r < a.ranks; ++r)
        if (status[r] == -1) waitpid(pids[r], &status[r], 0);
      break;
    }
    usleep(10000);
  }
  for (int r = 0; r < a.ranks; ++r) {
    const int st = status[r];
    if (r == a.victim) {
      if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
        std::printf("FAIL victim rank %d did not end by SIGKILL (status %d)\n", r, st);
        ok = false;
      }
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::printf("FAIL rank %d: %s %d\n", r, WIFEXITED(st) ? "exit code" : "signal",
                  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      ok = false;
    }
  }
  std::printf(ok ? "PASS: every survivor polled its way to an error naming rank %d\n"
                 : "FAIL (rank %d the victim)\n",
              a.victim);
  return ok ? 0 : 1;
}
