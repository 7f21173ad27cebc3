// SGD with momentum and AdamW over one flat parameter array, with linear warm-up and
// cosine or linear decay of the learning rate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace trainer {

struct OptimizerConfig {
  std::string kind = "adamw";  // "adamw" or "sgd"
  float lr = 1e-3f;
  float momentum = 0.9f;  // sgd
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weightDecay = 0.0f;  // decoupled (AdamW); L2 added to the gradient for sgd
  int64_t warmupSteps = 0;
  int64_t totalSteps = 1;
  std::string decay = "cosine";  // "cosine", "linear" or "none"
  float minLrRatio = 0.1f;       // the decay ends at lr x this
};

class Optimizer {
 public:
  Optimizer(OptimizerConfig config, size_t parameters);
  // Learning rate for step `step` (0-based).
  float lrAt(int64_t step) const;
  // Applies step `step` (0-based; AdamW's bias correction uses step + 1) in place.
  void step(std::span<float> params, std::span<const float> grads, int64_t step);
  // Step `step` for the elements [begin, end) only, out of place: reads `params` and the
  // state, writes `next` and the scratch state, so that the step can be applied part by
  // part (one gradient bucket at a time, as each is averaged) and still be dropped if the
  // step fails before every part is done. commit() then makes the scratch state current.
  // The same arithmetic per element as step(): the result is bit-identical.
  void stepRange(const float* params, float* next, const float* grads, size_t begin, size_t end,
                 int64_t step);
  void commit() { state_.swap(scratch_); }
  // Momentum (sgd) or first then second moments (adamw): what a checkpoint must keep.
  std::span<float> state() { return state_; }

 private:
  void adamwRange(const float* p, float* out, const float* g, const float* __restrict m,
                  const float* __restrict v, float* __restrict mNext, float* __restrict vNext,
                  size_t n, float lr, int64_t step) const;
  OptimizerConfig config_;
  size_t n_;
  std::vector<float> state_, scratch_;
};

}  // namespace trainer
