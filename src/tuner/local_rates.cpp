#include "tuner/local_rates.hpp"

#include "clock.hpp"
#include "kernels/reduce.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace chorus {
namespace {

constexpr size_t kBytes = 512 << 10;  // past L2 on most cores, a fraction of a ms per run
constexpr int kRuns = 3;              // best of: the first pays for page faults

template <typename Fn>
double bestBytesPerUs(Fn&& run) {
  double best = 0;
  for (int i = 0; i < kRuns; ++i) {
    const auto start = Clock::now();
    run();
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    best = std::max(best, static_cast<double>(kBytes) / std::max(us, 0.01));
  }
  return best;
}

}  // namespace

void measureLocalRates(Tuning& tuning, double share) {
  // Zeros are valid in every type (no NaN or denormal slow paths).
  std::vector<std::byte> a(kBytes), b(kBytes), out(kBytes);
  tuning.model.copyBytesPerUs =
      share * bestBytesPerUs([&] { std::memcpy(out.data(), a.data(), kBytes); });
  for (int t = 0; t < chorusNumTypes; ++t) {
    const auto type = static_cast<DataType>(t);
    const size_t count = kBytes / sizeOf(type);
    tuning.reduceBytesPerUs[t] =
        share * bestBytesPerUs([&] {
          kernels::reduce(type, RedOp::Sum, out.data(), a.data(), b.data(), count);
        });
  }
  tuning.model.reduceBytesPerUs = tuning.reduceBytesPerUs[static_cast<int>(DataType::Float32)];
  tuning.model.copyBytesPerUs =
      copyRateFloor(tuning.model.copyBytesPerUs, tuning.model.reduceBytesPerUs);
}

double copyRateFloor(double copyBytesPerUs, double reduceBytesPerUs) {
  return std::max(copyBytesPerUs, kCopyOverReduce * reduceBytesPerUs);
}

}  // namespace chorus
