// Per-rank record of what happened when (forward, backward, each bucket's all-reduce,
// checkpoint snapshot and write), written as Chrome trace events (open in Perfetto).
// Thread-safe: the main, communication and checkpoint-writer threads all record.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace trainer {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

class Timeline {
 public:
  enum Lane { kMain = 0, kComm = 1, kWriter = 2 };
  explicit Timeline(int rank, size_t maxEvents = 20000) : rank_(rank), max_(maxEvents) {}
  void add(Lane lane, std::string name, Clock::time_point start, Clock::time_point end);
  // The events as a JSON array body (no brackets), process = rank, threads = lanes.
  std::string chromeEvents() const;

 private:
  struct Event {
    Lane lane;
    std::string name;
    int64_t startNs, durNs;  // steady_clock
  };
  int rank_;
  size_t max_;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

// Merges the per-rank fragments trace-rank-*.json of `dir` into `dir`/trace.json.
void mergeTraces(const std::string& dir, int nranks);

}  // namespace trainer
