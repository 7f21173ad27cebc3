// chorus_blame_test: a survivor names the rank that died, not one that finished its part
// and left. Three ranks under chorus-run:
//   rank 2 is SIGKILLed right after set-up (the store sees its connection close);
//   rank 1 makes no call: it waits until the store reports rank 2 dead, then destroys its
//     communicator and exits 0 (a clean exit: it checks out of the store);
//   rank 0 starts a receive from rank 2 only once rank 1's process is gone, so its first
//     liveness check finds two processes gone: rank 1 (left) and rank 2 (killed).
// Rank 0 must fail naming rank 2, with failedRanks() == {2}. (Soak seed 1796500001, trial
// 552: a survivor blamed a rank that had completed every call.)
//   chorus-run -n 3 chorus_blame_test [--transport shm|tcp]
#include <chorus/chorus.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

bool processGone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

int main(int argc, char** argv) {
  chorus::Options options;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--transport") == 0) options.transport = argv[i + 1];
  auto comm = chorus::Communicator::initFromEnv(options);
  const int rank = comm.rank();
  if (comm.size() != 3) {
    std::printf("rank %d: FAIL: run me with 3 ranks\n", rank);
    return 2;
  }
  // Everyone's pid, so rank 0 can tell when rank 1 has left.
  std::vector<int64_t> pids(3);
  const int64_t mine = ::getpid();
  comm.allGather(&mine, pids.data(), 1, chorus::DataType::Int64).wait();
  if (rank == 2) {
    std::fflush(stdout);
    ::kill(::getpid(), SIGKILL);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  if (rank == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // rank 2 is dead by then
    std::printf("rank 1: OK leaving cleanly\n");
    return 0;  // the communicator checks out of the store (it saw a death: no barrier)
  }
  while (!processGone(static_cast<pid_t>(pids[1])) || !processGone(static_cast<pid_t>(pids[2]))) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::printf("rank 0: FAIL: ranks 1 and 2 still there after 20 s\n");
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<float> data(1000);
  try {
    comm.recv(data.data(), data.size(), chorus::DataType::Float32, 2).wait();
    std::printf("rank 0: FAIL: the receive from a dead rank completed\n");
    return 1;
  } catch (const chorus::Error& e) {
    const std::string what = e.what();
    const bool named = what.find("rank 2") != std::string::npos &&
                       what.find("rank 1 ") == std::string::npos &&
                       e.failedRanks() == std::vector<int>{2};
    std::printf("rank 0: %s%s (failed ranks:", named ? "OK " : "FAIL (blamed the wrong rank): ",
                what.c_str());
    for (int r : e.failedRanks()) std::printf(" %d", r);
    std::printf(")\n");
    return named ? 0 : 1;
  }
}
