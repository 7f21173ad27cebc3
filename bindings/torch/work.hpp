// A torch Work over one or more Chorus Works, and the driver that makes them progress.
// Chorus collectives move only while someone drives the engine; the driver's progress
// thread does that in the background, so async_op=True really overlaps with the caller,
// and a caller that waits drives it itself (no thread hand-off on the critical path).
#pragma once

#include "comm/comm_impl.hpp"

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace chorus::torchpg {

class Driver;

class ChorusWork : public c10d::Work {
 public:
  ChorusWork(std::shared_ptr<Driver> driver, int rank, c10d::OpType type,
             std::vector<at::Tensor> outputs);
  ~ChorusWork() override;

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Runs finalize (unless failed), then marks the work and its future complete; called
  // once, by the thread that took it from the driver's queue, outside the lock.
  void complete(std::exception_ptr error);

  // The algorithm of each Chorus operation this work ran, as Work::algorithm() names it
  // ("ring", "mailbox", ...), distinct, in order, joined by ","; "" when it ran none.
  std::string algorithm() const { return algorithm_; }

  // Filled in by the process group while it submits (under the driver's lock).
  std::vector<chorus::Work> pieces;   // completes in order
  std::function<void()> finalize;     // after the last piece: copy results back
  std::vector<at::Tensor> keepAlive;  // buffers the engine reads or writes

 private:
  friend class Driver;

  std::shared_ptr<Driver> driver_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::string algorithm_;  // set by Driver::enqueue after the pieces are submitted
  size_t nextPiece_ = 0;
  bool taken_ = false;  // popped from the driver's queue (guarded by the driver's lock)
};

class Driver {
 public:
  explicit Driver(std::shared_ptr<detail::CommImpl> comm);
  ~Driver();

  // Runs `submit` (which fills work.pieces) under the lock and queues the work; an
  // exception from `submit` (bad arguments) reaches the caller and nothing is queued.
  void enqueue(const c10::intrusive_ptr<ChorusWork>& work,
               const std::function<void(detail::CommImpl&)>& submit);
  // Drives the engine until `work` has left the queue or the deadline passes.
  void driveUntilTaken(ChorusWork& work, Deadline deadline);
  // Completes everything queued (failing what is left at the deadline), stops the thread
  // and destroys the communicator (which leaves together with the other ranks).
  void shutdown(Deadline deadline);
  detail::CommImpl& comm() { return *comm_; }
  // CommImpl::algorithmFor and setAlgorithm, under the lock.
  std::string algorithmFor(Collective collective, size_t count, DataType type);
  void setAlgorithm(const std::string& spec);
  // The ranks the communicator's failure names (Communicator::failedRanks), read under
  // the lock; [] while it has not failed.
  std::vector<int> failedRanks();

 private:
  // One slice of progress on the front work, under the lock; returns the works that
  // left the queue, to be completed after the lock is released (`error`: the last one
  // failed with it).
  std::vector<c10::intrusive_ptr<ChorusWork>> driveSlice(std::chrono::milliseconds slice,
                                                         std::exception_ptr& error);
  void progressLoop();

  std::shared_ptr<detail::CommImpl> comm_;
  std::mutex mutex_;  // the engine is single-threaded: every use goes through this lock
  std::condition_variable queued_;
  std::deque<c10::intrusive_ptr<ChorusWork>> pending_;
  std::atomic<int> contenders_{0};  // threads waiting for mutex_: the progress thread yields
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace chorus::torchpg
