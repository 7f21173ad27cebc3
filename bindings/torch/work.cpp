#include "work.hpp"

#include <ATen/core/ivalue.h>

namespace chorus::torchpg {

ChorusWork::ChorusWork(std::shared_ptr<Driver> driver, int rank, c10d::OpType type,
                       std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      driver_(std::move(driver)),
      outputs_(std::move(outputs)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

ChorusWork::~ChorusWork() = default;

bool ChorusWork::isCompleted() {
  std::lock_guard lock(mutex_);
  return completed_;
}

bool ChorusWork::isSuccess() const {
  std::lock_guard lock(mutex_);
  return completed_ && !exception_;
}

std::exception_ptr ChorusWork::exception() const {
  std::lock_guard lock(mutex_);
  return exception_;
}

std::vector<at::Tensor> ChorusWork::result() { return outputs_; }

c10::intrusive_ptr<c10::ivalue::Future> ChorusWork::getFuture() { return future_; }

bool ChorusWork::wait(std::chrono::milliseconds timeout) {
  const Deadline deadline = timeout == kNoTimeout ? Deadline::max() : Clock::now() + timeout;
  driver_->driveUntilTaken(*this, deadline);
  // Taken: completed by whichever thread took it (at most a copy-back away).
  const auto left =
      deadline == Deadline::max()
          ? kNoTimeout
          : std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                     std::chrono::milliseconds(1));
  return c10d::Work::wait(left);
}

void ChorusWork::complete(std::exception_ptr error) {
  if (!error && finalize) {
    try {
      finalize();
    } catch (...) {
      error = std::current_exception();
    }
  }
  keepAlive.clear();
  pieces.clear();
  finish(error);  // wakes waiters on cv_
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

Driver::Driver(std::shared_ptr<detail::CommImpl> comm) : comm_(std::move(comm)) {
  thread_ = std::thread([this] { progressLoop(); });
}

Driver::~Driver() { shutdown(Clock::now()); }

std::vector<int> Driver::failedRanks() {
  ++contenders_;
  std::lock_guard lock(mutex_);
  --contenders_;
  return comm_ ? comm_->engine().failedRanks() : std::vector<int>{};
}

std::string Driver::algorithmFor(Collective collective, size_t count, DataType type) {
  ++contenders_;
  std::lock_guard lock(mutex_);
  --contenders_;
  if (!comm_) throw Error(Result::InvalidUsage, "process group was shut down");
  return comm_->algorithmFor(collective, count, type);
}

void Driver::setAlgorithm(const std::string& spec) {
  ++contenders_;
  std::lock_guard lock(mutex_);
  --contenders_;
  if (!comm_) throw Error(Result::InvalidUsage, "process group was shut down");
  comm_->setAlgorithm(spec);
}

void Driver::enqueue(const c10::intrusive_ptr<ChorusWork>& work,
                     const std::function<void(detail::CommImpl&)>& submit) {
  ++contenders_;
  std::unique_lock lock(mutex_);
  --contenders_;
  if (stop_ || !comm_) throw Error(Result::InvalidUsage, "process group was shut down");
  submit(*comm_);
  for (const chorus::Work& piece : work->pieces) {
    const std::string name = piece.algorithm();
    if (("," + work->algorithm_ + ",").find("," + name + ",") != std::string::npos) continue;
    work->algorithm_ += (work->algorithm_.empty() ? "" : ",") + name;
  }
  pending_.push_back(work);
  lock.unlock();
  queued_.notify_one();
}

std::vector<c10::intrusive_ptr<ChorusWork>> Driver::driveSlice(std::chrono::milliseconds slice,
                                                               std::exception_ptr& error) {
  std::vector<c10::intrusive_ptr<ChorusWork>> taken;
  while (!pending_.empty()) {
    ChorusWork& work = *pending_.front();
    try {
      while (work.nextPiece_ < work.pieces.size()) {
        if (!work.pieces[work.nextPiece_].wait(slice)) return taken;
        ++work.nextPiece_;
      }
    } catch (...) {
      // The communicator failed: this work fails with Chorus's message; the later ones
      // fail with theirs when driven.
      error = std::current_exception();
    }
    work.taken_ = true;
    taken.push_back(pending_.front());
    pending_.pop_front();
    if (error) return taken;
    slice = std::chrono::milliseconds(0);  // the next ones only if already complete
  }
  return taken;
}

// Completes `taken` outside the lock (copy-backs and future callbacks may take time or
// submit more work); `error` belongs to the last one.
static void completeAll(std::vector<c10::intrusive_ptr<ChorusWork>>& taken,
                        std::exception_ptr error) {
  for (size_t i = 0; i < taken.size(); ++i)
    taken[i]->complete(i + 1 == taken.size() ? error : nullptr);
  taken.clear();
}

void Driver::driveUntilTaken(ChorusWork& work, Deadline deadline) {
  for (;;) {
    std::vector<c10::intrusive_ptr<ChorusWork>> taken;
    std::exception_ptr error;
    {
      ++contenders_;
      std::unique_lock lock(mutex_);
      --contenders_;
      if (work.taken_) return;
      if (Clock::now() >= deadline) return;  // Work::wait reports the time-out
      auto slice = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      slice = std::min(slice, std::chrono::milliseconds(100));
      taken = driveSlice(slice, error);
    }
    completeAll(taken, error);
  }
}

void Driver::progressLoop() {
  for (;;) {
    std::vector<c10::intrusive_ptr<ChorusWork>> taken;
    std::exception_ptr error;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (stop_) return;
      // Short slices: a caller that wants to submit or wait gets the lock soon.
      taken = driveSlice(std::chrono::milliseconds(1), error);
    }
    completeAll(taken, error);
    for (int i = 0; i < 1000 && contenders_.load() > 0; ++i) std::this_thread::yield();
  }
}

void Driver::shutdown(Deadline deadline) {
  {
    std::lock_guard lock(mutex_);
    if (!comm_) return;
  }
  // Finish what was issued, so that no rank leaves while others still need its data.
  for (;;) {
    c10::intrusive_ptr<ChorusWork> last;
    {
      std::lock_guard lock(mutex_);
      if (pending_.empty()) break;
      last = pending_.back();
    }
    driveUntilTaken(*last, deadline);
    if (Clock::now() >= deadline) break;
  }
  std::vector<c10::intrusive_ptr<ChorusWork>> abandoned;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    for (auto& w : pending_) w->taken_ = true;
    abandoned.assign(pending_.begin(), pending_.end());
    pending_.clear();
  }
  queued_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& w : abandoned)
    w->complete(std::make_exception_ptr(
        Error(Result::InvalidUsage, "process group destroyed before the operation completed")));
  std::lock_guard lock(mutex_);
  comm_.reset();  // leaves with the other ranks (CommImpl's destructor)
}

}  // namespace chorus::torchpg
