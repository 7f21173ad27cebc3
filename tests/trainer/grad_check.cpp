// The hand-written backward passes of chorus-train's models against finite differences:
// for every parameter group, the derivative of the loss along a random direction
// (central difference, float) must match the analytic gradient's dot product with it.
#include "examples/dp_trainer/mlp.hpp"
#include "examples/dp_trainer/rng.hpp"
#include "examples/dp_trainer/transformer.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

using namespace trainer;

namespace {

constexpr int kSlices = 4;

// loss(p) and grad(p, g, ready); groups as [begin, end).
int check(const char* name, std::vector<float> params,
          const std::vector<std::pair<size_t, size_t>>& groups,
          const std::function<float(const std::vector<float>&)>& loss,
          const std::function<void(const std::vector<float>&, std::vector<float>&,
                                   std::vector<int>&)>& grad) {
  std::vector<float> g(params.size(), 0.0f);
  std::vector<int> readyOrder;
  grad(params, g, readyOrder);
  int bad = 0;
  // Backward must announce every group, the last one first.
  if (static_cast<int>(readyOrder.size()) != static_cast<int>(groups.size())) ++bad;
  for (size_t i = 0; i < readyOrder.size(); ++i)
    if (readyOrder[i] != static_cast<int>(groups.size() - 1 - i)) ++bad;
  if (bad) std::printf("%s: backward announced the groups out of order\n", name);
  SplitMix64 rng{7};
  // Each group in a few slices, so that a small tensor's error is not lost in a big one's.
  std::vector<std::pair<size_t, size_t>> slices;
  for (auto [gb, ge] : groups)
    for (int s = 0; s < kSlices; ++s)
      slices.emplace_back(gb + (ge - gb) * s / kSlices, gb + (ge - gb) * (s + 1) / kSlices);
  for (size_t k = 0; k < slices.size(); ++k) {
    auto [b, e] = slices[k];
    if (b == e) continue;
    std::vector<float> u(params.size(), 0.0f);
    double predicted = 0;
    for (size_t i = b; i < e; ++i) {
      u[i] = static_cast<float>(2 * rng.uniform() - 1);
      predicted += static_cast<double>(u[i]) * g[i];
    }
    double rms = 0;  // a step of 0.3 % of the slice's scale: small against its values
    for (size_t i = b; i < e; ++i) rms += static_cast<double>(params[i]) * params[i];
    const float eps = static_cast<float>(std::max(1e-4, 0.003 * std::sqrt(rms / (e - b))));
    std::vector<float> plus = params, minus = params;
    for (size_t i = b; i < e; ++i) plus[i] += eps * u[i], minus[i] -= eps * u[i];
    const double lossPlus = loss(plus), lossMinus = loss(minus);
    const double numeric = (lossPlus - lossMinus) / (2.0 * eps);
    // Within 2 %, or within the rounding of two float losses over the step.
    const double noise = 4 * std::abs(lossPlus) * FLT_EPSILON / (2.0 * eps);
    const double err = std::abs(numeric - predicted) / std::max(1e-3, std::abs(numeric));
    const bool ok = std::abs(numeric - predicted) <= 0.02 * std::abs(numeric) + noise;
    std::printf("%s group %zu slice %zu: analytic %.6g numeric %.6g (%.2g%%) %s\n", name,
                k / kSlices, k % kSlices, predicted, numeric, err * 100, ok ? "ok" : "WRONG");
    bad += !ok;
  }
  return bad;
}

}  // namespace

int main() {
  int bad = 0;
  // Whole layers, and rows in blocks of at most 12 floats (4, 6 and 2 blocks per layer).
  for (size_t maxGroup : {SIZE_MAX, size_t{12}}) {
    Mlp mlp({5, 7, 6, 3}, maxGroup);
    std::vector<float> p(mlp.parameterCount());
    mlp.initialize(p.data(), 3);
    SplitMix64 rng{11};
    std::vector<float> x(4 * 5);
    for (float& v : x) v = static_cast<float>(rng.uniform());
    std::vector<int> y{0, 2, 1, 2};
    // The groups tile the parameters in order (the buckets are cut from them).
    size_t at = 0;
    for (auto [b, e] : mlp.groups()) bad += b != at || e <= b, at = e;
    bad += at != mlp.parameterCount() || mlp.groups().size() != (maxGroup == SIZE_MAX ? 3u : 12u);
    if (bad) std::printf("mlp: the gradient groups do not tile the parameters as planned\n");
    bad += check(
        maxGroup == SIZE_MAX ? "mlp" : "mlp in row blocks", p, mlp.groups(),
        [&](const std::vector<float>& q) {
          return mlp.forward(q.data(), x.data(), y.data(), 4, nullptr);
        },
        [&](const std::vector<float>& q, std::vector<float>& g, std::vector<int>& order) {
          mlp.forward(q.data(), x.data(), y.data(), 4, nullptr);
          mlp.backward(q.data(), g.data(), [&](int l) { order.push_back(l); });
        });
  }
  {
    Transformer lm(Transformer::Config{256, 8, 2, 2, 6});
    std::vector<float> p(lm.parameterCount());
    lm.initialize(p.data(), 5);
    // Embeddings of std 0.1 rather than 0.02: LayerNorm of such tiny rows is so curved
    // that a float finite difference cannot resolve their gradient.
    // Other weights x3, so that attention is far from uniform and its gradients count.
    for (size_t i = 0; i < p.size(); ++i) p[i] *= i < lm.groups()[0].second ? 5 : 3;
    SplitMix64 rng{13};
    std::vector<int> tokens(3 * 7);
    for (int& t : tokens) t = static_cast<int>(rng.below(256));
    bad += check(
        "transformer", p, lm.groups(),
        [&](const std::vector<float>& q) { return lm.forward(q.data(), tokens.data(), 3); },
        [&](const std::vector<float>& q, std::vector<float>& g, std::vector<int>& order) {
          lm.forward(q.data(), tokens.data(), 3);
          lm.backward(q.data(), g.data(), [&](int l) { order.push_back(l); });
        });
  }
  std::printf(bad ? "FAIL: %d checks wrong\n" : "PASS\n", bad);
  return bad ? 1 : 0;
}
