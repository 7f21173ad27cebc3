#include "transports/ucx/ucx_progress.hpp"

#include "errors.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>

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

}  // namespace

Progress::Progress(Worker& worker, std::function<void()> afterProgress)
    : worker_(worker), afterProgress_(std::move(afterProgress)) {
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
  for (int calls = 0; calls < kMostProgressPerDrain && worker_.progress(); ++calls) any = true;
  if (any) afterProgress_();
  return any;
}

void Progress::run() {
  while (!stopping_) {
    auto away = Clock::time_point(Clock::duration(engineUntil_.load(std::memory_order_relaxed))) +
                kHandOver;
    auto now = Clock::now();
    pollfd fds[2] = {{stopFd_, POLLIN, 0}, {worker_.eventFd(), POLLIN, 0}};
    if (now < away) {  // the engine is driving: wait for it to leave (or for stop)
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(away - now).count();
      ::poll(fds, 1, static_cast<int>(ms));
      continue;
    }
    ucs_status_t status;
    {
      std::lock_guard lock(mutex_);
      drain();
      status = ucp_worker_arm(worker_.get());
    }
    // UCS_ERR_BUSY: events came in meanwhile, go round again, but yield first: under
    // SCHED_FIFO (threads inherit the policy) a loop that never blocks keeps a thread of
    // the same priority on this core, the engine's included, from ever running, and a
    // starved engine cannot reach its deadline. Any other error: the engine's next call
    // reports it; keep the thread alive but slow.
    if (status == UCS_ERR_BUSY)
      sched_yield();
    else
      ::poll(fds, status == UCS_OK ? 2 : 1, kSleepMs);
  }
}

}  // namespace chorus::ucx
