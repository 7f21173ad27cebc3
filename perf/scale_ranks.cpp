// scale_ranks: many ranks on one node. Times the communicator's creation, runs all-reduce
// (small and 1 MiB), all-gather and all-to-all with results checked against values
// computed here, and reports the shared memory the job takes (Shmem in /proc/meminfo,
// before and after; other processes on the machine add noise) and the address space this
// rank maps from the transport's segments.
//   chorus-run -n 64 scale_ranks        (perf/scale_ranks.sh runs it and prints the table)
// Exit 0 when every result is right; 1 on a wrong element; 3 on an error.
#include <chorus/chorus.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

long shmemKiB() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  long value = 0;
  std::string unit;
  while (in >> key >> value >> unit)
    if (key == "Shmem:") return value;
  return -1;
}

// Bytes of this process's mappings of the shm transport's segments.
long mappedKiB() {
  std::ifstream in("/proc/self/maps");
  std::string line;
  long kib = 0;
  while (std::getline(in, line)) {
    if (line.find("/dev/shm/chorus") == std::string::npos) continue;
    unsigned long from = 0, to = 0;
    std::sscanf(line.c_str(), "%lx-%lx", &from, &to);
    kib += static_cast<long>((to - from) / 1024);
  }
  return kib;
}

}  // namespace

int main() {
  const long shmBefore = shmemKiB();
  const auto t0 = Clock::now();
  try {
    chorus::Communicator comm = chorus::Communicator::initFromEnv();
    const double createMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const int r = comm.rank(), n = comm.size();
    const long shmCreated = shmemKiB();
    size_t wrong = 0;
    auto value = [](int rank, size_t i) {
      return static_cast<int64_t>(rank + 1) * 1000003 + static_cast<int64_t>(i);
    };
    for (size_t count : {size_t{4}, size_t{1} << 17}) {  // 32 B and 1 MiB of int64
      std::vector<int64_t> in(count), out(count, -1);
      for (size_t i = 0; i < count; ++i) in[i] = value(r, i);
      comm.allReduce(in.data(), out.data(), count, chorus::DataType::Int64, chorus::RedOp::Sum)
          .wait();
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (int q = 0; q < n; ++q) want += value(q, i);
        wrong += out[i] != want;
      }
    }
    const size_t per = 1024;  // elements per rank
    std::vector<int64_t> in(per * n), out(per * n, -1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = value(r, i);
    comm.allGather(in.data(), out.data(), per, chorus::DataType::Int64).wait();
    for (size_t i = 0; i < out.size(); ++i)
      wrong += out[i] != value(static_cast<int>(i / per), i % per);
    comm.allToAll(in.data(), out.data(), per, chorus::DataType::Int64).wait();
    for (size_t i = 0; i < out.size(); ++i)
      wrong += out[i] != value(static_cast<int>(i / per), r * per + i % per);
    const long shmAfter = shmemKiB();
    // Rank 0 reports; every rank's verdict is its exit code.
    if (r == 0)
      std::printf(
          "ranks %d transport %s create_ms %.1f shmem_kib_created %ld shmem_kib_after %ld "
          "mapped_kib_per_rank %ld\n",
          n, comm.transportName().c_str(), createMs, shmCreated - shmBefore, shmAfter - shmBefore,
          mappedKiB());
    if (wrong) {
      std::printf("rank %d: WRONG %zu elements\n", r, wrong);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::printf("ERROR: %s\n", e.what());
    return 3;
  }
}
