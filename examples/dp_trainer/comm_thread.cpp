#include "comm_thread.hpp"

namespace trainer {

CommThread::CommThread(chorus::Communicator comm, std::chrono::milliseconds deadline)
    : comm_(std::move(comm)), rank_(comm_.rank()), size_(comm_.size()), deadline_(deadline) {
  thread_ = std::thread([this] { loop(); });
}

CommThread::~CommThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::future<void> CommThread::post(Task task) {
  std::packaged_task<void()> job([this, task = std::move(task)] { task(comm_); });
  std::future<void> done = job.get_future();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return done;
}

void CommThread::loop() {
  for (;;) {
    std::packaged_task<void()> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

void CommThread::await(chorus::Work& work, const std::string& what) const {
  const auto giveUp = std::chrono::steady_clock::now() + deadline_;
  // Work::wait also fails on its own when a peer dies (CHORUS_TIMEOUT); this deadline
  // bounds the whole wait as well.
  while (!work.wait(std::chrono::milliseconds(200)))
    if (std::chrono::steady_clock::now() > giveUp)
      throw chorus::Error(
          chorus::Result::Timeout,
          what + " still running after " + std::to_string(deadline_.count() / 1000) + " s");
}

void CommThread::shrink(const std::vector<int>& dead) {
  run([&](chorus::Communicator& c) { c = c.shrink(dead); });
  rank_ = comm_.rank();
  size_ = comm_.size();
}

void CommThread::grow(int newcomers) {
  run([&](chorus::Communicator& c) { c = c.grow(newcomers); });
  rank_ = comm_.rank();
  size_ = comm_.size();
}

int CommThread::pendingJoins() {
  double waiting = 0;
  if (rank_ == 0) run([&](chorus::Communicator& c) { waiting = c.pendingJoins(); });
  allReduce(&waiting, 1, chorus::RedOp::Max);
  return static_cast<int>(waiting);
}

void CommThread::barrier() {
  double one = 1;
  allReduce(&one, 1, chorus::RedOp::Sum);
}

void CommThread::allReduce(double* values, size_t n, chorus::RedOp op) {
  run([&](chorus::Communicator& c) {
    chorus::Work w = c.allReduce(values, values, n, chorus::DataType::Float64, op);
    await(w, "all-reduce of " + std::to_string(n) + " statistics");
  });
}

}  // namespace trainer
