// chorus-train's optimizers and learning-rate schedule against independent references:
//  - AdamW and SGD with momentum, 5 steps on fixed gradients, against PyTorch's
//    torch.optim.AdamW(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1) and
//    torch.optim.SGD(lr=0.01, momentum=0.9, weight_decay=0.01), float32 (the values below
//    were printed by Debian's torch 1.13 and are not computed by this program);
//  - the schedule (linear warm-up, then cosine or linear decay to lr x min ratio, or none)
//    at chosen steps against values worked out by hand;
//  - a step applied in two parts (stepRange + commit, as the trainer does per bucket) is
//    bit-identical to step().
// Exits 1 with a line per mismatch.
#include "examples/dp_trainer/optimizer.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace trainer;

namespace {

const std::vector<float> kStart = {0.5f, -1.25f, 2.0f, 0.0f, 3.0e-3f};
const std::vector<std::vector<float>> kGrads = {{0.1f, -0.2f, 0.3f, 0.0f, 1.0f},
                                                {0.05f, 0.4f, -0.3f, 2.0f, -1.0f},
                                                {-0.5f, 0.0f, 0.25f, -1.0f, 0.5f},
                                                {1.5f, -0.75f, 0.125f, 0.5f, 0.0f},
                                                {0.0f, 0.3f, -0.6f, 0.25f, 2.5f}};
// The parameters after each step, from PyTorch.
const std::vector<std::vector<float>> kTorchAdamW = {
    {0.489500016f, -1.23874998f, 1.98800004f, 0.0f, -0.00700300001f},
    {0.479688704f, -1.24117231f, 1.98653841f, -0.00744136795f, -0.00646968093f},
    {0.483872414f, -1.24276114f, 1.98165751f, -0.00972033013f, -0.00821046717f},
    {0.479123026f, -1.23771191f, 1.97594678f, -0.0128074922f, -0.00963350199f},
    {0.475038588f, -1.23520529f, 1.9761014f, -0.0159892309f, -0.0149250999f}};
const std::vector<std::vector<float>> kTorchSgd = {
    {0.498950005f, -1.24787498f, 1.99679995f, 0.0f, -0.0070003001f},
    {0.49745512f, -1.24983764f, 1.99672031f, -0.0199999996f, -0.0059998706f},
    {0.501059949f, -1.25147915f, 1.99394894f, -0.0279979985f, -0.0100988839f},
    {0.489254206f, -1.24533129f, 1.99000525f, -0.0401933976f, -0.0137869865f},
    {0.478580117f, -1.24267375f, 1.992257f, -0.0536652356f, -0.0421048999f}};

int againstTorch(const char* name, OptimizerConfig config,
                 const std::vector<std::vector<float>>& want) {
  config.lr = 0.01f, config.decay = "none", config.warmupSteps = 0, config.totalSteps = 5;
  Optimizer opt(config, kStart.size());
  std::vector<float> p = kStart;
  int bad = 0;
  for (size_t s = 0; s < kGrads.size(); ++s) {
    opt.step(p, kGrads[s], static_cast<int64_t>(s));
    for (size_t i = 0; i < p.size(); ++i) {
      // Same formula, other operation order: a few float roundings apart at most.
      if (std::fabs(p[i] - want[s][i]) > 1e-6f * std::fmax(1.0f, std::fabs(want[s][i]))) {
        std::printf("FAIL %s step %zu element %zu: %.9g, PyTorch %.9g\n", name, s, i, p[i],
                    want[s][i]);
        ++bad;
      }
    }
  }
  if (!bad) std::printf("ok %s: 5 steps as PyTorch's\n", name);
  return bad;
}

int schedule() {
  // lr 1, warm-up 4 steps, 14 in all (10 of decay), floor 0.1.
  struct Case {
    const char* decay;
    int64_t step;
    double want;
  };
  const double cos02 = 0.1 + 0.9 * 0.5 * (1 + 0.80901699437494742);  // cos(0.2 pi)
  const Case cases[] = {{"cosine", 0, 0.25}, {"cosine", 1, 0.5},   {"cosine", 3, 1.0},
                        {"cosine", 4, 1.0},  {"cosine", 6, cos02}, {"cosine", 9, 0.55},
                        {"cosine", 14, 0.1}, {"cosine", 99, 0.1},  {"linear", 2, 0.75},
                        {"linear", 6, 0.82}, {"linear", 9, 0.55},  {"linear", 14, 0.1},
                        {"none", 1, 0.5},    {"none", 9, 1.0},     {"none", 99, 1.0}};
  int bad = 0;
  for (const Case& c : cases) {
    OptimizerConfig config;
    config.lr = 1.0f, config.warmupSteps = 4, config.totalSteps = 14, config.decay = c.decay;
    config.minLrRatio = 0.1f;
    const float got = Optimizer(config, 1).lrAt(c.step);
    if (std::fabs(got - c.want) > 1e-6) {
      std::printf("FAIL lr %s step %lld: %.9g, want %.9g\n", c.decay,
                  static_cast<long long>(c.step), got, c.want);
      ++bad;
    }
  }
  if (!bad) std::printf("ok schedule: %zu steps of warm-up and decay\n", std::size(cases));
  return bad;
}

int inParts(const char* kind) {
  OptimizerConfig config;
  config.kind = kind, config.weightDecay = 0.05f, config.warmupSteps = 2, config.totalSteps = 5;
  Optimizer whole(config, kStart.size()), parts(config, kStart.size());
  std::vector<float> a = kStart, b = kStart, next(kStart.size());
  for (size_t s = 0; s < kGrads.size(); ++s) {
    whole.step(a, kGrads[s], static_cast<int64_t>(s));
    parts.stepRange(b.data(), next.data(), kGrads[s].data(), 3, 5, static_cast<int64_t>(s));
    parts.stepRange(b.data(), next.data(), kGrads[s].data(), 0, 3, static_cast<int64_t>(s));
    parts.commit();
    b = next;
  }
  if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0) {
    std::printf("FAIL %s: a step in two parts differs from the whole step\n", kind);
    return 1;
  }
  std::printf("ok %s: a step in two parts is bit-identical\n", kind);
  return 0;
}

}  // namespace

int main() {
  OptimizerConfig adamw;
  adamw.kind = "adamw", adamw.beta1 = 0.9f, adamw.beta2 = 0.999f, adamw.eps = 1e-8f;
  adamw.weightDecay = 0.1f;
  OptimizerConfig sgd;
  sgd.kind = "sgd", sgd.momentum = 0.9f, sgd.weightDecay = 0.01f;
  int bad = againstTorch("adamw", adamw, kTorchAdamW) + againstTorch("sgd", sgd, kTorchSgd);
  bad += schedule() + inParts("adamw") + inParts("sgd");
  return bad ? 1 : 0;
}
