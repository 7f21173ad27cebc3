#include "mlp.hpp"

#include "gemm.hpp"
#include "rng.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trainer {

Mlp::Mlp(std::vector<int> sizes, size_t maxGroupFloats) {
  if (sizes.size() < 2) throw std::invalid_argument("an MLP needs at least input and output sizes");
  size_t offset = 0;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    Layer l;
    l.in = sizes[i];
    l.out = sizes[i + 1];
    l.w = offset;
    l.b = l.w + static_cast<size_t>(l.in) * l.out;
    offset = l.end();
    layers_.push_back(l);
    // Equal row blocks, each within maxGroupFloats (at least one row).
    const size_t rowsPerBlock = std::max<size_t>(1, maxGroupFloats / static_cast<size_t>(l.in));
    const int blocks =
        static_cast<int>((static_cast<size_t>(l.out) + rowsPerBlock - 1) / rowsPerBlock);
    for (int k = 0; k < blocks; ++k) {
      const int r0 = l.out * k / blocks, r1 = l.out * (k + 1) / blocks;
      const size_t end = k + 1 == blocks ? l.end() : l.w + static_cast<size_t>(r1) * l.in;
      groups_.emplace_back(l.w + static_cast<size_t>(r0) * l.in, end);
      blocks_.push_back({static_cast<int>(i), r0, r1});
    }
  }
  acts_.resize(layers_.size());
}

double Mlp::flopsPerSample() const {
  double f = 0;
  for (const Layer& l : layers_) f += 3 * 2.0 * l.in * l.out;
  return f;
}

void Mlp::initialize(float* params, uint64_t seed) const {
  SplitMix64 rng{seed};
  for (const Layer& l : layers_) {
    const double bound = std::sqrt(6.0 / l.in);
    for (size_t i = 0; i < static_cast<size_t>(l.in) * l.out; ++i)
      params[l.w + i] = static_cast<float>((2 * rng.uniform() - 1) * bound);
    std::fill(params + l.b, params + l.end(), 0.0f);
  }
}

float Mlp::forward(const float* params, const float* x, const int* y, int batch, int* correct) {
  batch_ = batch;
  input_ = x;
  labels_ = y;
  const float* in = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    std::vector<float>& out = acts_[i];
    out.resize(static_cast<size_t>(batch) * l.out);
    for (int r = 0; r < batch; ++r)  // bias first, then out += in * W^T
      std::copy(params + l.b, params + l.end(), out.begin() + static_cast<size_t>(r) * l.out);
    gemm::sgemm(false, true, batch, l.out, l.in, 1.0f, in, l.in, params + l.w, l.in, 1.0f,
                out.data(), l.out);
    if (i + 1 < layers_.size())
      for (float& v : out) v = std::max(v, 0.0f);
    in = out.data();
  }
  // Softmax in place on the logits, cross-entropy summed in double.
  const int classes = layers_.back().out;
  double loss = 0;
  int right = 0;
  std::vector<float>& p = acts_.back();
  for (int r = 0; r < batch; ++r) {
    float* row = p.data() + static_cast<size_t>(r) * classes;
    const int best = static_cast<int>(std::max_element(row, row + classes) - row);
    right += y && best == y[r];
    const float top = row[best];
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += row[c] = std::exp(row[c] - top);
    for (int c = 0; c < classes; ++c) row[c] = static_cast<float>(row[c] / sum);
    if (y) loss -= std::log(std::max(static_cast<double>(row[y[r]]), 1e-30));
  }
  if (correct) *correct = right;
  return static_cast<float>(loss / batch);
}

void Mlp::backward(const float* params, float* grads, const std::function<void(int)>& ready) {
  const int batch = batch_;
  const int classes = layers_.back().out;
  // d(mean loss)/d(logits) = (p - onehot) / batch
  delta_ = acts_.back();
  for (int r = 0; r < batch; ++r) delta_[static_cast<size_t>(r) * classes + labels_[r]] -= 1.0f;
  for (float& v : delta_) v /= static_cast<float>(batch);
  int group = static_cast<int>(blocks_.size()) - 1;
  for (int i = static_cast<int>(layers_.size()) - 1; i >= 0; --i) {
    const Layer& l = layers_[i];
    const float* in = i == 0 ? input_ : acts_[i - 1].data();
    // db = column sums of delta (it rides in the layer's last block)
    float* db = grads + l.b;
    std::fill(db, db + l.out, 0.0f);
    for (int r = 0; r < batch; ++r)
      for (int c = 0; c < l.out; ++c) db[c] += delta_[static_cast<size_t>(r) * l.out + c];
    // dW = delta^T * in (out x in), a block of rows at a time, the last block first: each
    // block's gradients are final at once, and its all-reduce may start while the rest
    // computes.
    for (; group >= 0 && blocks_[group].layer == i; --group) {
      const Block& k = blocks_[group];
      gemm::sgemm(true, false, k.rowEnd - k.rowBegin, l.in, batch, 1.0f, delta_.data() + k.rowBegin,
                  l.out, in, l.in, 0.0f, grads + l.w + static_cast<size_t>(k.rowBegin) * l.in,
                  l.in);
      ready(group);
    }
    if (i > 0) {  // delta for the layer below: (delta * W) masked by its ReLU
      deltaPrev_.resize(static_cast<size_t>(batch) * l.in);
      gemm::sgemm(false, false, batch, l.in, l.out, 1.0f, delta_.data(), l.out, params + l.w, l.in,
                  0.0f, deltaPrev_.data(), l.in);
      const std::vector<float>& below = acts_[i - 1];
      for (size_t k = 0; k < deltaPrev_.size(); ++k)
        if (below[k] <= 0.0f) deltaPrev_[k] = 0.0f;
    }
    if (i > 0) delta_.swap(deltaPrev_);
  }
}

}  // namespace trainer
