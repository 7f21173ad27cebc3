#include "grad_sync.hpp"

#include <cstdio>

namespace trainer {

std::vector<Bucket> makeBuckets(const std::vector<ParamGroup>& layers, size_t bucketBytes,
                                size_t tail) {
  std::vector<Bucket> buckets;
  Bucket open;
  bool empty = true;
  for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i) {
    const ParamGroup& l = layers[i];
    if (empty) {
      open = Bucket{l.begin, l.end + (buckets.empty() ? tail : 0), i, i};
      empty = false;
    } else {
      open.begin = l.begin;
      open.lowLayer = i;
    }
    if ((open.end - open.begin) * sizeof(float) >= bucketBytes || i == 0) {
      buckets.push_back(open);
      empty = true;
    }
  }
  return buckets;
}

GradSync::GradSync(CommThread& comm, std::vector<Bucket> buckets, Timeline& timeline)
    : comm_(comm), buckets_(std::move(buckets)), timeline_(timeline) {
  int layers = 0;
  for (const Bucket& b : buckets_) layers = std::max(layers, b.highLayer + 1);
  bucketOfLayer_.assign(layers, -1);
  for (size_t k = 0; k < buckets_.size(); ++k)
    for (int l = buckets_[k].lowLayer; l <= buckets_[k].highLayer; ++l)
      bucketOfLayer_[l] = static_cast<int>(k);
  durations_.resize(buckets_.size());
}

void GradSync::begin(float* grads) {
  grads_ = grads;
  pending_.clear();
  for (const Bucket& b : buckets_) pending_.push_back(b.highLayer - b.lowLayer + 1);
  inFlight_.clear();
}

void GradSync::layerReady(int layer) {
  const int k = bucketOfLayer_.at(layer);
  if (--pending_[k] > 0) return;
  const Bucket b = buckets_[k];
  float* data = grads_ + b.begin;
  inFlight_.emplace_back(k, comm_.post([this, k, b, data](chorus::Communicator& c) {
    const auto start = Clock::now();
    chorus::Work w =
        c.allReduce(data, data, b.end - b.begin, chorus::DataType::Float32, chorus::RedOp::Avg);
    char what[96];
    std::snprintf(what, sizeof what, "all-reduce bucket %d (%.2f MB)", k,
                  (b.end - b.begin) * 4 / 1e6);
    comm_.await(w, what);
    const auto end = Clock::now();
    durations_[k] = seconds(end - start);
    timeline_.add(Timeline::kComm, what, start, end);
  }));
}

void GradSync::abandon() {
  for (auto& [k, f] : inFlight_) try {
      f.get();
    } catch (const std::exception&) {
    }
  inFlight_.clear();
}

double GradSync::finish(const std::function<void(const Bucket&)>& averaged) {
  double waited = 0;
  for (auto& [k, f] : inFlight_) {
    const auto start = Clock::now();
    f.get();  // rethrows the bucket's chorus::Error
    const auto end = Clock::now();
    waited += seconds(end - start);
    if (end - start > std::chrono::microseconds(20))
      timeline_.add(Timeline::kMain, "wait for all-reduce", start, end);
    if (averaged) averaged(buckets_[k]);
  }
  inFlight_.clear();
  allReduceSeconds_ = 0;
  for (double d : durations_) allReduceSeconds_ += d;
  return waited;
}

}  // namespace trainer
