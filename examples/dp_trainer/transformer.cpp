#include "transformer.hpp"

#include "rng.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace trainer {
namespace {

constexpr float kLnEps = 1e-5f;

// GELU, tanh form (GPT-2), and its derivative.
constexpr float kGeluC = 0.7978845608f;  // sqrt(2 / pi)
float gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kGeluC * (x + 0.044715f * x * x * x))); }
float geluGrad(float x) {
  const float t = std::tanh(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3 * 0.044715f * x * x);
}

// y[n x out] = x[n x in] W^T + b   (W is out x in)
void linear(const float* x, int n, int in, int out, const float* w, const float* b, float* y) {
  for (int r = 0; r < n; ++r) std::copy(b, b + out, y + static_cast<size_t>(r) * out);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, 1.0f, y,
              out);
}

// dW = dy^T x, db = column sums of dy, dx = dy W (when dx is given).
void linearBackward(const float* x, const float* dy, int n, int in, int out, const float* w,
                    float* dw, float* db, float* dx) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dy, out, x, in, 0.0f, dw,
              in);
  std::fill(db, db + out, 0.0f);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < out; ++c) db[c] += dy[static_cast<size_t>(r) * out + c];
  if (dx)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dy, out, w, in, 0.0f,
                dx, in);
}

void layerNorm(const float* x, int n, int d, const float* g, const float* b, float* y, float* mean,
               float* rstd) {
  for (int r = 0; r < n; ++r) {
    const float* row = x + static_cast<size_t>(r) * d;
    double m = 0, v = 0;
    for (int i = 0; i < d; ++i) m += row[i];
    m /= d;
    for (int i = 0; i < d; ++i) v += (row[i] - m) * (row[i] - m);
    v /= d;
    mean[r] = static_cast<float>(m);
    rstd[r] = static_cast<float>(1.0 / std::sqrt(v + kLnEps));
    float* out = y + static_cast<size_t>(r) * d;
    for (int i = 0; i < d; ++i) out[i] = (row[i] - mean[r]) * rstd[r] * g[i] + b[i];
  }
}

// Adds the input gradient to dx; dg, db are set.
void layerNormBackward(const float* x, const float* dy, int n, int d, const float* g,
                       const float* mean, const float* rstd, float* dg, float* db, float* dx) {
  std::fill(dg, dg + d, 0.0f);
  std::fill(db, db + d, 0.0f);
  for (int r = 0; r < n; ++r) {
    const float* row = x + static_cast<size_t>(r) * d;
    const float* dyr = dy + static_cast<size_t>(r) * d;
    double sumDxhat = 0, sumDxhatXhat = 0;
    for (int i = 0; i < d; ++i) {
      const float xhat = (row[i] - mean[r]) * rstd[r];
      const float dxhat = dyr[i] * g[i];
      dg[i] += dyr[i] * xhat;
      db[i] += dyr[i];
      sumDxhat += dxhat;
      sumDxhatXhat += dxhat * xhat;
    }
    const float a = static_cast<float>(sumDxhat / d), bb = static_cast<float>(sumDxhatXhat / d);
    float* dxr = dx + static_cast<size_t>(r) * d;
    for (int i = 0; i < d; ++i) {
      const float xhat = (row[i] - mean[r]) * rstd[r];
      dxr[i] += rstd[r] * (dyr[i] * g[i] - a - xhat * bb);
    }
  }
}

}  // namespace

Transformer::Transformer(Config config) : c_(config) {
  if (c_.dim % c_.heads != 0) throw std::invalid_argument("--dim must be a multiple of --heads");
  const size_t d = c_.dim, V = c_.vocab, T = c_.context;
  size_t at = 0;
  auto take = [&](size_t n) { return std::exchange(at, at + n); };
  wte_ = take(V * d);
  wpe_ = take(T * d);
  for (int l = 0; l < c_.layers; ++l) {
    Block b;
    b.ln1g = take(d), b.ln1b = take(d), b.wqkv = take(3 * d * d), b.bqkv = take(3 * d);
    b.wo = take(d * d), b.bo = take(d), b.ln2g = take(d), b.ln2b = take(d);
    b.w1 = take(4 * d * d), b.b1 = take(4 * d), b.w2 = take(4 * d * d), b.b2 = take(d);
    b.end = at;
    blocks_.push_back(b);
  }
  lnfg_ = take(d), lnfb_ = take(d), head_ = take(V * d), bhead_ = take(V);
  total_ = at;
  cache_.resize(c_.layers);
}

