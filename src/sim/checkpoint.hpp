// A long training job that fails and checkpoints: how much of the wall time trains.
//
// Failures arrive as a Poisson process (each GPU alike: job MTBF = GPU MTBF / GPUs).
// The job trains `interval` between checkpoints; a checkpoint stalls training for
// `saveBlocking` (an asynchronous save then writes for `saveAsync` in the background and
// only counts once written). A failure either restarts the whole job from the newest
// written checkpoint after `restart` (the work since is lost), or, with `shrink`, drops
// the failed GPU's replica (gpusPerReplica GPUs) and goes on with the survivors after a
// `shrinkPause`, losing no work; the replica rejoins after `repair` (another pause).
// Failures that shrinking cannot absorb (1 - shrinkable of them: network, software,
// storage) still restart. Monte Carlo with a fixed seed, `runs` runs averaged.
#pragma once

#include <string>

namespace chorus::sim {

struct JobModel {
  int gpus = 16384;
  double gpuMtbfHours = 0;  // per GPU; used when jobMtbfHours is 0
  double jobMtbfHours = 0;  // the whole job's mean time between failures
  double wallHours = 54 * 24;
  double intervalMinutes = 30;
  double saveBlockingSeconds = 60;
  double saveAsyncSeconds = 0;
  double restartMinutes = 10;
  bool shrink = false;
  int gpusPerReplica = 128;  // shrink: GPUs one failure takes out (one model replica)
  double shrinkable = 0.78;  // shrink: share of failures it absorbs (Llama 3: ~78% hardware)
  double shrinkPauseSeconds = 30;
  double repairHours = 2;  // shrink: the replica rejoins after this
  unsigned seed = 1;
  int runs = 16;

  double mtbfHours() const { return jobMtbfHours > 0 ? jobMtbfHours : gpuMtbfHours / gpus; }
};

struct JobResult {
  double effective = 0;        // share of wall time spent on training that was kept
  double lostHours = 0;        // training redone after restarts (wall hours)
  double checkpointHours = 0;  // stalled in checkpoints
  double downHours = 0;        // restarting or pausing to shrink/grow
  double failures = 0;         // per run
  double restarts = 0;         // per run
};

JobResult simulateJob(const JobModel& job);

// First-order effective share (Young/Daly): 1 - C/tau - (tau/2 + R)/M, restart mode.
double firstOrderEffective(const JobModel& job);
// sqrt(2 x blocking save cost x job MTBF), in minutes.
double youngDalyMinutes(const JobModel& job);
// The interval (minutes, on a fine log grid from 1 minute to 1 day) with the best
// simulated effective share; same seed for every interval (common random numbers).
double bestIntervalMinutes(JobModel job, double* effective = nullptr);

}  // namespace chorus::sim
