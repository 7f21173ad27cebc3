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
  const float lr = lrAt(step);
  const float wd = config_.weightDecay;
  float* p = params.data();
  const float* g = grads.data();
  if (config_.kind == "sgd") {
    float* v = state_.data();
    const float mu = config_.momentum;
    for (size_t i = 0; i < n_; ++i) {
      v[i] = mu * v[i] + (g[i] + wd * p[i]);
      p[i] -= lr * v[i];
    }
    return;
  }
  float* m = state_.data();
  float* v = state_.data() + n_;
  const float b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps;
  const float c1 = static_cast<float>(1 - std::pow(static_cast<double>(b1), step + 1));
  const float c2 = static_cast<float>(1 - std::pow(static_cast<double>(b2), step + 1));
  for (size_t i = 0; i < n_; ++i) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    const float update = (m[i] / c1) / (std::sqrt(v[i] / c2) + eps);
    p[i] -= lr * (update + wd * p[i]);
  }
}

}  // namespace trainer
