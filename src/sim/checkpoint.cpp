#include "sim/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace chorus::sim {

namespace {

class Run {
 public:
  Run(const JobModel& job, unsigned seed)
      : job_(job),
        rng_(seed),
        H_(job.wallHours),
        tau_(job.intervalMinutes / 60),
        Cb_(job.saveBlockingSeconds / 3600),
        Ca_(job.saveAsyncSeconds / 3600),
        R_(job.restartMinutes / 60),
        replicas_(std::max(1, job.gpus / std::max(1, job.gpusPerReplica))),
        alive_(replicas_) {}

  JobResult go() {
    nextFailure_ = draw(0);
    due_ = tau_;
    while (t_ < H_) {
      if (failed()) continue;
      // Train until the next checkpoint is due (shrinking and rejoining keep the cadence).
      const double end = std::min(std::max(due_, t_), H_);
      if (train(end)) continue;
      if (t_ >= H_) break;
      // An asynchronous save still writing holds the next one back.
      if (inFlight_ && durableAt_ > t_) {
        if (idle(std::min(durableAt_, H_), result_.checkpointHours)) continue;
      }
      settle();
      if (idle(std::min(t_ + Cb_, H_), result_.checkpointHours)) continue;
      captured_ = pending_;
      pending_ = 0;
      inFlight_ = true;
      durableAt_ = t_ + Ca_;
      due_ = t_ + tau_;
      settle();
    }
    result_.effective = trained_ / H_;
    return result_;
  }

 private:
  double rate() const {  // failures per hour now
    const double M = job_.mtbfHours();
    return job_.shrink ? (1 / M) * alive_ / replicas_ : 1 / M;
  }
  double draw(double from) {
    std::exponential_distribution<double> gap(rate());
    return from + gap(rng_);
  }
  void settle() {  // a background save finished writing
    if (inFlight_ && durableAt_ <= t_) {
      inFlight_ = false;
      captured_ = 0;
    }
  }
  // The earliest of `end`, the next failure and the next repair.
  double nextStop(double end) const { return std::min({end, nextFailure_, nextRepair()}); }
  // Moves the clock to `stop` (from nextStop) and handles what happens there; true when a
  // failure or a rejoin interrupted the span that was to last until `end`.
  bool advanceTo(double stop, double end) {
    t_ = stop;
    settle();
    if (stop == nextFailure_ && stop < end) return failed();
    if (stop == nextRepair() && stop < end) {
      rejoin();
      return true;
    }
    return false;
  }
  // Trains (at the survivors' share) until `end`; true when a failure or rejoin interrupted it.
  bool train(double end) {
    const double stop = nextStop(end);
    const double share = static_cast<double>(alive_) / replicas_;
    trained_ += (stop - t_) * share;
    pending_ += (stop - t_) * share;
    return advanceTo(stop, end);
  }
  // Stalls until `end` (counted in `bucket`); true when a failure or rejoin interrupted.
  bool idle(double end, double& bucket) {
    const double stop = nextStop(end);
    bucket += stop - t_;
    return advanceTo(stop, end);
  }
  double nextRepair() const { return repairs_.empty() ? INFINITY : repairs_.front(); }
  void rejoin() {
    repairs_.erase(repairs_.begin());
    ++alive_;
    const double pause = std::min(H_, t_ + job_.shrinkPauseSeconds / 3600);
    result_.downHours += pause - t_;
    t_ = pause;
    nextFailure_ = draw(t_);
  }
  // Handles a failure due at or before now; true when there was one.
  bool failed() {
    if (nextFailure_ > t_ || t_ >= H_) return false;
    ++result_.failures;
    std::uniform_real_distribution<double> coin(0, 1);
    if (job_.shrink && alive_ > 1 && coin(rng_) < job_.shrinkable) {
      --alive_;
      repairs_.push_back(nextFailure_ + job_.repairHours);
      std::sort(repairs_.begin(), repairs_.end());
      const double pause = std::min(H_, nextFailure_ + job_.shrinkPauseSeconds / 3600);
      result_.downHours += pause - t_;
      t_ = pause;
    } else {
      ++result_.restarts;
      const double lost = pending_ + (inFlight_ ? captured_ : 0);
      trained_ -= lost;
      result_.lostHours += lost;
      pending_ = captured_ = 0;
      inFlight_ = false;
      const double back = std::min(H_, nextFailure_ + R_);
      result_.downHours += back - t_;
      t_ = back;
      due_ = t_ + tau_;
    }
    nextFailure_ = draw(nextFailure_);
    return true;
  }

  const JobModel& job_;
  std::mt19937_64 rng_;
  const double H_, tau_, Cb_, Ca_, R_;
  const int replicas_;
  int alive_;
  double t_ = 0, trained_ = 0, pending_ = 0, captured_ = 0, durableAt_ = 0, due_ = 0;
  bool inFlight_ = false;
  double nextFailure_ = 0;
  std::vector<double> repairs_;
  JobResult result_;
};

}  // namespace

JobResult simulateJob(const JobModel& job) {
  JobResult sum;
  const int runs = std::max(1, job.runs);
  for (int i = 0; i < runs; ++i) {
    const JobResult r = Run(job, job.seed * 7919u + i).go();
    sum.effective += r.effective / runs;
    sum.lostHours += r.lostHours / runs;
    sum.checkpointHours += r.checkpointHours / runs;
    sum.downHours += r.downHours / runs;
    sum.failures += r.failures / runs;
    sum.restarts += r.restarts / runs;
  }
  return sum;
}

double firstOrderEffective(const JobModel& job) {
  const double tau = job.intervalMinutes / 60, C = job.saveBlockingSeconds / 3600;
  const double M = job.mtbfHours(), R = job.restartMinutes / 60;
  const double lost = (tau / 2 + job.saveAsyncSeconds / 3600 + R) / M;
  return std::max(0.0, 1 - C / (tau + C) - lost);
}

double youngDalyMinutes(const JobModel& job) {
  return std::sqrt(2 * job.saveBlockingSeconds / 3600 * job.mtbfHours()) * 60;
}

double bestIntervalMinutes(JobModel job, double* effective) {
  double best = 0, bestEffective = -1;
  for (double minutes = 1; minutes <= 24 * 60; minutes *= 1.1) {
    job.intervalMinutes = minutes;
    const double e = simulateJob(job).effective;
    if (e > bestEffective) {
      bestEffective = e;
      best = minutes;
    }
  }
  if (effective) *effective = bestEffective;
  return best;
}

}  // namespace chorus::sim
