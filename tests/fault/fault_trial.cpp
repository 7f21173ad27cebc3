// chorus_fault_trial: one rank of a fault-injection trial (tests/fault/fault_suite.sh).
// Every rank runs the same random sequence of collectives (from --seed) on int64 inputs
// that are unique per rank, call and position, and checks each result against values
// computed here from the inputs' formula (not through Chorus). At call --at the victim
// prints "rank V: FAULT <kind> at call <at>" and injects --fault:
//   kill      SIGKILL itself;   stop   SIGSTOP itself (the driver kills it later);
//   exit      _exit(7) without closing anything (a crash in the program around Chorus);
//   close     lose one data connection: shm unmaps one of the shared segments it uses (its
//             own or a peer's) and maps private zeroes there, so that what it writes or
//             reads no longer reaches the peer; tcp/ucx shut down one data socket;
//   truncate  shut down the write side of a data socket while a large all-reduce streams
//             through it (the peer gets part of a message); tcp/ucx only;
//   store     shut down its connection to the rendezvous store.
//   cutoff    take every NIC of its network namespace but loopback down (the test bed's
//             node: its ranks stay alive but nobody can reach them; root, tests/testbed);
//   mark      create the file --mark names and go on: the fault comes from outside (the
//             two-node Soft-RoCE bed's host cuts a node off once it sees the file).
// --only allReduce: every call an allReduce(sum) (the seed still picks its count).
// Each rank ends with one line: "rank R: OK verified <calls> calls", "rank R: ERROR after
// <ms> ms: <message>" ("ERROR during set-up after" when the communicator could not be
// made) or "rank R: WRONG ..." (a wrong result reported as success).
// Exit codes: 0 OK, 1 WRONG, 3 ERROR, 4 the fault could not be injected.
#include <chorus/chorus.hpp>

#include "../common/socket_census.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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
  std::string mark;  // --mark: the file `mark` creates
  bool allReduceOnly = false;
  int victim = 1, at = 3, calls = 6;
};

// Connected TCP sockets of this process: the store's (either end on CHORUS_PORT) or the
// others (the data path).
std::vector<int> sockets(bool store) {
  const char* p = std::getenv("CHORUS_PORT");
  return chorus::test_support::connectedInetSockets(p ? std::atoi(p) : -1, store);
}

// The address ranges of the shm transport's FIFO segments (memfds "chorus-<token>-<rank>":
// this rank's own and those of the peers it has sent to).
std::vector<std::pair<uintptr_t, uintptr_t>> shmSegments() {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:chorus-") == std::string::npos) continue;
    uintptr_t from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &from, &to) == 2) ranges.emplace_back(from, to);
  }
  return ranges;
}

// Inputs: unique per rank, call and position, so that a block moved to another offset, or
// taken from another rank or call, changes the result.
int64_t input(int rank, int call, size_t i) {
  return (int64_t{call + 1} << 44) | (int64_t{rank + 1} << 36) | static_cast<int64_t>(i);
}

class Trial {
 public:
  Trial(chorus::Communicator& comm, uint64_t seed, bool allReduceOnly)
      : comm_(comm), rng_(seed), allReduceOnly_(allReduceOnly) {}

