// A multi-layer perceptron classifier with ReLU between layers and softmax cross-entropy,
// forward and backward written out, every matrix product through BLAS (sgemm).
// Parameters live in one flat array, layer by layer (W as out x in, then b), so that the
// gradients of consecutive layers form contiguous buckets for the all-reduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace trainer {

class Mlp {
 public:
  struct Layer {
    int in = 0, out = 0;
    size_t w = 0, b = 0;  // offsets of W and b in the flat parameter array
    size_t end() const { return b + static_cast<size_t>(out); }
  };
  // sizes: input, hidden..., classes. A layer's gradients are announced in blocks of
  // whole rows of W of at most `maxGroupFloats` floats (the last block also holds b), so
  // that a big layer's all-reduce starts before its whole weight gradient is computed.
  explicit Mlp(std::vector<int> sizes, size_t maxGroupFloats = SIZE_MAX);

  const std::vector<Layer>& layers() const { return layers_; }
  size_t parameterCount() const { return layers_.back().end(); }
  // The gradient groups [begin, end) in forward order; backward completes them last first.
  const std::vector<std::pair<size_t, size_t>>& groups() const { return groups_; }
  // Multiply-adds x 2 per sample: forward one GEMM per layer, backward two.
  double flopsPerSample() const;
  // He-uniform weights, zero biases.
  void initialize(float* params, uint64_t seed) const;

  // Mean cross-entropy over the batch; `correct` gets the number classified right.
  float forward(const float* params, const float* x, const int* y, int batch, int* correct);
  // Gradients of the last forward's mean loss into `grads`; calls ready(g) as soon as
  // group g's are complete (the last group first), so their all-reduce can start.
  void backward(const float* params, float* grads, const std::function<void(int)>& ready);

 private:
  struct Block {
    int layer = 0, rowBegin = 0, rowEnd = 0;
  };
  std::vector<Layer> layers_;
  std::vector<std::pair<size_t, size_t>> groups_;
  std::vector<Block> blocks_;  // one per group
  int batch_ = 0;
  const float* input_ = nullptr;
  const int* labels_ = nullptr;
  std::vector<std::vector<float>> acts_;  // output of each layer (after ReLU; last: probs)
  std::vector<float> delta_, deltaPrev_;
};

}  // namespace trainer