std::vector<std::pair<size_t, size_t>> Transformer::groups() const {
  std::vector<std::pair<size_t, size_t>> g{{wte_, blocks_.empty() ? lnfg_ : blocks_[0].ln1g}};
  for (const Block& b : blocks_) g.emplace_back(b.ln1g, b.end);
  g.emplace_back(lnfg_, total_);
  return g;
}

double Transformer::flopsPerSequence() const {
  const double d = c_.dim, T = c_.context;
  const double matmulParams = 12 * d * d * c_.layers + c_.vocab * d;
  return T * (6 * matmulParams + 12 * T * d * c_.layers);
}

void Transformer::initialize(float* p, uint64_t seed) const {
  SplitMix64 rng{seed};
  const double a = 0.02 * std::sqrt(3.0);  // uniform with std 0.02, as GPT-2's normal
  auto fill = [&](size_t at, size_t n, double scale) {
    for (size_t i = 0; i < n; ++i)
      p[at + i] = static_cast<float>((2 * rng.uniform() - 1) * a * scale);
  };
  auto set = [&](size_t at, size_t n, float v) { std::fill(p + at, p + at + n, v); };
  const size_t d = c_.dim;
  const double residual = 1 / std::sqrt(2.0 * std::max(1, c_.layers));
  fill(wte_, c_.vocab * d, 1), fill(wpe_, c_.context * d, 1);
  for (const Block& b : blocks_) {
    set(b.ln1g, d, 1), set(b.ln1b, d, 0), fill(b.wqkv, 3 * d * d, 1), set(b.bqkv, 3 * d, 0);
    fill(b.wo, d * d, residual), set(b.bo, d, 0), set(b.ln2g, d, 1), set(b.ln2b, d, 0);
    fill(b.w1, 4 * d * d, 1), set(b.b1, 4 * d, 0), fill(b.w2, 4 * d * d, residual), set(b.b2, d, 0);
  }
  set(lnfg_, d, 1), set(lnfb_, d, 0), fill(head_, c_.vocab * d, 1), set(bhead_, c_.vocab, 0);
}

// Causal attention for every sequence and head: out = softmax(Q K^T / sqrt(dh)) V.
void Transformer::attention(const float* qkv, float* out, float* probs) const {
  const int T = c_.context, d = c_.dim, H = c_.heads, dh = d / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  for (int b = 0; b < batch_; ++b)
    for (int h = 0; h < H; ++h) {
      const float* q = qkv + static_cast<size_t>(b) * T * 3 * d + h * dh;
      float* p = probs + (static_cast<size_t>(b) * H + h) * T * T;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, dh, scale, q, 3 * d, q + d, 3 * d,
                  0.0f, p, T);
      for (int t = 0; t < T; ++t) {
        float* row = p + static_cast<size_t>(t) * T;
        const float top = *std::max_element(row, row + t + 1);
        float sum = 0;
        for (int j = 0; j <= t; ++j) sum += row[j] = std::exp(row[j] - top);
        for (int j = 0; j <= t; ++j) row[j] /= sum;
        std::fill(row + t + 1, row + T, 0.0f);  // the future is masked
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dh, T, 1.0f, p, T, q + 2 * d, 3 * d,
                  0.0f, out + static_cast<size_t>(b) * T * d + h * dh, d);
    }
}

