// Checks which all-reduce algorithm a communicator picks for a range of sizes.
//   deterministic_choice static [options]   every choice is the fixed size threshold's
//                                           (defaultAlgorithm); "options": set
//                                           Options::deterministic instead of the env
//   deterministic_choice NAME               every choice is NAME (what a tune file says)
// Every mode also checks Work::algorithm(): each size's all-reduce must report the
// algorithm algorithmFor named for it just before (the tuner's pick), and a forced one
// (setAlgorithm), one-sided peer_twoshot on memAlloc buffers included, must be reported.
// Run under chorus-run; exits non-zero naming the first size that disagrees.
#include "algorithms/algorithms.hpp"

#include <chorus/chorus.hpp>

#include <cstdio>
#include <string>
#include <vector>

static bool reports(const chorus::Work& w, const std::string& want, int rank,
                    const std::string& what) {
  if (w.algorithm() == want) return true;
  std::fprintf(stderr, "rank %d: %s: Work::algorithm() %s, expected %s\n", rank, what.c_str(),
               w.algorithm().c_str(), want.c_str());
  return false;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string expect = argv[1];
  chorus::Options options;
  options.deterministic = argc > 2 && std::string(argv[2]) == "options";
  chorus::Communicator comm = chorus::Communicator::initFromEnv(options);
  int bad = 0;
  // Sizes the copy path's choice decides, except that from 64 KiB (Tuner::kOneSidedMinBytes:
  // below it CommImpl::stagedFor never asks Tuner::chooseStaged) shm may stage ordinary
  // buffers through peer_staged, whatever the tune file says (the loop below checks that it
  // runs so).
  for (size_t count : {1ul, 64ul, 256ul, 512ul, 1000ul, 2048ul, 4096ul, 65536ul, 300000ul}) {
    const std::string got = comm.algorithmFor("allreduce", count, chorus::DataType::Float32);
    // Up to 16 KiB on shm (2..32 ranks), and at most 16 KiB of the peers' data in all, the
    // mailbox runs, whatever the mode: no schedule, a fixed rank-order reduction (README,
    // "Small messages").
    const size_t n = static_cast<size_t>(comm.size());
    const bool mailbox = comm.transportName() == "shm" && count * 4 <= 16384 && n >= 2 && n <= 32 &&
                         count * 4 * (n - 1) <= 16384;
    const std::string want =
        mailbox ? "mailbox"
        : expect == "static"
            ? chorus::defaultAlgorithm(chorus::Collective::AllReduce, count * 4, comm.size()).name
            : expect;
    const bool mayStage = comm.transportName() == "shm" && count * 4 >= (64u << 10);
    if (got != want && !(mayStage && got == "peer_staged")) {
      std::fprintf(stderr, "rank %d: %zu floats: algorithm %s, expected %s\n", comm.rank(), count,
                   got.c_str(), want.c_str());
      ++bad;
    }
  }
  // The choice must also run: one all-reduce with an exact result.
  float x = static_cast<float>(comm.rank() + 1), sum = 0;
  chorus::Work one = comm.allReduce(&x, &sum, 1, chorus::DataType::Float32, chorus::RedOp::Sum);
  one.wait();
  const int ranks = comm.size();
  if (sum != static_cast<float>(ranks * (ranks + 1) / 2)) ++bad;
  const std::string tuned = comm.algorithmFor("allreduce", 1, chorus::DataType::Float32);
  bad += !reports(one, tuned, comm.rank(), "1 float, complete");

  // Work::algorithm() of each size's all-reduce is the tuner's pick for it.
  std::vector<float> buf(1ul << 22);
  for (size_t count : {64ul, 4096ul, 300000ul, 1ul << 22}) {
    const std::string pick = comm.algorithmFor("allreduce", count, chorus::DataType::Float32);
    chorus::Work w = comm.allReduce(buf.data(), buf.data(), count, chorus::DataType::Float32,
                                    chorus::RedOp::Sum);
    bad += !reports(w, pick, comm.rank(), std::to_string(count) + " floats, in flight");
    w.wait();
    bad += !reports(w, pick, comm.rank(), std::to_string(count) + " floats, complete");
  }
  // A forced algorithm is reported, the one-sided kind too (memAlloc buffers, shm).
  comm.setAlgorithm("allreduce:ring");
  chorus::Work ring =
      comm.allReduce(buf.data(), buf.data(), 4096, chorus::DataType::Float32, chorus::RedOp::Sum);
  ring.wait();
  bad += !reports(ring, "ring", comm.rank(), "forced ring");
  if (comm.transportName() == "shm") {
    comm.setAlgorithm("allreduce:peer_twoshot");
    float* shared = static_cast<float*>(chorus::memAlloc(65536 * sizeof(float)));
    for (int i = 0; i < 65536; ++i) shared[i] = static_cast<float>(comm.rank() + i % 7);
    chorus::Work w =
        comm.allReduce(shared, shared, 65536, chorus::DataType::Float32, chorus::RedOp::Sum);
    w.wait();
    bad += !reports(w, "peer_twoshot", comm.rank(), "forced peer_twoshot");
    for (int i = 0; i < 65536; ++i)  // and it ran: exact sums
      if (shared[i] != static_cast<float>(ranks * (ranks - 1) / 2 + ranks * (i % 7))) {
        std::fprintf(stderr, "rank %d: peer_twoshot sum wrong at %d\n", comm.rank(), i);
        ++bad;
        break;
      }
    chorus::memFree(shared);
  }
  return bad ? 1 : 0;
}
