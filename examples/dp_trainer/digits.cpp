#include "digits.hpp"

#include <zlib.h>

#include <numeric>
#include <stdexcept>

namespace trainer {

Dataset loadDigits(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw std::runtime_error(path + ": cannot open (install python3-sklearn, or pass --data)");
  Dataset d;
  d.classes = 10;
  char line[4096];
  int lineNo = 0;
  while (gzgets(f, line, sizeof line)) {
    ++lineNo;
    std::vector<int> values;
    for (char* p = line; *p && *p != '\n' && *p != '\r';) {
      char* end = nullptr;
      long v = std::strtol(p, &end, 10);
      if (end == p) {
        gzclose(f);
        throw std::runtime_error(path + ":" + std::to_string(lineNo) + ": not a number");
      }
      values.push_back(static_cast<int>(v));
      p = *end == ',' ? end + 1 : end;
    }
    if (values.empty()) continue;
    if (d.features == 0) d.features = static_cast<int>(values.size()) - 1;
    if (static_cast<int>(values.size()) != d.features + 1 || values.back() < 0 ||
        values.back() >= d.classes) {
      gzclose(f);
      throw std::runtime_error(path + ":" + std::to_string(lineNo) + ": expected " +
                               std::to_string(d.features) + " pixels and a label 0..9");
    }
    for (int i = 0; i < d.features; ++i) d.x.push_back(static_cast<float>(values[i]) / 16.0f);
    d.y.push_back(values.back());
  }
  gzclose(f);
  if (d.size() == 0) throw std::runtime_error(path + ": no samples");
  return d;
}

void splitHeldOut(const Dataset& all, double testFraction, uint64_t seed, Dataset& train,
                  Dataset& test) {
  std::vector<uint32_t> order(all.size());
  std::iota(order.begin(), order.end(), 0u);
  SplitMix64 rng{seed ^ 0x5eedda7aULL};
  for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  const size_t nTest = static_cast<size_t>(static_cast<double>(all.size()) * testFraction);
  for (Dataset* d : {&train, &test}) {
    *d = Dataset{};
    d->features = all.features;
    d->classes = all.classes;
  }
  for (size_t k = 0; k < order.size(); ++k) {
    Dataset& d = k < order.size() - nTest ? train : test;
    const size_t i = order[k];
    d.x.insert(d.x.end(), all.x.begin() + i * all.features, all.x.begin() + (i + 1) * all.features);
    d.y.push_back(all.y[i]);
  }
}

Sampler::Sampler(size_t samples, uint64_t seed) {
  state_.order.resize(samples);
  std::iota(state_.order.begin(), state_.order.end(), 0u);
  rng_.state = seed;
  shuffle();
}

void Sampler::shuffle() {
  auto& o = state_.order;
  for (size_t i = o.size() - 1; i > 0; --i) std::swap(o[i], o[rng_.below(i + 1)]);
  state_.cursor = 0;
  state_.rng = rng_.state;
}

void Sampler::nextBatch(size_t global, std::vector<uint32_t>& out) {
  out.clear();
  while (out.size() < global) {
    if (state_.cursor == state_.order.size()) {
      ++state_.epoch;
      shuffle();
    }
    out.push_back(state_.order[state_.cursor++]);
  }
}

void Sampler::restore(State state) {
  state_ = std::move(state);
  rng_.state = state_.rng;
}

}  // namespace trainer
