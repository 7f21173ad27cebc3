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
  void loop();
  chorus::Communicator comm_;
  int rank_, size_;
  std::chrono::milliseconds deadline_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace trainer
