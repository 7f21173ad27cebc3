// One thread owns every Chorus call of this process. A Chorus collective advances only
// while its caller waits on it or tests it (there is no progress thread in the library),
// so for the all-reduces to run during the backward pass some other thread must drive
// them; keeping all calls on that one thread also keeps them in one order on every rank.
#pragma once

#include <chorus/chorus.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trainer {

using Clock = std::chrono::steady_clock;

class CommThread {
 public:
  using Task = std::function<void(chorus::Communicator&)>;
  CommThread(chorus::Communicator comm, std::chrono::milliseconds deadline);
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Runs `task` on the communication thread after those posted before it; the future
  // carries its exception (a chorus::Error naming the failed rank, for instance).
  std::future<void> post(Task task);
  // Starts a collective on the communication thread: `start` issues it and returns its
  // Work; `done(start, end)` runs there once it completed. The thread does not wait for it
  // before taking the next task unless --max-in-flight collectives are already running
  // (then it drives the oldest to completion first); meanwhile it drives them all. The
  // future carries a failure (chorus::Error, or Timeout past the deadline).
  using Start = std::function<chorus::Work(chorus::Communicator&)>;
  using Done = std::function<void(chorus::Work&, Clock::time_point, Clock::time_point)>;
  std::future<void> start(Start start, Done done, std::string what);
  // Runs the communication thread at SCHED_FIFO priority 1 (the training thread keeps its
  // own): it then preempts backward at once when a bucket is posted or a peer's data
  // arrives, instead of waiting for a time slice. Returns false (and changes nothing) when
  // the system refuses (no CAP_SYS_NICE / RLIMIT_RTPRIO).
  bool setRealtime();
  // Sets the communication thread's nice value (its CFS/EEVDF weight); false if refused.
  bool setNice(int nice);
  // How many collectives started by start() may run at once (1: one after another).
  void setMaxInFlight(int n) { maxInFlight_ = n < 1 ? 1 : n; }
  // post() and wait for it.
  void run(Task task) { post(std::move(task)).get(); }
  // For tasks: waits on `work` until done, or throws once `deadline` passes.
  void await(chorus::Work& work, const std::string& what) const;
  // Replaces the communicator by one of the ranks not in `dead` (Communicator::shrink);
  // call when no task is queued.
  void shrink(const std::vector<int>& dead);
  // Replaces the communicator by one that admits `newcomers` joined processes
  // (Communicator::grow); call when no task is queued.
  void grow(int newcomers);
  // Rank 0's count of processes waiting to join, agreed by every rank (one all-reduce).
  int pendingJoins();
  // Small synchronous helpers.
  void barrier();
  void allReduce(double* values, size_t n, chorus::RedOp op);

 private:
  struct InFlight {
    chorus::Work work;
    Done done;
    std::string what;
    Clock::time_point start, giveUp;
    std::promise<void> result;
  };
  void loop();
  // Drives the collectives in flight for at most `slice`, completing those that finished.
  void drive(std::chrono::milliseconds slice);
  void complete(size_t i, std::exception_ptr error);
  chorus::Communicator comm_;
  std::deque<InFlight> inFlight_;  // only the communication thread touches it
  int maxInFlight_ = 1;
  int rank_, size_;
  std::chrono::milliseconds deadline_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace trainer
