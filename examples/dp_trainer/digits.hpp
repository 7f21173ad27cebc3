// The handwritten digits python3-sklearn ships (1797 8x8 images, pixels 0..16, label last),
// a fixed held-out split and the order in which training samples are drawn.
#pragma once

#include "rng.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainer {

inline constexpr const char* kDigitsPath =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";

struct Dataset {
  int features = 0;
  int classes = 0;
  std::vector<float> x;  // size() rows of `features`, scaled to [0, 1]
  std::vector<int> y;
  size_t size() const { return y.size(); }
};

// Reads the gzip-compressed CSV (zlib); throws std::runtime_error naming the file and line.
Dataset loadDigits(const std::string& path);

// The last `testFraction` of a seeded permutation is held out.
void splitHeldOut(const Dataset& all, double testFraction, uint64_t seed, Dataset& train,
                  Dataset& test);

// Training samples in epochs, each a fresh Fisher-Yates shuffle; a global batch may run
// across an epoch's end. All of its state goes into a checkpoint.
class Sampler {
 public:
  struct State {
    uint64_t rng = 0;
    uint64_t epoch = 0;
    uint64_t cursor = 0;  // next position in `order`
    std::vector<uint32_t> order;
  };
  Sampler(size_t samples, uint64_t seed);
  // The next `global` sample indices; rank r trains on its slice r of them.
  void nextBatch(size_t global, std::vector<uint32_t>& out);
  const State& state() const { return state_; }
  void restore(State state);

 private:
  void shuffle();
  State state_;
  SplitMix64 rng_;
};

}  // namespace trainer
