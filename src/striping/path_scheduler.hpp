// Which path takes the next chunk: the one that would finish it soonest, given the bytes
// it still has queued and its measured drain rate (weighted join-the-shortest-queue).
// Rates come from backlog readings: what a path drained between two readings while it
// stayed busy. A slow path's rate drops, so it gets fewer chunks; an idle path's estimate
// creeps up again so that a path that recovered is probed. Pure logic, no I/O.
#pragma once

#include "clock.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace chorus::stripe {

class PathScheduler {
 public:
  // Readings closer together than this only refresh the backlog, not the rate.
  static constexpr auto kRateWindow = std::chrono::milliseconds(2);

  explicit PathScheduler(int paths, double initialRate = 1e9);

  int paths() const { return static_cast<int>(paths_.size()); }
  // The usable path (bit p of `usable`) that would finish `bytes` soonest; -1 if none.
  int pick(size_t bytes, uint64_t usable) const;
  void onWritten(int path, size_t bytes);
  // A backlog reading of `path` (PathIo::backlog) taken at `now`.
  void onBacklog(int path, uint64_t backlog, Clock::time_point now);
  // A timed completion: `bytes` drained in `busy` (from when they started going out, i.e.
  // their post or the path's previous completion, to their completion). For transports
  // that see each write complete (verbs); from the first one on, this path's rate comes
  // from these samples only (readings then only refresh its backlog and probe it when
  // idle): readings far apart cannot tell a slow path from one that sat idle.
  void onDrained(int path, size_t bytes, Clock::duration busy);

  double rate(int path) const { return paths_[path].rate; }          // bytes per second
  double weight(int path) const;                                     // share of the total rate
  uint64_t backlog(int path) const { return paths_[path].backlog; }  // estimate
  // "47% 53%": the weights, for logs.
  std::string describe() const;

 private:
  struct Path {
    double rate;
    uint64_t backlog = 0;        // last reading plus what was written since
    uint64_t windowBacklog = 0;  // reading at the start of the rate window
    uint64_t windowWritten = 0;  // written since the window started
    Clock::time_point windowStart{};
    bool timed = false;  // rate from onDrained
  };
  std::vector<Path> paths_;
};

}  // namespace chorus::stripe
