#include "optimizer.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace trainer {

Optimizer::Optimizer(OptimizerConfig config, size_t parameters)
    : config_(std::move(config)), n_(parameters) {
  if (config_.kind != "adamw" && config_.kind != "sgd")
    throw std::invalid_argument("--optimizer must be adamw or sgd, not '" + config_.kind + "'");
  if (config_.decay != "cosine" && config_.decay != "linear" && config_.decay != "none")
    throw std::invalid_argument("--decay must be cosine, linear or none");
  state_.assign(config_.kind == "adamw" ? 2 * n_ : n_, 0.0f);
  // Allocated (and its pages touched) here, not in the first stepRange: 17.6 MB of first
  // page faults in the first step's optimizer took 0.4-0.5 s at 4 ranks on 2 cores, the
  // ranks leaving it up to 100 ms apart (perf/trainer/README.md, fourteenth pass).
  scratch_.assign(state_.size(), 0.0f);
}

float Optimizer::lrAt(int64_t step) const {
  const double base = config_.lr;
  if (step < config_.warmupSteps)
    return static_cast<float>(base * (step + 1) / config_.warmupSteps);
  if (config_.decay == "none") return static_cast<float>(base);
  const double span = std::max<int64_t>(1, config_.totalSteps - config_.warmupSteps);
  const double t = std::min(1.0, static_cast<double>(step - config_.warmupSteps) / span);
  const double shape =
      config_.decay == "cosine" ? 0.5 * (1 + std::cos(std::numbers::pi * t)) : 1 - t;
  const double floor = config_.minLrRatio;
  return static_cast<float>(base * (floor + (1 - floor) * shape));
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, int64_t step) {
  stepRange(params.data(), params.data(), grads.data(), 0, n_, step);
  commit();  // in place: the scratch state was written; make it current
}

// One AdamW update of n elements. Element-wise, so the compiler may use SIMD
// (optimizer.cpp is built with -fno-math-errno, which lets sqrt vectorize): every
// operation is still one correctly rounded IEEE operation per element (no reordering, no
// fused multiply-add on the baseline ISA), so the results are those of the scalar loop, bit
// for bit. The state arrays never overlap each other or the parameters; p and out may be the
// same array (the in-place step), which the compiler checks for at run time.
void Optimizer::adamwRange(const float* p, float* out, const float* g, const float* __restrict m,
                           const float* __restrict v, float* __restrict mNext,
                           float* __restrict vNext, size_t n, float lr, int64_t step) const {
  const float b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps;
  const float wd = config_.weightDecay;
  const float c1 = static_cast<float>(1 - std::pow(static_cast<double>(b1), step + 1));
  const float c2 = static_cast<float>(1 - std::pow(static_cast<double>(b2), step + 1));
  for (size_t i = 0; i < n; ++i) {
    const float mi = b1 * m[i] + (1 - b1) * g[i];
    const float vi = b2 * v[i] + (1 - b2) * g[i] * g[i];
    const float update = (mi / c1) / (std::sqrt(vi / c2) + eps);
    mNext[i] = mi;
    vNext[i] = vi;
    out[i] = p[i] - lr * (update + wd * p[i]);
  }
}

void Optimizer::stepRange(const float* p, float* out, const float* g, size_t begin, size_t end,
                          int64_t step) {
  if (scratch_.size() != state_.size()) scratch_.resize(state_.size());
  const float lr = lrAt(step);
  const float wd = config_.weightDecay;
  if (config_.kind == "sgd") {
    const float* v = state_.data();
    float* vNext = scratch_.data();
    const float mu = config_.momentum;
    for (size_t i = begin; i < end; ++i) {
      const float vi = mu * v[i] + (g[i] + wd * p[i]);
      vNext[i] = vi;
      out[i] = p[i] - lr * vi;
    }
    return;
  }
  adamwRange(p + begin, out + begin, g + begin, state_.data() + begin, state_.data() + n_ + begin,
             scratch_.data() + begin, scratch_.data() + n_ + begin, end - begin, lr, step);
}

}  // namespace trainer
