// chorus_kill_test: a rank dies by SIGKILL in the middle of a large allReduce; every other
// rank must get a chorus::Error naming the dead rank, the collective and its sequence
// number within 10 s, and exit. Self-contained launcher (no chorus-run):
//   chorus_kill_test --transport shm|tcp --ranks 4 --victim 2 [--kill-after-ms 500 (-1: right
//                    after set-up, before its first call)]
//                    [--count 4194304] [--detect-limit-s 10] [--deadline-s 30]
//                    [--buffers malloc|registered|memalloc [--algo NAME]] [--node-size K]
//                    [--child-holds-fds clone|fork]
// --node-size K puts ranks on "nodes" of K (rank / K): each rank gets its own UTS namespace
// and hostname chorus-node<i> (needs root: the Soft-RoCE guest), so the communicator sees
// several hosts and uses the network transport (CHORUS_NET) between them.
// With registered or memAlloc buffers the all-reduce reads peers' memory in place (the
// one-sided path): a peer killed then must still give an error, not a hang or a SIGBUS.
// --child-holds-fds clone: the victim makes a child just before it dies by a raw clone (no
// fork handlers run) that keeps every descriptor it inherited (the store's socket, the tcp
// transport's sockets) open and sleeps: no peer sees a connection close, so only a watch of
// the victim's process itself (on its host) can name it in time.
// --child-holds-fds fork: the same child made by fork(), as a data-loader worker is. Chorus
// releases its sockets in a forked child (src/net/fork_guard.hpp), so the victim's
// connections close when it dies and peers on other hosts (--node-size) learn of it too.
// The parent forks the ranks first, then calls chorus::getUniqueId() and hands the id to
// them through pipes (no fork after threads). A rank that has not exited by the deadline
// is a HANG: everything is killed and the test fails.
#include <chorus/chorus.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace {

constexpr int kMaxRanks = 64;

struct RankSlot {
  std::atomic<int> state;  // 0 starting, 1 looping, 2 got the error, 3 init failed
  std::atomic<int64_t> detectNs;
  std::atomic<long> iterations;
  char message[1024];
};

struct Shared {  // in MAP_SHARED memory, visible to the parent and every rank
  std::atomic<int64_t> killNs;
  std::atomic<long> victimIterations;
  std::atomic<pid_t> holderPid;  // --child-holds-fds: the victim's child, killed at the end
  RankSlot ranks[kMaxRanks];
};

int64_t monoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Args {
  std::string transport = "shm";
  int ranks = 4;
  int victim = 2;
  int killAfterMs = 500;
  size_t count = size_t{4} << 20;
  double detectLimitS = 10;
  double deadlineS = 30;
  std::string buffers = "malloc";
  std::string algo;  // registered/memAlloc buffers: the all-reduce (default peer_twoshot)
  int nodeSize = 0;
  std::string childHoldsFds;  // "", "clone" or "fork"
};

