#include "grad_sync.hpp"

#include <algorithm>
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
  spans_.resize(buckets_.size());
  ready_.resize(buckets_.size());
  algorithms_.resize(buckets_.size());
}

namespace {
chorus::Work reduceBucket(chorus::Communicator& c, float* grads, const Bucket& b) {
  return c.allReduce(grads + b.begin, grads + b.begin, b.end - b.begin, chorus::DataType::Float32,
                     chorus::RedOp::Avg);
}
}  // namespace

double GradSync::warmUp(float* grads) {
  const auto start = Clock::now();
  comm_.run([&](chorus::Communicator& c) {
    for (size_t k = 0; k < buckets_.size(); ++k) {
      chorus::Work w = reduceBucket(c, grads, buckets_[k]);
      comm_.await(w, "warm-up all-reduce of bucket " + std::to_string(k));
    }
  });
  const auto end = Clock::now();
  timeline_.add(Timeline::kMain, "warm-up all-reduces", start, end);
  return seconds(end - start);
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
  ready_[k] = Clock::now();
  if (inFlight_.empty()) firstReady_ = ready_[k];
  // The bucket's readiness, always (the trace's analysis splits the waits by it).
  timeline_.add(Timeline::kComm, "ready: bucket " + std::to_string(k), ready_[k], ready_[k]);
  float* grads = grads_;
  char what[64];
  std::snprintf(what, sizeof what, "all-reduce bucket %d (%.2f MB", k, (b.end - b.begin) * 4 / 1e6);
  inFlight_.emplace_back(
      k, comm_.start([grads, b](chorus::Communicator& c) { return reduceBucket(c, grads, b); },
                     [this, k, name = std::string(what)](chorus::Work& w, Clock::time_point start,
                                                         Clock::time_point end) {
                       spans_[k] = {start, end};
                       algorithms_[k] = w.algorithm();  // what the engine ran, not what we asked
                       if (start - ready_[k] > std::chrono::microseconds(20))
                         timeline_.add(Timeline::kComm, "queued: " + name + ")", ready_[k], start);
                       timeline_.add(Timeline::kComm, name + ", " + algorithms_[k] + ")", start,
                                     end);
                     },
                     std::string(what) + ")"));
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
  waits_.clear();
  for (auto& [k, f] : inFlight_) {
    const auto start = Clock::now();
    f.get();  // rethrows the bucket's chorus::Error
    const auto end = Clock::now();
    waited += seconds(end - start);
    waits_.push_back({k, start, end});
    if (end - start > std::chrono::microseconds(20))
      timeline_.add(Timeline::kMain, "wait for all-reduce bucket " + std::to_string(k), start, end);
    if (averaged) averaged(buckets_[k]);
  }
  inFlight_.clear();
  envelopeSeconds_ = seconds(Clock::now() - firstReady_);
  startDelaySeconds_ = 0;
  for (size_t k = 0; k < spans_.size(); ++k)
    startDelaySeconds_ += std::max(0.0, seconds(spans_[k].first - ready_[k]));
  // The union of the buckets' spans: with several in flight at once, time counted once.
  std::vector<std::pair<Clock::time_point, Clock::time_point>> spans = spans_;
  std::sort(spans.begin(), spans.end());
  union_.clear();
  Clock::time_point covered{};
  for (const auto& [start, end] : spans) {
    const Clock::time_point from = std::max(start, covered);
    if (end > from) union_.emplace_back(from, end);
    covered = std::max(covered, end);
  }
  return waited;
}

double GradSync::lastAllReduceSeconds() const {
  double total = 0;
  for (const auto& [start, end] : union_) total += seconds(end - start);
  return total;
}

double GradSync::lastAllReduceSecondsWithin(Clock::time_point from, Clock::time_point to) const {
  double inside = 0;
  for (const auto& [start, end] : union_) {
    const Clock::time_point a = std::max(start, from), b = std::min(end, to);
    if (b > a) inside += seconds(b - a);
  }
  return inside;
}

std::string GradSync::algorithms() const {
  std::string names;
  for (const std::string& a : algorithms_) names += (names.empty() ? "" : ",") + a;
  return names;
}

}  // namespace trainer
