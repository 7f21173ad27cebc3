// Gradient buckets, as PyTorch DDP forms them: consecutive layers from the last one back,
// each bucket at least --bucket-mb; a bucket's all-reduce (RedOp::Avg, in place) starts as
// soon as backward has produced all of its layers and runs while backward goes on.
#pragma once

#include "comm_thread.hpp"
#include "task.hpp"
#include "timeline.hpp"

#include <functional>
#include <future>
#include <string>
#include <utility>
#include <vector>

namespace trainer {

struct Bucket {
  size_t begin = 0, end = 0;  // range of the flat gradient array
  int lowLayer = 0, highLayer = 0;
};

// Buckets over the parameter groups (last first; consecutive groups are contiguous); the
// first bucket also takes `tail` extra floats after the last group (the trainer puts its
// loss there to average it for free).
std::vector<Bucket> makeBuckets(const std::vector<ParamGroup>& groups, size_t bucketBytes,
                                size_t tail);

class GradSync {
 public:
  GradSync(CommThread& comm, std::vector<Bucket> buckets, Timeline& timeline);
  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Before the first step: every bucket's all-reduce once, one after another, on `grads`
  // (the flat array backward overwrites), the same calls as a step makes. The library's
  // first call of a shape sets up what its algorithm needs (peer_staged: its peer-mappable
  // scratch, allocated and then mapped by the peers); done here, that cost is not paid in
  // the first step, while backward runs (perf/trainer/README.md, fourteenth pass). Returns
  // the seconds it took.
  double warmUp(float* grads);
  // Starts a step: `grads` is the flat array backward writes into.
  void begin(float* grads);
  // Called by backward when layer `layer`'s gradients are complete.
  void layerReady(int layer);
  // Waits for every bucket of the step, in the order they were started, and rethrows a
  // failed one's error; `averaged` (if given) runs on each bucket as soon as it is done,
  // before the wait for the next (the optimizer steps the first buckets while the last
  // are still being reduced). Returns the seconds spent waiting: communication not hidden
  // behind backward or the work `averaged` does.
  double finish(const std::function<void(const Bucket&)>& averaged = {});
  // After finish() threw: waits out the step's other buckets, ignoring their errors.
  void abandon();
  // Buckets of this step whose all-reduce has been started.
  size_t started() const { return inFlight_.size(); }
  // Seconds some all-reduce of the last step was running (the union of the buckets'
  // spans from start to completion; their sum when they run one after another).
  double lastAllReduceSeconds() const;
  // PyTorch DDP's measure of the same step (its logger's backward_comm_time): from the
  // first bucket being ready to the end of the wait for the last one, gaps between the
  // buckets and a bucket's time queued behind the one before included.
  double lastEnvelopeSeconds() const { return envelopeSeconds_; }
  // Seconds the last step's buckets waited between being ready and their all-reduce
  // starting on the communication thread (its wake-up, or the bucket before it running).
  double lastStartDelaySeconds() const { return startDelaySeconds_; }
  // Seconds of lastAllReduceSeconds() that fell inside [from, to) (this rank's backward:
  // the all-reduce time hidden behind it, in the words).
  double lastAllReduceSecondsWithin(Clock::time_point from, Clock::time_point to) const;
  // The last step's waits after backward (finish()): the bucket waited for, start and end.
  struct Wait {
    int bucket = 0;
    Clock::time_point start, end;
  };
  const std::vector<Wait>& lastWaits() const { return waits_; }
  // When backward completed each bucket's gradients in the last step (by bucket).
  const std::vector<Clock::time_point>& lastReady() const { return ready_; }
  // The algorithm each bucket's all-reduce ran last (Work::algorithm), comma-separated.
  std::string algorithms() const;

 private:
  CommThread& comm_;
  std::vector<Bucket> buckets_;
  Timeline& timeline_;
  std::vector<int> bucketOfLayer_;
  std::vector<int> pending_;
  std::vector<std::pair<int, std::future<void>>> inFlight_;  // bucket, its all-reduce
  float* grads_ = nullptr;
  double envelopeSeconds_ = 0, startDelaySeconds_ = 0;
  Clock::time_point firstReady_{};
  std::vector<Clock::time_point> ready_;  // per bucket, when backward completed it
  std::vector<std::pair<Clock::time_point, Clock::time_point>> spans_;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> union_;  // spans_ merged
  std::vector<Wait> waits_;
  std::vector<std::string> algorithms_;
};

}  // namespace trainer
