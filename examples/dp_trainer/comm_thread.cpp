#include "comm_thread.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

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

std::future<void> CommThread::start(Start start, Done done, std::string what) {
  auto promise = std::make_shared<std::promise<void>>();
  std::future<void> result = promise->get_future();
  // The task only issues the collective; loop() and drive() see it to its end.
  post([this, start = std::move(start), done = std::move(done), what = std::move(what),
        promise](chorus::Communicator& c) mutable {
    while (static_cast<int>(inFlight_.size()) >= maxInFlight_)
      drive(std::chrono::milliseconds(200));
    const auto begin = Clock::now();
    try {
      inFlight_.push_back(
          InFlight{start(c), std::move(done), std::move(what), begin, begin + deadline_, {}});
      inFlight_.back().result = std::move(*promise);
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  return result;
}

bool CommThread::setRealtime() {
  sched_param param{};
  param.sched_priority = 1;
  return pthread_setschedparam(thread_.native_handle(), SCHED_FIFO, &param) == 0;
}

bool CommThread::setNice(int nice) {
  bool ok = false;
  run([&](chorus::Communicator&) {
    ok = setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice) == 0;
  });
  return ok;
}

void CommThread::complete(size_t i, std::exception_ptr error) {
  InFlight f = std::move(inFlight_[i]);
  inFlight_.erase(inFlight_.begin() + static_cast<std::ptrdiff_t>(i));
  if (!error) try {
      f.done(f.work, f.start, Clock::now());
    } catch (...) {
      error = std::current_exception();
    }
  if (error)
    f.result.set_exception(error);
  else
    f.result.set_value();
}

void CommThread::drive(std::chrono::milliseconds slice) {
  if (inFlight_.empty()) return;
  try {
    // Waiting on the oldest drives every collective of the communicator.
    if (inFlight_.front().work.wait(slice)) return complete(0, nullptr);
  } catch (...) {
    return complete(0, std::current_exception());
  }
  for (size_t i = 0; i < inFlight_.size(); ++i) {
    try {
      if (inFlight_[i].work.test()) {
        complete(i--, nullptr);
        continue;
      }
    } catch (...) {
      complete(i--, std::current_exception());
      continue;
    }
    if (Clock::now() > inFlight_[i].giveUp) {
      auto late = std::make_exception_ptr(chorus::Error(
          chorus::Result::Timeout, inFlight_[i].what + " still running after " +
                                       std::to_string(deadline_.count() / 1000) + " s"));
      complete(i--, late);
    }
  }
}

void CommThread::loop() {
  for (;;) {
    std::packaged_task<void()> job;
    {
      std::unique_lock lock(mutex_);
      if (inFlight_.empty()) wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty() && !inFlight_.empty()) {
        lock.unlock();
        // Short slices: a bucket posted meanwhile is started within a millisecond.
        drive(std::chrono::milliseconds(maxInFlight_ > 1 ? 1 : 200));
        continue;
      }
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
