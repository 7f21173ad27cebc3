// How long a waiting rank polls without system calls before it starts handing its core
// over (sched_yield), learnt from the waits before, as glibc's adaptive mutex learns its
// spin count. On a quiet machine the peer answers within a microsecond or two and a
// system call per poll would double a small all-reduce (np=2, 8 B); on a machine loaded by
// other processes the peer is often not running, polling without yielding keeps it off
// the core for longer (np=2, 8 B at load 14: 6.7 us yielding at once, 23 us after 5 us of
// pause, 180 us after 50 us). So the budget grows while waits end within it (or just
// after it) and halves each time one outlasts it, between a floor (which keeps probing
// whether the machine has gone quiet) and the configured limit.
#pragma once

#include <algorithm>
#include <chrono>

namespace chorus {

class SpinBudget {
 public:
  using Duration = std::chrono::nanoseconds;
  static constexpr Duration kFloor{250};
  static constexpr int kNearMiss = 4;  // an answer within 4x the budget counts

  // `limit`: the most the budget grows to; zero turns pausing off (ranks outnumber cores).
  explicit SpinBudget(Duration limit) : limit_(limit), budget_(std::min(limit, kFloor)) {}

  Duration budget() const { return budget_; }

  // A wait ended (the peer answered) `waited` after it began polling. Within the budget,
  // or soon after it (the peer was running, a little more pausing would have caught it):
  // the budget grows to twice the wait at least. Long after: the peer had to get a core
  // first; expired() has halved the budget already.
  void answered(Duration waited) {
    if (waited > kNearMiss * budget_) return;
    budget_ = std::min(limit_, std::max({budget_ + budget_ / 4, 2 * waited, kFloor}));
  }
  // A wait outlasted the budget without an answer.
  void expired() { budget_ = std::min(limit_, std::max(kFloor, budget_ / 2)); }

 private:
  Duration limit_;
  Duration budget_;
};

}  // namespace chorus
