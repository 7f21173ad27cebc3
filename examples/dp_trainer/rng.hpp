// SplitMix64: one 64-bit word of state, so a checkpoint holds the RNG exactly, and a few
// lines of integer arithmetic, so perf/trainer/ddp_reference.py replays the same stream.
#pragma once

#include <cstdint>

namespace trainer {

struct SplitMix64 {
  uint64_t state = 0;

  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) from the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // In [0, n) (modulo bias is irrelevant here and keeps the Python replay trivial).
  uint64_t below(uint64_t n) { return next() % n; }
};

}  // namespace trainer