void Transformer::attentionBackward(const float* qkv, const float* probs, const float* dOut,
                                    float* dQkv) const {
  const int T = c_.context, d = c_.dim, H = c_.heads, dh = d / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  std::vector<float> dP(static_cast<size_t>(T) * T);
  for (int b = 0; b < batch_; ++b)
    for (int h = 0; h < H; ++h) {
      const size_t row0 = static_cast<size_t>(b) * T;
      const float* q = qkv + row0 * 3 * d + h * dh;
      const float* p = probs + (static_cast<size_t>(b) * H + h) * T * T;
      const float* dO = dOut + row0 * d + h * dh;
      float* dq = dQkv + row0 * 3 * d + h * dh;
      // dP = dO V^T; dV = P^T dO
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, dh, 1.0f, dO, d, q + 2 * d, 3 * d,
                  0.0f, dP.data(), T);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, dh, T, 1.0f, p, T, dO, d, 0.0f,
                  dq + 2 * d, 3 * d);
      // dS = P (dP - rowsum(dP P)), masked entries have P = 0
      for (int t = 0; t < T; ++t) {
        float* r = dP.data() + static_cast<size_t>(t) * T;
        const float* pr = p + static_cast<size_t>(t) * T;
        float dot = 0;
        for (int j = 0; j <= t; ++j) dot += r[j] * pr[j];
        for (int j = 0; j < T; ++j) r[j] = j <= t ? pr[j] * (r[j] - dot) : 0.0f;
      }
      // dQ = dS K scale; dK = dS^T Q scale
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dh, T, scale, dP.data(), T, q + d,
                  3 * d, 0.0f, dq, 3 * d);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, dh, T, scale, dP.data(), T, q, 3 * d,
                  0.0f, dq + d, 3 * d);
    }
}

float Transformer::forward(const float* p, const int* tokens, int batch) {
  const int T = c_.context, d = c_.dim, V = c_.vocab, H = c_.heads;
  const int n = batch * T;
  batch_ = batch;
  inputs_.resize(n), targets_.resize(n);
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < T; ++t) {
      inputs_[b * T + t] = tokens[b * (T + 1) + t];
      targets_[b * T + t] = tokens[b * (T + 1) + t + 1];
    }
  x_.assign(static_cast<size_t>(n) * d, 0.0f);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < d; ++i)
      x_[static_cast<size_t>(r) * d + i] = p[wte_ + static_cast<size_t>(inputs_[r]) * d + i] +
                                           p[wpe_ + static_cast<size_t>(r % T) * d + i];
  for (int l = 0; l < c_.layers; ++l) {
    const Block& B = blocks_[l];
    BlockCache& k = cache_[l];
    const size_t nd = static_cast<size_t>(n) * d;
    k.in = x_;
    k.ln1.resize(nd), k.mean1.resize(n), k.rstd1.resize(n);
    layerNorm(k.in.data(), n, d, p + B.ln1g, p + B.ln1b, k.ln1.data(), k.mean1.data(),
              k.rstd1.data());
    k.qkv.resize(3 * nd);
    linear(k.ln1.data(), n, d, 3 * d, p + B.wqkv, p + B.bqkv, k.qkv.data());
    k.probs.resize(static_cast<size_t>(batch) * H * T * T), k.att.resize(nd);
    attention(k.qkv.data(), k.att.data(), k.probs.data());
    k.mid.resize(nd);
    linear(k.att.data(), n, d, d, p + B.wo, p + B.bo, k.mid.data());
    for (size_t i = 0; i < nd; ++i) k.mid[i] += k.in[i];
    k.ln2.resize(nd), k.mean2.resize(n), k.rstd2.resize(n);
    layerNorm(k.mid.data(), n, d, p + B.ln2g, p + B.ln2b, k.ln2.data(), k.mean2.data(),
              k.rstd2.data());
    k.h.resize(4 * nd), k.hAct.resize(4 * nd);
    linear(k.ln2.data(), n, d, 4 * d, p + B.w1, p + B.b1, k.h.data());
    for (size_t i = 0; i < 4 * nd; ++i) k.hAct[i] = gelu(k.h[i]);
    linear(k.hAct.data(), n, 4 * d, d, p + B.w2, p + B.b2, x_.data());
    for (size_t i = 0; i < nd; ++i) x_[i] += k.mid[i];
  }
  lnf_.resize(x_.size()), meanf_.resize(n), rstdf_.resize(n);
  layerNorm(x_.data(), n, d, p + lnfg_, p + lnfb_, lnf_.data(), meanf_.data(), rstdf_.data());
  probs_.resize(static_cast<size_t>(n) * V);
  linear(lnf_.data(), n, d, V, p + head_, p + bhead_, probs_.data());
  double loss = 0;
  for (int r = 0; r < n; ++r) {
    float* row = probs_.data() + static_cast<size_t>(r) * V;
    const float top = *std::max_element(row, row + V);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += row[v] = std::exp(row[v] - top);
    for (int v = 0; v < V; ++v) row[v] = static_cast<float>(row[v] / sum);
    loss -= std::log(std::max(static_cast<double>(row[targets_[r]]), 1e-30));
  }
  return static_cast<float>(loss / n);
}