bool readAll(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t got = read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// Exit codes: 0 correct error, 1 wrong message, 2 too slow, 3 init failed, 4 other.
int runRank(const Args& a, int rank, int idFd, Shared* sh) {
  RankSlot& slot = sh->ranks[rank];
  chorus::UniqueId id;
  if (!readAll(idFd, id.bytes.data(), id.bytes.size())) {
    std::printf("rank %d: could not read the unique id\n", rank);
    return 4;
  }
  close(idFd);
  if (a.nodeSize > 0) {
    const std::string host = "chorus-node" + std::to_string(rank / a.nodeSize);
    if (unshare(CLONE_NEWUTS) != 0 || sethostname(host.c_str(), host.size()) != 0) {
      std::printf("rank %d: cannot become %s: %s\n", rank, host.c_str(), std::strerror(errno));
      return 3;
    }
  }
  chorus::Options opt;
  opt.timeout = std::chrono::seconds(60);
  opt.transport = a.transport;
  chorus::Communicator comm;
  try {
    comm = chorus::Communicator::init(rank, a.ranks, id, opt);
  } catch (const std::exception& e) {
    std::printf("rank %d: init failed: %s\n", rank, e.what());
    slot.state = 3;
    return 3;
  }
  std::vector<float> sendStore, recvStore;
  float *sendData, *recvData;
  if (a.buffers == "memalloc") {
    sendData = static_cast<float*>(chorus::memAlloc(a.count * sizeof(float)));
    recvData = static_cast<float*>(chorus::memAlloc(a.count * sizeof(float)));
  } else {
    sendStore.resize(a.count);
    recvStore.resize(a.count);
    sendData = sendStore.data();
    recvData = recvStore.data();
    if (a.buffers == "registered") {
      comm.registerBuffer(sendData, a.count * sizeof(float));
      comm.registerBuffer(recvData, a.count * sizeof(float));
    }
  }
  // Forced: the tuner keeps CMA-read buffers on 4 KiB pages on the copy path.
  // --algo ring: registered buffers over the two-sided path (ib: the rendezvous).
  if (a.buffers != "malloc")
    comm.setAlgorithm("allreduce:" + (a.algo.empty() ? std::string("peer_twoshot") : a.algo));
  std::fill(sendData, sendData + a.count, 1.0f + static_cast<float>(rank));
  std::fill(recvData, recvData + a.count, 0.0f);
  if (rank == a.victim && a.killAfterMs < 0) {  // before its first call: never connected
    sh->victimIterations = 0;
    sh->killNs = monoNs();
    raise(SIGKILL);
  }
  if (rank == a.victim) {
    std::thread([&a, sh, &slot] {
      std::this_thread::sleep_for(std::chrono::milliseconds(a.killAfterMs));
      sh->victimIterations = slot.iterations.load();
      if (!a.childHoldsFds.empty()) {
        const pid_t holder =
            a.childHoldsFds == "fork"
                ? fork()
                : pid_t(syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr));
        if (holder == 0) {     // async-signal-safe calls only: the parent has threads
          close(1), close(2);  // not the test's output pipes: CTest waits for them to close
          sleep(static_cast<unsigned>(a.deadlineS) + 30);
          _exit(0);
        }
        sh->holderPid = holder;
      }
      sh->killNs = monoNs();
      raise(SIGKILL);
    }).detach();
  }
  slot.state = 1;
  try {
    for (;;) {
      chorus::Work w = comm.allReduce(sendData, recvData, a.count, chorus::DataType::Float32,
                                      chorus::RedOp::Sum);
      w.wait();
      ++slot.iterations;
    }
  } catch (const chorus::Error& e) {
    const int64_t now = monoNs();
    slot.detectNs = now;
    std::snprintf(slot.message, sizeof slot.message, "%s", e.what());
    slot.state = 2;
    const int64_t killNs = sh->killNs.load();
    const std::string msg = e.what();
    const double ms = killNs ? static_cast<double>(now - killNs) / 1e6 : -1;
    std::printf("rank %d: chorus::Error(%s) %.1f ms after the kill, after %ld allReduces: %s\n",
                rank, chorus::toString(e.code()), ms, slot.iterations.load(), msg.c_str());
    if (killNs == 0) {
      std::printf("FAIL rank %d: the error came before the victim was killed\n", rank);
      return 4;
    }
    bool ok = true;
    // No call precedes the loop: the call that failed is sequence number `iterations`.
    const std::string call = "allReduce #" + std::to_string(slot.iterations.load()) + " (";
    for (const std::string& want : {"rank " + std::to_string(a.victim), call}) {
      if (msg.find(want) == std::string::npos) {
        std::printf("FAIL rank %d: the message does not contain \"%s\"\n", rank, want.c_str());
        ok = false;
      }
    }
    if (!ok) return 1;
    if (ms > a.detectLimitS * 1000) {
      std::printf("FAIL rank %d: detection took %.1f ms (limit %.0f s)\n", rank, ms,
                  a.detectLimitS);
      return 2;
    }
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAIL rank %d: non-chorus exception: %s\n", rank, e.what());
    return 4;
  }
}

bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--transport") {
      a->transport = v;
    } else if (k == "--ranks") {
      a->ranks = std::atoi(v);
    } else if (k == "--victim") {
      a->victim = std::atoi(v);
    } else if (k == "--kill-after-ms") {
      a->killAfterMs = std::atoi(v);
    } else if (k == "--count") {
      a->count = std::strtoull(v, nullptr, 10);
    } else if (k == "--detect-limit-s") {
      a->detectLimitS = std::atof(v);
    } else if (k == "--deadline-s") {
      a->deadlineS = std::atof(v);
    } else if (k == "--buffers") {
      a->buffers = v;
    } else if (k == "--algo") {
      a->algo = v;
    } else if (k == "--node-size") {
      a->nodeSize = std::atoi(v);
    } else if (k == "--child-holds-fds") {
      a->childHoldsFds = v;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && a->ranks >= 2 && a->ranks <= kMaxRanks && a->victim >= 0 &&
         a->victim < a->ranks && a->count > 0 &&
         (a->childHoldsFds.empty() || a->childHoldsFds == "clone" || a->childHoldsFds == "fork") &&
         (a->buffers == "malloc" || a->buffers == "registered" || a->buffers == "memalloc");
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parseArgs(argc, argv, &a)) {
    std::fprintf(
        stderr,
        "usage: %s --transport shm|tcp --ranks N --victim V [--kill-after-ms MS] "
        "[--count FLOATS] [--detect-limit-s S] [--deadline-s S] "
        "[--buffers malloc|registered|memalloc] [--node-size K] [--child-holds-fds clone|fork]\n",
        argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::printf(
      "kill test: %d ranks over %s, rank %d killed %d ms into a loop of %zu-float "
      "allReduces, %s buffers\n",
      a.ranks, a.transport.c_str(), a.victim, a.killAfterMs, a.count, a.buffers.c_str());
  std::fflush(stdout);

  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 2;
  }
  auto* sh = new (mem) Shared{};

  std::vector<pid_t> pids(a.ranks, -1);
  std::vector<int> idPipes(a.ranks, -1);
  for (int r = 0; r < a.ranks; ++r) {
    int fds[2];
    if (pipe(fds) != 0) {
      std::perror("pipe");
      return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    if (pid == 0) {
      close(fds[1]);
      for (int q = 0; q < r; ++q) close(idPipes[q]);
      int code = runRank(a, r, fds[0], sh);
      std::fflush(stdout);
      std::exit(code);
    }
    close(fds[0]);
    idPipes[r] = fds[1];
    pids[r] = pid;
  }

  chorus::UniqueId id = chorus::getUniqueId();
  for (int r = 0; r < a.ranks; ++r) {
    if (write(idPipes[r], id.bytes.data(), id.bytes.size()) !=
        static_cast<ssize_t>(id.bytes.size())) {
      std::perror("write id");
    }
    close(idPipes[r]);
  }

  // Wait: at most 60 s overall, and at most deadlineS after the kill.
  const int64_t start = monoNs();
  std::vector<int> status(a.ranks, 0);
  std::vector<bool> done(a.ranks, false);
  int remaining = a.ranks;
  bool hang = false;
  while (remaining > 0) {
    for (int r = 0; r < a.ranks; ++r) {
      if (done[r]) continue;
      pid_t got = waitpid(pids[r], &status[r], WNOHANG);
      if (got == pids[r]) {
        done[r] = true;
        --remaining;
      }
    }
    if (remaining == 0) break;
    const int64_t now = monoNs();
    const int64_t killNs = sh->killNs.load();
    const bool pastKill = killNs && now - killNs > static_cast<int64_t>(a.deadlineS * 1e9);
    if (pastKill || now - start > static_cast<int64_t>(60e9)) {
      hang = true;
      break;
    }
    usleep(10000);
  }

  bool ok = true;
  if (hang) {
    for (int r = 0; r < a.ranks; ++r) {
      if (done[r]) continue;
      const RankSlot& s = sh->ranks[r];
      const char* where = s.state == 2   ? "reported the error but did not exit (hang in cleanup)"
                          : s.state == 1 ? "still inside allReduce (no error reported)"
                                         : "still in init";
      std::printf("FAIL HANG: rank %d %s after the deadline; killing it\n", r, where);
      kill(pids[r], SIGKILL);
      waitpid(pids[r], &status[r], 0);
    }
    ok = false;
  }
  const int64_t killNs = sh->killNs.load();
  if (killNs == 0) {
    std::printf("FAIL the victim never reached its kill point\n");
    ok = false;
  } else {
    std::printf("victim rank %d was killed after %ld allReduces\n", a.victim,
                sh->victimIterations.load());
  }
  double worstMs = 0;
  for (int r = 0; r < a.ranks; ++r) {
    const int st = status[r];
    if (r == a.victim) {
      if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
        std::printf("FAIL victim rank %d did not die of SIGKILL (status 0x%x)\n", r, st);
        ok = false;
      }
      continue;
    }
    const RankSlot& s = sh->ranks[r];
    if (s.state == 2 && killNs) {
      double ms = static_cast<double>(s.detectNs.load() - killNs) / 1e6;
      worstMs = ms > worstMs ? ms : worstMs;
    }
    if (!done[r]) continue;  // already reported as a hang
    if (WIFSIGNALED(st)) {
      std::printf("FAIL rank %d died of signal %d (%s)\n", r, WTERMSIG(st),
                  strsignal(WTERMSIG(st)));
      ok = false;
    } else if (WEXITSTATUS(st) != 0) {
      std::printf("FAIL rank %d exited with %d\n", r, WEXITSTATUS(st));
      ok = false;
    }
  }
  if (const pid_t holder = sh->holderPid.load(); holder > 0) kill(holder, SIGKILL);
  std::printf("detection latency (kill -> last survivor's error): %.1f ms\n", worstMs);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
