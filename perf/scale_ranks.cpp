// scale_ranks: many ranks on one node. Times the communicator's creation, runs all-reduce
// (small and 1 MiB) and all-gather, then all-to-all, with results checked against values
// computed here, and reports what the transport took after each phase: the shared memory
// of the job (Shmem in /proc/meminfo, before and after; other processes on the machine add
// noise), the address space each rank maps from the shm transport's segments, and the tcp
// connections each rank holds (connected sockets but the store's).
//   chorus-run -n 64 scale_ranks        (perf/scale_ranks.sh runs both transports)
// Exit 0 when every result is right; 1 on a wrong element; 3 on an error.
#include <chorus/chorus.hpp>

#include "../tests/common/socket_census.hpp"
#include "settings/settings.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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

// KiB of this process's mappings of the shm transport's segments (named /dev/shm
// segments and memfds alike).
long mappedKiB() {
  std::ifstream in("/proc/self/maps");
  std::string line;
  long kib = 0;
  while (std::getline(in, line)) {
    if (line.find("/dev/shm/chorus") == std::string::npos &&
        line.find("/memfd:chorus") == std::string::npos)
      continue;
    unsigned long from = 0, to = 0;
    std::sscanf(line.c_str(), "%lx-%lx", &from, &to);
    kib += static_cast<long>((to - from) / 1024);
  }
  return kib;
}

// KiB of shared memory the transport's segments take, this process's share of it (Pss of
// those mappings in /proc/self/smaps): summed over the ranks, the pages the job touched.
long segmentPssKiB() {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  long kib = 0;
  bool ours = false;
  while (std::getline(in, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' ')) {
      ours = line.find("/dev/shm/chorus") != std::string::npos ||
             line.find("/memfd:chorus") != std::string::npos;
      continue;
    }
    long v = 0;
    if (ours && std::sscanf(line.c_str(), "Pss: %ld kB", &v) == 1) kib += v;
  }
  return kib;
}

// Connected TCP sockets of this process but those to or from the store (CHORUS_PORT).
long dataConnections() {
  const char* p = chorus::settings::cstr("CHORUS_PORT");
  return static_cast<long>(
      chorus::test_support::connectedInetSockets(p ? std::atoi(p) : -1, false).size());
}

}  // namespace

int main() {
  const long shmBefore = shmemKiB();
  const auto t0 = Clock::now();
  try {
    chorus::Communicator comm = chorus::Communicator::initFromEnv();
    const auto createUs =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
    const int r = comm.rank(), n = comm.size();
    const long shmCreated = shmemKiB();
    // Per phase: connected tcp sockets, KiB mapped from shm segments, their Pss.
    std::vector<int64_t> stats = {createUs};
    auto snapshot = [&] {
      stats.push_back(dataConnections());
      stats.push_back(mappedKiB());
      stats.push_back(segmentPssKiB());
    };
    snapshot();
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
    snapshot();
    const long shmMiddle = shmemKiB();
    comm.allToAll(in.data(), out.data(), per, chorus::DataType::Int64).wait();
    for (size_t i = 0; i < out.size(); ++i)
      wrong += out[i] != value(static_cast<int>(i / per), r * per + i % per);
    snapshot();
    const long shmAfter = shmemKiB();
    std::vector<int64_t> sum(stats.size()), max(stats.size());
    comm.allReduce(stats.data(), sum.data(), stats.size(), chorus::DataType::Int64,
                   chorus::RedOp::Sum)
        .wait();
    comm.allReduce(stats.data(), max.data(), stats.size(), chorus::DataType::Int64,
                   chorus::RedOp::Max)
        .wait();
    // Rank 0 reports; every rank's verdict is its exit code. A connection is two sockets,
    // one in each rank. Phases: created / after all-reduce + all-gather / after all-to-all.
    if (r == 0) {
      std::printf("ranks %d transport %s create_ms_max %.1f shmem_kib_delta %ld/%ld/%ld", n,
                  comm.transportName().c_str(), max[0] / 1000.0, shmCreated - shmBefore,
                  shmMiddle - shmBefore, shmAfter - shmBefore);
      auto phases = [&](const char* name, const std::vector<int64_t>& v, int at, int64_t div) {
        std::printf(" %s %lld/%lld/%lld", name, (long long)(v[1 + at] / div),
                    (long long)(v[4 + at] / div), (long long)(v[7 + at] / div));
      };
      phases("tcp_connections_total", sum, 0, 2);
      phases("tcp_sockets_per_rank_max", max, 0, 1);
      phases("mapped_kib_per_rank_max", max, 1, 1);
      phases("segment_pss_kib_total", sum, 2, 1);
      std::printf("\n");
    }
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
