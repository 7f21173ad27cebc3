// Checkpoints of the full training state: parameters and optimizer state (one flat array,
// each rank writing its 1/N slice, ZeRO-1 style), plus step and sampler (RNG state, epoch,
// data position) in rank 0's manifest.
//
//   <dir>/step-00000042/shard-R-of-N.bin   header (step, slice, CRC-32) + floats
//   <dir>/step-00000042/manifest.txt       written by rank 0 once every shard is on disk;
//                                          lists each shard's CRC; ends with its own CRC
//
// Every file is written to a temporary name, fsync'ed, renamed and its directory fsync'ed,
// so a crash leaves either the old file or the whole new one. A checkpoint counts only
// when its manifest and every shard verify; loading takes the newest such and says why
// any newer one was rejected. The last `keep` good ones are kept.
//
// Saving is asynchronous: a background thread copies this rank's slice into memory (the
// snapshot), then writes it. The copy runs during the whole next step, which only reads
// those buffers (its optimizer writes the spare ones); the end of that step waits for it
// (awaitSnapshot): that wait, and a save that must wait for this rank's previous write,
// are the only pause. Or blocking, to compare.
#pragma once

#include "digits.hpp"
#include "timeline.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <semaphore>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace trainer {

struct CheckpointMeta {
  int64_t step = 0;  // steps completed
  int nranks = 0;
  uint64_t floats = 0;  // length of the flat state (parameters then optimizer state)
  std::string model;    // fingerprint of model and optimizer; a mismatch is refused
  Sampler::State sampler;
  double wallTime = 0;  // Unix seconds when the step completed (for the lost-work count)
};

struct LoadedCheckpoint {
  CheckpointMeta meta;
  std::vector<float> state;
  std::string path;
};

class Checkpointer {
 public:
  // `stateFloats`: the flat state's length (parameters then optimizer state). This rank's
  // slice of it is allocated and touched here, so that no save pays the page faults of
  // fresh snapshot memory (the first one did: 30-80 ms at 4 ranks, against 0.4 ms after).
  Checkpointer(std::string dir, int rank, int nranks, int keep, bool async, Timeline& timeline,
               uint64_t stateFloats);
  ~Checkpointer();  // waits for a write in progress

  // Snapshots this rank's slice of the flat state (`params` then `optimizer`) and writes
  // it: in the background when async, when the spans must stay unchanged until
  // awaitSnapshot() returns. Returns the seconds the caller was held up.
  double save(const CheckpointMeta& meta, std::span<const float> params,
              std::span<const float> optimizer);
  // Before changing the parameters or optimizer state: waits for a snapshot in progress.
  // Returns the seconds waited (part of the pause).
  double awaitSnapshot();
  // Seconds the last snapshot copy took (the most the pause can be, async).
  double lastSnapshotSeconds() const { return lastSnapshot_; }
  // Waits for the write in progress (rank 0: and the manifests it owes); rethrows a failure.
  void drain();
  // Stops waiting for other ranks' shards (they failed); the write in progress gives up.
  void cancel() { cancelled_ = true; }
  // Seconds the last completed write took (file, fsync, rename; rank 0 also the manifest).
  double lastWriteSeconds() const { return lastWrite_; }
  int64_t lastWrittenStep() const { return lastStep_; }

  // The newest checkpoint under `dir` that verifies and matches `model`; reasons for the
  // rejected ones go to `log`.
  static std::optional<LoadedCheckpoint> loadNewest(const std::string& dir,
                                                    const std::string& model, FILE* log);

 private:
  struct Job {
    CheckpointMeta meta;
    uint64_t offset = 0;
    std::vector<float> slice;
  };
  struct Source {
    std::span<const float> params, optimizer;
    uint64_t lo = 0, hi = 0;  // this rank's slice of params ++ optimizer
  };
  void snapshot(const Source& source, std::vector<float>& out);
  void write(const Job& job);
  // Rank 0: writes the manifest once every shard of that step is on disk. With `wait`,
  // waits for them (blocking saves); without, returns false if one is still missing.
  bool completeManifest(const CheckpointMeta& meta, bool wait);
  void prune();
  void loop();

  std::string dir_;
  int rank_, nranks_, keep_;
  bool async_;
  Timeline& timeline_;
  // The training thread hands a job over with atomics and a semaphore only: mutex_
  // (owed_, error_) is for the writer and drain().
  std::mutex mutex_;
  std::condition_variable changed_;  // drain() waits on it
  std::counting_semaphore<> wake_{0};
  std::optional<Job> job_;  // waiting for or being written (the writer's while busy_)
  std::vector<float>
      spare_;  // snapshot memory, touched up front and reused: no page faults in a save
  std::atomic<bool> busy_{false}, stop_{false}, failed_{false};
  Source source_;
  std::atomic<bool> snapshotPending_{false};
  std::atomic<size_t> owedCount_{0};
  double lastSnapshot_ = 0;
  // Rank 0: steps whose shards were written here but not yet by every rank. The writer
  // looks at them between its own writes, so a slow or dead rank holds up nobody.
  std::vector<CheckpointMeta> owed_;
  std::string error_;
  std::atomic<bool> cancelled_{false};
  double lastWrite_ = 0;
  int64_t lastStep_ = -1;
  std::thread writer_;
};

}  // namespace trainer
