// What a run reports: throughput, the split of a step, MFU, goodput and lost work, as JSON
// and as a short table; plus the job log that carries lost work across restarts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace trainer {

struct LostWork {
  int attempt = 0;           // the restart that recovered
  int64_t furthestStep = 0;  // steps the failed attempt had completed
  int64_t resumedFrom = 0;   // the checkpoint's step
  double lostSeconds = 0;    // from that checkpoint's completion to the resumed start
};

// <out>/job.txt (rank 0): when the job began and each restart's lost work;
// <out>/progress.txt: the last completed step, rewritten every step.
class JobLog {
 public:
  explicit JobLog(std::string out) : out_(std::move(out)) {}
  // A fresh job: truncates the log.
  void startFresh(double now);
  // A restart resumed from `step` (completed at `ckptTime`; 0: from scratch, lost
  // since the job started): records the lost work.
  void resumed(int attempt, int64_t step, double ckptTime, double now);
  void progress(int64_t step, double now);
  double jobStart() const { return jobStart_; }
  const std::vector<LostWork>& lost() const { return lost_; }

 private:
  void load();
  std::string out_;
  double jobStart_ = 0;
  std::vector<LostWork> lost_;
  FILE* progress_ = nullptr;
};

struct Shrink {
  int64_t step = 0;           // the step in which the survivors saw the failure
  std::vector<int> dead;      // in the numbering before the shrink
  double detectSeconds = -1;  // from the kill to the error (-1: unknown)
  double shrinkSeconds = 0;   // shrink() and the state broadcast
  int ranksAfter = 0;
};

struct Grow {
  int64_t step = 0;  // the step the grown communicator starts with
  int ranksAfter = 0;
  double seconds = 0;  // grow() (or join) and the state broadcast
};

struct RunReport {
  int nranks = 0, attempt = 0;
  int64_t steps = 0, startStep = 0, stepsRun = 0;
  int64_t globalBatch = 0;
  double parameters = 0, flopsPerSample = 0;
  double seconds = 0;  // this attempt's training loop
  double samplesPerSecond = 0;
  // per step, averaged over steps and ranks
  double stepSeconds = 0, computeSeconds = 0, exposedCommSeconds = 0, allReduceSeconds = 0,
         checkpointPauseSeconds = 0;
  // exposedCommSeconds split (-1: ranks on several hosts, no shared clock), each wait for a
  // bucket by R (the last rank completed that bucket's gradients) and B (the last rank's
  // backward of the step ended), R <= B: waitSlowest is the part before R (waiting for a
  // slower rank's backward); exposedTransfer the rest (all-reduce not hidden), of which
  // exposedAfterLast is the part after B (all-reduce after the last backward).
  double waitSlowestSeconds = 0, exposedTransferSeconds = 0, exposedAfterLastSeconds = 0;
  // The figure, the fraction of all-reduce time hidden behind backward: of the time
  // some all-reduce of the step was running on a rank (the union of its buckets' spans,
  // allReduceSeconds), the part inside that rank's own backward pass. Time after a rank's
  // backward counts as not hidden, also while it waits for a slower rank.
  double hiddenFraction = 0;
  // The figure reported before (until 2026-12-03): 1 - exposed / all-reduce time, the
  // exposed time being the training thread's waits (which also hold its wake-up after the
  // last bucket, not all-reduce time).
  double hiddenFractionByExposed = 0;
  // PyTorch DDP's definition (its logger's backward_comm_time and
  // backward_compute_comm_overlap_time): all-reduce time is the envelope from the first
  // bucket ready to the end of the wait for the last, gaps and queueing included; hidden is
  // 1 - exposed / envelope. Per step, averaged over steps and ranks.
  double envelopeSeconds = 0, hiddenFractionDdp = 0;
  double startDelaySeconds = 0;  // per step: buckets ready but not yet started, summed
  int checkpoints = 0;
  double pausePerCheckpoint = 0, writePerCheckpoint = 0;
  std::string checkpointPolicy;
  int64_t checkpointEvery = 0;  // the interval in steps at the end (0: no checkpoints)
  // The inputs and result of the Young-Daly interval, when this launch computed one: the
  // save measured after step `afterStep`, maxima over the ranks.
  struct YoungDaly {
    bool computed = false;
    int64_t afterStep = 0;
    double mtbfSeconds = 0, pauseSeconds = 0, writeSeconds = 0, stepSeconds = 0;
    double intervalSeconds = 0;  // max(sqrt(2 x pause x MTBF), write)
    bool mtbfFromFailures = false;
  } youngDaly;
  std::string gemmBackend;  // openblas, cublas
  double peakFlops = 0, achievedFlops = 0, mfu = 0;
  double elapsedSeconds = 0, usefulSeconds = 0, effectiveTrainingTime = 0;
  std::vector<LostWork> lost;
  std::vector<Shrink> shrinks;
  std::vector<Grow> grows;
  double finalLoss = 0, heldOut = 0;
  std::string heldOutMetric = "accuracy";
  std::string algorithm;
  std::vector<size_t> bucketFloats;  // each gradient bucket's floats, in all-reduce order
  bool gemmYield = false;            // the training thread yields after each GEMM (--gemm-yield)
  double commWarmupSeconds = -1;     // the buckets' warm-up all-reduces, before the loop (-1: none)
  int commNice = 0;         // the communication thread's nice relative to the training thread's
  std::string librarySpin;  // CHORUS_SPIN_US as the communicator was created ("default": unset)

  std::string json() const;
  void printTable(FILE* out) const;
};

}  // namespace trainer
