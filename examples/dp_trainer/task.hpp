// What the trainer trains: a model with its data. The data-parallel machinery sees only
// this: a flat parameter array cut into groups (a layer's parameters, whose gradients are
// complete together), the samples to draw from, and forward / backward / evaluate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace trainer {

struct ParamGroup {
  size_t begin = 0, end = 0;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual size_t parameterCount() const = 0;
  // In forward order; backward completes them last first.
  virtual std::vector<ParamGroup> groups() const = 0;
  virtual double flopsPerSample() const = 0;  // forward and backward
  virtual void initialize(float* params, uint64_t seed) const = 0;
  virtual size_t trainSamples() const = 0;
  // Mean loss over these training samples; keeps what backward needs.
  virtual float forward(const float* params, std::span<const uint32_t> samples) = 0;
  // Gradients of the last forward's loss; ready(g) once group g's are complete.
  virtual void backward(const float* params, float* grads,
                        const std::function<void(int)>& ready) = 0;
  // The held-out metric: accuracy for the classifier, perplexity for the LM.
  virtual double evaluate(const float* params) = 0;
  virtual const char* metricName() const = 0;
  // Model and shapes, for refusing a checkpoint of another model.
  virtual std::string fingerprint() const = 0;
};

struct Args;
// The task --model names, with its data loaded.
std::unique_ptr<Task> makeTask(const Args& args);

}  // namespace trainer
