// Where ranks outnumber cores, the training threads that share a core take turns at the
// end of every GEMM and optimizer bucket instead of at the scheduler's ticks (4 ms here):
// offer() calls sched_yield, which on EEVDF hands the core to another runnable thread of
// the job that is behind in its fair share and returns at once otherwise. The ranks on a
// core then progress together and their backward passes end together, instead of one
// ending up to a tick early and waiting for the other with its last bucket's all-reduce
// exposed (perf/trainer/README.md, thirteenth pass). At most one offer per kMinTurn, so
// that many small GEMMs (the transformer's) do not switch threads every few microseconds.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>

namespace trainer::core_turns {

inline std::atomic<bool> on{false};
inline constexpr std::chrono::microseconds kMinTurn{100};

inline void enable(bool yes) { on.store(yes, std::memory_order_relaxed); }
inline bool enabled() { return on.load(std::memory_order_relaxed); }

inline void offer() {
  if (!enabled()) return;
  thread_local std::chrono::steady_clock::time_point last{};
  const auto now = std::chrono::steady_clock::now();
  if (now - last < kMinTurn) return;
  sched_yield();
  last = std::chrono::steady_clock::now();
}

}  // namespace trainer::core_turns
