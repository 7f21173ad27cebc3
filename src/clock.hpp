// Time points used for every wait: a wait takes a Deadline, never a bare duration.
#pragma once

#include <chrono>

namespace chorus {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline deadlineIn(std::chrono::nanoseconds d) {
  if (d >= std::chrono::hours(24 * 365)) return Deadline::max();
  return Clock::now() + d;
}

}  // namespace chorus
