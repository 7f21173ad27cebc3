// Keeps UCX moving while the engine is away.
//
// UCX moves data only inside ucp_worker_progress: a rendezvous send, or the tail of an
// eager send queued in UCX's own tcp buffers, waits for the sending process to progress.
// The engine calls in only while a collective runs, so a rank whose last step was a send
// (and which is now computing, or waiting on the store) would leave its peer stuck. This
// thread takes over when the engine has not touched the transport for a short while,
// sleeping on the workers' event fds, and steps aside again as soon as the engine is back.
// Every use of the workers and of the channels' state holds mutex().
#pragma once

#include "clock.hpp"
#include "transports/ucx/ucx_resources.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace chorus::ucx {

class Progress {
 public:
  // afterProgress runs (with the mutex held) after each pass that made progress. The
  // workers (one per device) outlive this object.
  Progress(std::vector<Worker*> workers, std::function<void()> afterProgress);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void start();
  void stop();  // joins the thread; idempotent
  std::mutex& mutex() { return mutex_; }
  // The engine is in the transport now, or sleeping in it until `until`.
  void engineActive(Clock::time_point until = Clock::now()) {
    engineUntil_.store(until.time_since_epoch().count(), std::memory_order_relaxed);
  }
  // Drains every worker's events (mutex held); true when anything happened.
  bool drain();
  // Arms every worker's event fd (mutex held): UCS_OK when all are armed, UCS_ERR_BUSY when
  // one has events pending (drain again), else the first error.
  ucs_status_t arm();
  // Sleeps until a worker's fd is readable, `stopFd` (if >= 0) is, or `timeout` passes;
  // after arm() said UCS_OK. True when woken by the stop fd. Never throws (it runs on the
  // progress thread too).
  bool sleep(std::chrono::nanoseconds timeout, int stopFd = -1) const noexcept;

 private:
  void run();

  std::vector<Worker*> workers_;
  std::function<void()> afterProgress_;
  std::mutex mutex_;
  std::atomic<Clock::rep> engineUntil_{0};
  std::atomic<bool> stopping_{false};
  int stopFd_ = -1;  // eventfd that wakes the thread to stop
  std::thread thread_;
};

}  // namespace chorus::ucx