void Transformer::backward(const float* p, float* g, const std::function<void(int)>& ready) {
  const int T = c_.context, d = c_.dim, V = c_.vocab;
  const int n = batch_ * T;
  const size_t nd = static_cast<size_t>(n) * d;
  std::vector<float> dLogits = probs_;
  for (int r = 0; r < n; ++r) dLogits[static_cast<size_t>(r) * V + targets_[r]] -= 1.0f;
  for (float& v : dLogits) v /= static_cast<float>(n);
  std::vector<float> dLnf(nd), dX(nd, 0.0f);
  linearBackward(lnf_.data(), dLogits.data(), n, d, V, p + head_, g + head_, g + bhead_,
                 dLnf.data());
  layerNormBackward(x_.data(), dLnf.data(), n, d, p + lnfg_, meanf_.data(), rstdf_.data(),
                    g + lnfg_, g + lnfb_, dX.data());
  ready(c_.layers + 1);
  std::vector<float> dH(4 * nd), dLn(nd), dAtt(nd), dQkv(3 * nd);
  for (int l = c_.layers - 1; l >= 0; --l) {
    const Block& B = blocks_[l];
    BlockCache& k = cache_[l];
    std::vector<float> dMid = dX;  // the residual passes dX straight through
    linearBackward(k.hAct.data(), dX.data(), n, 4 * d, d, p + B.w2, g + B.w2, g + B.b2, dH.data());
    for (size_t i = 0; i < 4 * nd; ++i) dH[i] *= geluGrad(k.h[i]);
    linearBackward(k.ln2.data(), dH.data(), n, d, 4 * d, p + B.w1, g + B.w1, g + B.b1, dLn.data());
    layerNormBackward(k.mid.data(), dLn.data(), n, d, p + B.ln2g, k.mean2.data(), k.rstd2.data(),
                      g + B.ln2g, g + B.ln2b, dMid.data());
    linearBackward(k.att.data(), dMid.data(), n, d, d, p + B.wo, g + B.wo, g + B.bo, dAtt.data());
    attentionBackward(k.qkv.data(), k.probs.data(), dAtt.data(), dQkv.data());
    linearBackward(k.ln1.data(), dQkv.data(), n, d, 3 * d, p + B.wqkv, g + B.wqkv, g + B.bqkv,
                   dLn.data());
    dX = dMid;
    layerNormBackward(k.in.data(), dLn.data(), n, d, p + B.ln1g, k.mean1.data(), k.rstd1.data(),
                      g + B.ln1g, g + B.ln1b, dX.data());
    ready(1 + l);
  }
  std::fill(g + wte_, g + wte_ + static_cast<size_t>(V) * d, 0.0f);
  std::fill(g + wpe_, g + wpe_ + static_cast<size_t>(T) * d, 0.0f);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < d; ++i) {
      const float v = dX[static_cast<size_t>(r) * d + i];
      g[wte_ + static_cast<size_t>(inputs_[r]) * d + i] += v;
      g[wpe_ + static_cast<size_t>(r % T) * d + i] += v;
    }
  ready(0);
}

}  // namespace trainer
