// chorus_exit_helper: a trivial "rank program" for testing chorus-run itself.
//   chorus-run -n 3 chorus_exit_helper --mode ok          every rank checks its environment
//   chorus-run -n 3 chorus_exit_helper --mode exit  --rank 1   rank 1 exits 1, others exit 0
//   chorus-run -n 3 chorus_exit_helper --mode kill  --rank 1   rank 1 dies of SIGKILL
//   chorus-run -n 3 chorus_exit_helper --mode block --rank 1   rank 1 exits 1, the others
//                                                   sleep 40 s (chorus-run must stop them)
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "ok";
  int failRank = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mode") == 0) {
      mode = argv[i + 1];
    } else if (std::strcmp(argv[i], "--rank") == 0) {
      failRank = std::atoi(argv[i + 1]);
    }
  }
  const int rank = *env("CHORUS_RANK") ? std::atoi(env("CHORUS_RANK")) : -1;
  const int size = *env("CHORUS_WORLD_SIZE") ? std::atoi(env("CHORUS_WORLD_SIZE")) : -1;
  std::printf("helper rank %d of %d: CHORUS_ADDR=%s CHORUS_PORT=%s secret %s\n", rank, size,
              env("CHORUS_ADDR"), env("CHORUS_PORT"), *env("CHORUS_SECRET") ? "set" : "unset");
  std::fflush(stdout);
  if (rank < 0 || size < 1 || rank >= size || !*env("CHORUS_ADDR") || !*env("CHORUS_PORT")) {
    std::printf("FAIL rank %d: chorus-run did not set CHORUS_RANK/WORLD_SIZE/ADDR/PORT\n", rank);
    return 1;
  }
  if (mode == "ok") return 0;
  if (rank == failRank) {
    if (mode == "kill") raise(SIGKILL);
    std::printf("helper rank %d: exiting with status 1 on purpose\n", rank);
    return 1;
  }
  if (mode == "block") std::this_thread::sleep_for(std::chrono::seconds(40));
  return 0;
}
