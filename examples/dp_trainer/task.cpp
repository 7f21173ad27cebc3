// The two tasks: the MLP on the digits, the transformer LM on text from base-files.
#include "task.hpp"

#include "args.hpp"
#include "digits.hpp"
#include "mlp.hpp"
#include "transformer.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace trainer {
namespace {

class MlpTask : public Task {
 public:
  // Gradient groups of at most half a bucket, so that a layer bigger than a bucket is
  // reduced in parts while the rest of its weight gradient is computed.
  explicit MlpTask(const Args& a)
      : model_(sizes(a, load(a)),
               a.wholeLayers ? SIZE_MAX : static_cast<size_t>(a.bucketMb * 1e6 / 4 / 2)) {}
  size_t parameterCount() const override { return model_.parameterCount(); }
  std::vector<ParamGroup> groups() const override {
    std::vector<ParamGroup> g;
    for (auto [b, e] : model_.groups()) g.push_back({b, e});
    return g;
  }
  double flopsPerSample() const override { return model_.flopsPerSample(); }
  void initialize(float* p, uint64_t seed) const override { model_.initialize(p, seed); }
  size_t trainSamples() const override { return train_.size(); }
  float forward(const float* params, std::span<const uint32_t> samples) override {
    const size_t f = static_cast<size_t>(train_.features);
    x_.resize(samples.size() * f), y_.resize(samples.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      std::copy_n(train_.x.begin() + samples[i] * f, f, x_.begin() + i * f);
      y_[i] = train_.y[samples[i]];
    }
    return model_.forward(params, x_.data(), y_.data(), static_cast<int>(samples.size()), nullptr);
  }
  void backward(const float* params, float* grads, const std::function<void(int)>& ready) override {
    model_.backward(params, grads, ready);
  }
  double evaluate(const float* params) override {
    int right = 0;
    constexpr size_t kChunk = 256;
    for (size_t i = 0; i < test_.size(); i += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, test_.size() - i));
      int correct = 0;
      model_.forward(params, test_.x.data() + i * test_.features, test_.y.data() + i, n, &correct);
      right += correct;
    }
    return static_cast<double>(right) / static_cast<double>(test_.size());
  }
  const char* metricName() const override { return "accuracy"; }
  std::string fingerprint() const override {
    std::string f = "mlp";
    for (const Mlp::Layer& l : model_.layers()) f.append(":").append(std::to_string(l.in));
    return f.append(":").append(std::to_string(model_.layers().back().out));
  }

 private:
  const Dataset& load(const Args& a) {
    Dataset all = loadDigits(a.data.empty() ? kDigitsPath : a.data);
    splitHeldOut(all, a.testFraction, a.seed, train_, test_);
    return train_;
  }
  static std::vector<int> sizes(const Args& a, const Dataset& d) {
    std::vector<int> s{d.features};
    for (int i = 0; i < a.layers; ++i) s.push_back(a.hidden);
    s.push_back(d.classes);
    return s;
  }
  Dataset train_, test_;
  Mlp model_;
  std::vector<float> x_;
  std::vector<int> y_;
};

// Every license text base-files installs (Essential: on every Debian system), in name
// order, as bytes.
std::string loadText(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    text += s.str();
  }
  if (text.size() < 4096) throw std::runtime_error(dir + ": too little text");
  return text;
}

class LmTask : public Task {
 public:
  explicit LmTask(const Args& a)
      : model_(Transformer::Config{256, a.dim, a.heads, a.layers, a.context}) {
    const std::string text = loadText(a.data.empty() ? "/usr/share/common-licenses" : a.data);
    const size_t cut = static_cast<size_t>(static_cast<double>(text.size()) * (1 - a.testFraction));
    train_.assign(text.begin(), text.begin() + static_cast<long>(cut));
    test_.assign(text.begin() + static_cast<long>(cut), text.end());
  }
  size_t parameterCount() const override { return model_.parameterCount(); }
  std::vector<ParamGroup> groups() const override {
    std::vector<ParamGroup> g;
    for (auto [b, e] : model_.groups()) g.push_back({b, e});
    return g;
  }
  double flopsPerSample() const override { return model_.flopsPerSequence(); }
  void initialize(float* p, uint64_t seed) const override { model_.initialize(p, seed); }
  // Non-overlapping windows of context + 1 bytes.
  size_t trainSamples() const override { return (train_.size() - 1) / window(); }
  float forward(const float* params, std::span<const uint32_t> samples) override {
    gather(train_, samples);
    return model_.forward(params, tokens_.data(), static_cast<int>(samples.size()));
  }
  void backward(const float* params, float* grads, const std::function<void(int)>& ready) override {
    model_.backward(params, grads, ready);
  }
  double evaluate(const float* params) override {  // perplexity over the held-out windows
    const size_t windows = (test_.size() - 1) / window();
    double loss = 0;
    std::vector<uint32_t> chunk;
    for (size_t w = 0; w < windows; w += 16) {
      chunk.clear();
      for (size_t k = w; k < std::min(windows, w + 16); ++k)
        chunk.push_back(static_cast<uint32_t>(k));
      gather(test_, chunk);
      loss += model_.forward(params, tokens_.data(), static_cast<int>(chunk.size())) * chunk.size();
    }
    return std::exp(loss / static_cast<double>(windows));
  }
  const char* metricName() const override { return "perplexity"; }
  std::string fingerprint() const override {
    const auto& c = model_.config();
    return "transformer:d" + std::to_string(c.dim) + ":h" + std::to_string(c.heads) + ":l" +
           std::to_string(c.layers) + ":t" + std::to_string(c.context);
  }

 private:
  size_t window() const { return static_cast<size_t>(model_.config().context); }
  void gather(const std::vector<unsigned char>& text, std::span<const uint32_t> samples) {
    const size_t w = window();
    tokens_.resize(samples.size() * (w + 1));
    for (size_t i = 0; i < samples.size(); ++i)
      for (size_t t = 0; t <= w; ++t) tokens_[i * (w + 1) + t] = text[samples[i] * w + t];
  }
  Transformer model_;
  std::vector<unsigned char> train_, test_;
  std::vector<int> tokens_;
};

}  // namespace

std::unique_ptr<Task> makeTask(const Args& args) {
  if (args.model == "mlp") return std::make_unique<MlpTask>(args);
  if (args.model == "transformer") return std::make_unique<LmTask>(args);
  throw std::invalid_argument("--model must be mlp or transformer");
}

}  // namespace trainer
