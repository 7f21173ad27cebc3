// A tiny decoder-only transformer language model over bytes: token and position
// embeddings, pre-LayerNorm blocks of causal multi-head self-attention and a GELU MLP,
// a final LayerNorm and an output head; forward and backward written out, every matrix
// product through BLAS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace trainer {

class Transformer {
 public:
  struct Config {
    int vocab = 256, dim = 64, heads = 4, layers = 2, context = 64;
  };
  explicit Transformer(Config config);

  size_t parameterCount() const { return total_; }
  // Group 0: embeddings; 1..layers: the blocks; layers+1: final norm and head.
  std::vector<std::pair<size_t, size_t>> groups() const;
  double flopsPerSequence() const;
  void initialize(float* params, uint64_t seed) const;
  const Config& config() const { return c_; }

  // tokens: batch rows of context+1 bytes; predicts each next byte. Mean cross-entropy.
  float forward(const float* params, const int* tokens, int batch);
  void backward(const float* params, float* grads, const std::function<void(int)>& ready);

 private:
  struct Block {  // offsets of a block's parameters
    size_t ln1g, ln1b, wqkv, bqkv, wo, bo, ln2g, ln2b, w1, b1, w2, b2, end;
  };
  struct BlockCache {
    std::vector<float> in, ln1, mean1, rstd1, qkv, probs, att, mid, ln2, mean2, rstd2, h, hAct;
  };
  void attention(const float* qkv, float* out, float* probs) const;
  void attentionBackward(const float* qkv, const float* probs, const float* dOut,
                         float* dQkv) const;

  Config c_;
  size_t wte_ = 0, wpe_ = 0, lnfg_ = 0, lnfb_ = 0, head_ = 0, bhead_ = 0, total_ = 0;
  std::vector<Block> blocks_;
  // forward state
  int batch_ = 0;
  std::vector<int> inputs_, targets_;
  std::vector<BlockCache> cache_;
  std::vector<float> x_, lnf_, meanf_, rstdf_, probs_;
};

}  // namespace trainer
