// Whether a waiting rank polls with sched_yield before it sleeps, learnt from the yields
// before. Yielding pays where the thread that gets the core is a peer with a message to
// send: it runs until it waits itself and the yield returns within microseconds
// (chorus-perf's small all-reduces where ranks outnumber cores). It costs a scheduler tick
// where that thread computes: on EEVDF (Linux 6.6+) the yielder is not picked again before
// the running thread's slice ends, so it sees its peer's answer a tick late (HZ 250: median
// 3.9 ms), where a thread asleep on a futex is woken within 30-40 us
// (perf/trainer/wake_probe.c; chorus-train's communication thread next to its backward).
// So a yield that took kLongYield or more ends the yielding for the rest of that wait (it
// sleeps, under the same deadline), and the next kFirstSkip waits that would yield sleep at
// once; a wait that yields again (a probe) and meets another long yield doubles that count
// (up to kMaxSkip); after kShortProbes probes in a row whose yields all came back quickly
// it halves (below kFirstSkip: every wait yields again). The asymmetry is the costs': a
// long yield loses up to a tick (~4 ms), sleeping where a yield would have been short
// loses the futex wake-up (~30 us). Pure arithmetic on given durations: no clock.
#pragma once

#include <algorithm>
#include <chrono>

namespace chorus {

class YieldPolicy {
 public:
  using Duration = std::chrono::nanoseconds;
  // Longer than any yield to a peer that only polls or moves a slice (microseconds to
  // ~100 us), shorter than a tick at HZ 1000, 250 or 100.
  static constexpr Duration kLongYield{std::chrono::milliseconds(1)};
  static constexpr int kFirstSkip = 8;
  static constexpr int kMaxSkip = 1024;
  static constexpr int kShortProbes = 4;

  // `adaptive` false: every wait yields and nothing is learnt (the policy before).
  explicit YieldPolicy(bool adaptive = true) : adaptive_(adaptive) {}

  // A wait reached its yielding phase: whether it polls with sched_yield (false: it sleeps
  // at once).
  bool startYielding() {
    if (yielding()) return true;
    --skipLeft_;
    return false;
  }
  // Whether a wait now would yield (startYielding's answer, without counting a wait).
  bool yielding() const { return skipLeft_ == 0; }
  // One sched_yield took `took`: whether this wait goes on yielding.
  bool yielded(Duration took) {
    if (!adaptive_ || took < kLongYield) return true;
    skip_ = skip_ == 0 ? kFirstSkip : std::min(kMaxSkip, 2 * skip_);
    skipLeft_ = skip_;
    shortProbes_ = 0;
    return false;
  }
  // A wait that yielded ended (answered, or out of yielding time) without a long yield.
  void yieldsWereShort() {
    if (skip_ == 0) return;
    if (++shortProbes_ == kShortProbes) {
      skip_ = skip_ / 2 < kFirstSkip ? 0 : skip_ / 2;
      shortProbes_ = 0;
    }
    skipLeft_ = skip_;
  }

  // Back to a fresh policy (every wait yields), learnt nothing: for a caller whose next
  // waits are of another kind than those it learnt from. The tuning probe calls it before
  // each block: a policy that learnt to sleep in one block (a long yield under load) made
  // the next block's 8 B round trips measure futex wake-ups, not the link.
  void forget() {
    skip_ = 0;
    skipLeft_ = 0;
    shortProbes_ = 0;
  }

  int skip() const { return skip_; }          // waits to sleep at once after a long yield
  int skipLeft() const { return skipLeft_; }  // of which still to come

 private:
  bool adaptive_;
  int skip_ = 0;
  int skipLeft_ = 0;
  int shortProbes_ = 0;  // probes in a row whose yields were all short
};

}  // namespace chorus
