// chorus_fault_trial: one rank of a fault-injection trial (tests/fault/fault_suite.sh).
// Every rank runs the same random sequence of collectives (from --seed), each checked
// against values computed here; at call --at the victim injects --fault:
//   kill      SIGKILL itself;                stop   SIGSTOP itself (the driver kills it later);
//   close     shut down one of its sockets;  truncate  shut down the write side of a socket
//             while a large all-reduce streams through it (the peer gets part of a message).
// Each rank ends with one line: "rank R: OK", "rank R: ERROR after <ms> ms: <message>" or
// "rank R: WRONG ..." (a wrong result that was reported as success).
#include <chorus/chorus.hpp>

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using chorus::DataType;
using chorus::RedOp;

struct Options {
  uint64_t seed = 1;
  std::string fault = "kill";
  int victim = 1, at = 3, calls = 8;
};

std::vector<int> socketFds() {
  std::vector<int> fds;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      const int fd = std::atoi(e->d_name);
      struct stat st;
      if (fd > 2 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) fds.push_back(fd);
    }
    closedir(d);
  }
  return fds;
}

int32_t input(int rank, int call, size_t i) {
  return static_cast<int32_t>((rank + 1) * 3 + call * 7 + static_cast<int>(i % 11));
}

class Trial {
 public:
  Trial(chorus::Communicator& comm, const Options& o) : comm_(comm), o_(o), rng_(o.seed) {}

  // Runs call `c`; false and a printed WRONG line if the result is wrong.
  bool run(int c, bool big) {
    const int n = comm_.size(), r = comm_.rank();
    const int kind = static_cast<int>(rng_() % 5);
    const size_t count = big ? (size_t{4} << 20) : 1 + rng_() % 50000;
    const int root = static_cast<int>(rng_() % n);
    std::vector<int32_t> in(count * n), out(count * n);
    for (size_t i = 0; i < in.size(); ++i) in[i] = input(r, c, i);
    auto sumAt = [&](size_t i) {
      int64_t s = 0;
      for (int q = 0; q < n; ++q) s += input(q, c, i);
      return static_cast<int32_t>(s);
    };
    const char* what = "";
    size_t bad = SIZE_MAX;
    if (big || kind == 0) {
      what = "allReduce";
      comm_.allReduce(in.data(), out.data(), count, DataType::Int32, RedOp::Sum).wait();
      for (size_t i = 0; i < count && bad == SIZE_MAX; ++i)
        if (out[i] != sumAt(i)) bad = i;
    } else if (kind == 1) {
      what = "allGather";
      comm_.allGather(in.data(), out.data(), count, DataType::Int32).wait();
      for (size_t i = 0; i < count * n && bad == SIZE_MAX; ++i)
        if (out[i] != input(static_cast<int>(i / count), c, i % count)) bad = i;
    } else if (kind == 2) {
      what = "reduceScatter";
      comm_.reduceScatter(in.data(), out.data(), count, DataType::Int32, RedOp::Sum).wait();
      for (size_t i = 0; i < count && bad == SIZE_MAX; ++i)
        if (out[i] != sumAt(r * count + i)) bad = i;
    } else if (kind == 3) {
      what = "broadcast";
      comm_.broadcast(in.data(), out.data(), count, DataType::Int32, root).wait();
      for (size_t i = 0; i < count && bad == SIZE_MAX; ++i)
        if (out[i] != input(root, c, i)) bad = i;
    } else {
      what = "allToAll";
      comm_.allToAll(in.data(), out.data(), count, DataType::Int32).wait();
      for (size_t i = 0; i < count * n && bad == SIZE_MAX; ++i)
        if (out[i] != input(static_cast<int>(i / count), c, r * count + i % count)) bad = i;
    }
    if (bad == SIZE_MAX) return true;
    std::printf("rank %d: WRONG %s call %d element %zu reported as success\n", r, what, c, bad);
    return false;
  }

 private:
  chorus::Communicator& comm_;
  const Options& o_;
  std::mt19937_64 rng_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--seed")
      o.seed = std::stoull(v);
    else if (k == "--fault")
      o.fault = v;
    else if (k == "--victim")
      o.victim = std::stoi(v);
    else if (k == "--at")
      o.at = std::stoi(v);
    else if (k == "--calls")
      o.calls = std::stoi(v);
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int rank = -1;
  Clock::time_point faultAt = Clock::now();
  try {
    chorus::Communicator comm = chorus::Communicator::initFromEnv();
    rank = comm.rank();
    Trial trial(comm, o);
    std::mt19937_64 local(o.seed * 977 + rank);
    for (int c = 0; c < o.calls; ++c) {
      // The truncated call is a large all-reduce on every rank (they must agree).
      const bool big = o.fault == "truncate" && c == o.at;
      faultAt = Clock::now();
      if (rank == o.victim && c == o.at) {
        if (o.fault == "kill") std::raise(SIGKILL);
        if (o.fault == "stop") std::raise(SIGSTOP);
        auto fds = socketFds();
        if (o.fault == "close" && !fds.empty()) shutdown(fds[local() % fds.size()], SHUT_RDWR);
        if (o.fault == "truncate" && !fds.empty()) {
          const int fd = fds[local() % fds.size()];
          const auto delay = std::chrono::microseconds(local() % 3000);
          std::thread([fd, delay] {
            std::this_thread::sleep_for(delay);
            shutdown(fd, SHUT_WR);
          }).detach();
        }
      }
      try {
        if (!trial.run(c, big)) return 1;
      } catch (const std::exception& e) {  // reported before the communicator is torn down
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - faultAt).count();
        std::printf("rank %d: ERROR after %.0f ms: %s\n", rank, ms, e.what());
        return 3;
      }
    }
    std::printf("rank %d: OK\n", rank);
    return 0;
  } catch (const std::exception& e) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - faultAt).count();
    std::printf("rank %d: ERROR after %.0f ms: %s\n", rank, ms, e.what());
    return 3;
  }
}