  // Runs call `c`; false and a printed WRONG line if the result is wrong.
  bool run(int c, bool big) {
    const int n = comm_.size(), r = comm_.rank();
    const int drawn = static_cast<int>(rng_() % 7);  // drawn either way: the same counts
    const int kind = allReduceOnly_ ? 0 : drawn;
    const size_t count = big ? (size_t{1} << 20) : 1 + rng_() % 40000;
    const int root = static_cast<int>(rng_() % n);
    std::vector<int64_t> in(count * n), out(count * n, -1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = input(r, c, i);
    auto sumAt = [&](size_t i) {
      int64_t s = 0;
      for (int q = 0; q < n; ++q) s += input(q, c, i);
      return s;
    };
    const char* what = "";
    size_t bad = SIZE_MAX;
    auto check = [&](size_t elements, auto expected) {
      for (size_t i = 0; i < elements && bad == SIZE_MAX; ++i)
        if (out[i] != expected(i)) bad = i;
    };
    const DataType t = DataType::Int64;
    if (big || kind == 0) {
      what = "allReduce(sum)";
      comm_.allReduce(in.data(), out.data(), count, t, RedOp::Sum).wait();
      check(count, sumAt);
    } else if (kind == 1) {
      what = "allReduce(max)";
      comm_.allReduce(in.data(), out.data(), count, t, RedOp::Max).wait();
      check(count, [&](size_t i) { return input(n - 1, c, i); });
    } else if (kind == 2) {
      what = "allGather";
      comm_.allGather(in.data(), out.data(), count, t).wait();
      check(count * n, [&](size_t i) { return input(static_cast<int>(i / count), c, i % count); });
    } else if (kind == 3) {
      what = "reduceScatter";
      comm_.reduceScatter(in.data(), out.data(), count, t, RedOp::Sum).wait();
      check(count, [&](size_t i) { return sumAt(r * count + i); });
    } else if (kind == 4) {
      what = "broadcast";
      comm_.broadcast(in.data(), out.data(), count, t, root).wait();
      check(count, [&](size_t i) { return input(root, c, i); });
    } else if (kind == 5) {
      what = "reduce";
      comm_.reduce(in.data(), out.data(), count, t, RedOp::Sum, root).wait();
      if (r == root) check(count, sumAt);
    } else {
      what = "allToAll";
      comm_.allToAll(in.data(), out.data(), count, t).wait();
      check(count * n,
            [&](size_t i) { return input(static_cast<int>(i / count), c, r * count + i % count); });
    }
    if (bad == SIZE_MAX) return true;
    std::printf("rank %d: WRONG %s call %d element %zu reported as success\n", r, what, c, bad);
    return false;
  }

 private:
  chorus::Communicator& comm_;
  std::mt19937_64 rng_;
  bool allReduceOnly_;
};

// Strikes at the start of call `at`; false if there was nothing to strike.
bool inject(const Options& o, const std::string& transport, std::mt19937_64& local) {
  const std::string& f = o.fault;
  if (f == "kill") std::raise(SIGKILL);
  if (f == "stop") std::raise(SIGSTOP);
  if (f == "exit") _exit(7);
  if (f == "mark") return !o.mark.empty() && std::ofstream(o.mark).good();
  if (f == "cutoff")
    return std::system(
               "for nic in $(ls /sys/class/net); do [ $nic = lo ] || "
               "ip link set $nic down || exit 1; done") == 0;
  if (f == "close" && transport == "shm") {
    auto segments = shmSegments();
    if (segments.empty()) return false;
    auto [from, to] = segments[local() % segments.size()];
    return mmap(reinterpret_cast<void*>(from), to - from, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
  }
  auto fds = sockets(f == "store");
  if (fds.empty()) return false;
  const int fd = fds[local() % fds.size()];
  if (f == "close" || f == "store") return shutdown(fd, SHUT_RDWR) == 0;
  if (f == "truncate") {
    const auto delay = std::chrono::microseconds(local() % 3000);
    std::thread([fd, delay] {
      std::this_thread::sleep_for(delay);
      shutdown(fd, SHUT_WR);
    }).detach();
    return true;
  }
  return false;
}

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
    else if (k == "--mark")
      o.mark = v;
    else if (k == "--only" && v == "allReduce")
      o.allReduceOnly = true;
    else {
      std::fprintf(stderr, "chorus_fault_trial: unknown option %s %s\n", k.c_str(), v.c_str());
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int rank = -1;  // until the communicator says: what the launcher said
  for (const char* name : {"CHORUS_RANK", "RANK", "OMPI_COMM_WORLD_RANK"})
    if (const char* v = std::getenv(name); v && rank < 0) rank = std::atoi(v);
  Clock::time_point faultAt = Clock::now();
  auto error = [&](const std::exception& e, const char* when) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - faultAt).count();
    std::printf("rank %d: ERROR %safter %.0f ms: %s\n", rank, when, ms, e.what());
    return 3;
  };
  try {
    chorus::Communicator comm = chorus::Communicator::initFromEnv();
    rank = comm.rank();
    Trial trial(comm, o.seed, o.allReduceOnly);
    std::mt19937_64 local(o.seed * 977 + rank);
    for (int c = 0; c < o.calls; ++c) {
      // The truncated call is a large all-reduce on every rank (they must agree).
      const bool big = o.fault == "truncate" && c == o.at;
      faultAt = Clock::now();
      if (rank == o.victim && c == o.at) {
        std::printf("rank %d: FAULT %s at call %d\n", rank, o.fault.c_str(), c);
        if (!inject(o, comm.transportName(), local)) {
          std::printf("rank %d: FAULT-MISSED: nothing to %s\n", rank, o.fault.c_str());
          return 4;
        }
      }
      try {
        if (!trial.run(c, big)) return 1;
      } catch (const std::exception& e) {  // reported before the communicator is torn down
        return error(e, "");
      }
    }
    std::printf("rank %d: OK verified %d calls\n", rank, o.calls);
    return 0;
  } catch (const std::exception& e) {  // creating the communicator failed: no fault yet
    return error(e, "during set-up ");
  }
}
