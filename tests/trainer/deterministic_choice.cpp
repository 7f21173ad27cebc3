// Checks which all-reduce algorithm a communicator picks for a range of sizes.
//   deterministic_choice static [options]   every choice is the fixed size threshold's
//                                           (defaultAlgorithm); "options": set
//                                           Options::deterministic instead of the env
//   deterministic_choice NAME               every choice is NAME (what a tune file says)
// Run under chorus-run; exits non-zero naming the first size that disagrees.
#include "algorithms/algorithms.hpp"

#include <chorus/chorus.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string expect = argv[1];
  chorus::Options options;
  options.deterministic = argc > 2 && std::string(argv[2]) == "options";
  chorus::Communicator comm = chorus::Communicator::initFromEnv(options);
  int bad = 0;
  for (size_t count : {1ul, 64ul, 1000ul, 4096ul, 65536ul, 300000ul, 1ul << 22}) {
    const std::string got = comm.algorithmFor("allreduce", count, chorus::DataType::Float32);
    // Up to 256 B on shm (2..32 ranks) the mailbox runs, whatever the mode: no schedule,
    // a fixed rank-order reduction (README, "Small messages").
    const bool mailbox = comm.transportName() == "shm" && count * 4 <= 256 && comm.size() >= 2 &&
                         comm.size() <= 32;
    const std::string want =
        mailbox ? "mailbox"
        : expect == "static"
            ? chorus::defaultAlgorithm(chorus::Collective::AllReduce, count * 4, comm.size()).name
            : expect;
    if (got != want) {
      std::fprintf(stderr, "rank %d: %zu floats: algorithm %s, expected %s\n", comm.rank(), count,
                   got.c_str(), want.c_str());
      ++bad;
    }
  }
  // The choice must also run: one all-reduce with an exact result.
  float x = static_cast<float>(comm.rank() + 1), sum = 0;
  comm.allReduce(&x, &sum, 1, chorus::DataType::Float32, chorus::RedOp::Sum).wait();
  const int n = comm.size();
  if (sum != static_cast<float>(n * (n + 1) / 2)) ++bad;
  return bad ? 1 : 0;
}
