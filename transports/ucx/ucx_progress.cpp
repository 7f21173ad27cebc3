#include "transports/ucx/ucx_progress.hpp"

#include "errors.hpp"
#include "transports/ucx/ucx_record.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>

namespace chorus::ucx {
namespace {

// The engine counts as away this long after its last call: longer than the gaps between
// its calls while a collective runs (a slice's reduction, a spin), short next to a
// peer's patience.
constexpr auto kHandOver = std::chrono::milliseconds(2);
// Upper bound of one sleep on the event fd, as insurance against a missed wake-up.
constexpr int kSleepMs = 50;
// ucp_worker_progress calls one drain makes at most (each handles a batch of events).
constexpr int kMostProgressPerDrain = 4096;
// Wake-ups in a row that find no work before the thread backs off for kBackOffMs.
constexpr int kMostEmptyWakes = 3;
constexpr int kBackOffMs = 1;

}  // namespace

Progress::Progress(std::vector<Worker*> workers, std::function<void()> afterProgress)
    : workers_(std::move(workers)), afterProgress_(std::move(afterProgress)) {
  if (workers_.size() > static_cast<size_t>(kMostDevices))  // sleep()'s poll set
    throwInvalid("ucx: at most " + std::to_string(kMostDevices) + " workers");
  stopFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stopFd_ < 0) throwSystemError("ucx: eventfd");
}

Progress::~Progress() {
  stop();
  ::close(stopFd_);
}

void Progress::start() {
  thread_ = std::thread([this] { run(); });
}

void Progress::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(stopFd_, &one, sizeof(one));
  thread_.join();
}

bool Progress::drain() {
  bool any = false;
  // Bounded: a worker that reports events on every call (never seen, but suspected in a
  // hang under SCHED_FIFO with two endpoints per peer, docs/verbs_striping.md) must not
  // keep a caller from its deadline. Left-over events make ucp_worker_arm say BUSY, so the
  // caller comes back for them.
  for (Worker* worker : workers_)
    for (int calls = 0; calls < kMostProgressPerDrain && worker->progress(); ++calls) any = true;
  if (any) afterProgress_();
  return any;
}

ucs_status_t Progress::arm() {
  for (Worker* worker : workers_) {
    ucs_status_t status = ucp_worker_arm(worker->get());
    if (status != UCS_OK) return status;
  }
  return UCS_OK;
}

bool Progress::sleep(std::chrono::nanoseconds timeout, int stopFd) const noexcept {
  // On the stack: the engine's waits and the progress thread both sleep here, each with
  // its own revents, and nothing is allocated on the way to a sleep.
  std::array<pollfd, kMostDevices + 1> fds;
  nfds_t n = 0;
  if (stopFd >= 0) fds[n++] = {stopFd, POLLIN, 0};
  for (const Worker* worker : workers_) fds[n++] = {worker->eventFd(), POLLIN, 0};
  const auto ns = std::max<int64_t>(0, timeout.count());
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  // An error (EINTR; the others cannot happen with these arguments) ends the sleep early:
  // every caller loops to its own deadline.
  if (::ppoll(fds.data(), n, &ts, nullptr) < 0) return false;
  return stopFd >= 0 && (fds[0].revents & POLLIN) != 0;
}

void Progress::run() {
  int emptyWakes = 0;  // wake-ups in a row on the worker's fd that found nothing to do
  while (!stopping_) {
    auto away = Clock::time_point(Clock::duration(engineUntil_.load(std::memory_order_relaxed))) +
                kHandOver;
    auto now = Clock::now();
    pollfd stop{stopFd_, POLLIN, 0};
    if (now < away) {  // the engine is driving: wait for it to leave (or for stop)
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(away - now).count();
      ::poll(&stop, 1, static_cast<int>(ms));
      continue;
    }
    ucs_status_t status;
    bool progressed;
    {
      std::lock_guard lock(mutex_);
      progressed = drain();
      status = arm();
    }
    // The worker's fd can stay readable while ucp_worker_progress finds nothing to do (an
    // event that UCX's own async thread handles). Polling it again at once is a busy loop,
    // and under SCHED_FIFO (threads inherit the policy) a thread that never blocks keeps
    // every thread of its priority on its core from running: UCX's async thread, which
    // would clear the event, and the engine, which then cannot reach its deadline. On one
    // core that made a 2-rank start take 20 s; on two, a hang. So after a few such wakes,
    // block on the stop fd alone for a moment.
    emptyWakes = progressed ? 0 : emptyWakes + 1;
    if (emptyWakes > kMostEmptyWakes) {
      ::poll(&stop, 1, kBackOffMs);
      emptyWakes = 0;
      continue;
    }
    // UCS_ERR_BUSY: events came in meanwhile, go round again, but yield first (as above).
    // Any other error: the engine's next call reports it; keep the thread alive but slow.
    if (status == UCS_ERR_BUSY)
      sched_yield();
    else if (status == UCS_OK)
      sleep(std::chrono::milliseconds(kSleepMs), stopFd_);
    else
      ::poll(&stop, 1, kSleepMs);
  }
}

}  // namespace chorus::ucx
