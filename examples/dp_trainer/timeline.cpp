#include "timeline.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace trainer {

void Timeline::add(Lane lane, std::string name, Clock::time_point start, Clock::time_point end) {
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  std::lock_guard lock(mutex_);
  if (events_.size() >= max_) return;
  // steady_clock is CLOCK_MONOTONIC: one time base for every process on the host.
  events_.push_back({lane, std::move(name),
                     duration_cast<nanoseconds>(start.time_since_epoch()).count(),
                     duration_cast<nanoseconds>(end - start).count()});
}

std::string Timeline::chromeEvents() const {
  static const char* kLaneNames[] = {"compute", "all-reduce", "checkpoint writer"};
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << rank_
      << ",\"args\":{\"name\":\"rank " << rank_ << "\"}}";
  for (int lane = 0; lane < 3; ++lane)
    out << ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << rank_ << ",\"tid\":" << lane
        << ",\"args\":{\"name\":\"" << kLaneNames[lane] << "\"}}";
  // Microseconds with three decimals (the format's unit, fractions allowed): spans of a few
  // microseconds (small buckets) are not rounded away, so the report's figures can be
  // recomputed from the trace (tests/trainer/check_report.py).
  const auto us = [](int64_t ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(ns / 1000),
                  static_cast<long long>(ns % 1000));
    return std::string(text);
  };
  for (const Event& e : events_)
    out << ",\n{\"ph\":\"X\",\"name\":\"" << e.name << "\",\"pid\":" << rank_
        << ",\"tid\":" << static_cast<int>(e.lane) << ",\"ts\":" << us(e.startNs)
        << ",\"dur\":" << us(e.durNs) << "}";
  return out.str();
}

void mergeTraces(const std::string& dir, int nranks) {
  std::ofstream out(dir + "/trace.json");
  out << "{\"traceEvents\":[\n";
  bool first = true;
  for (int r = 0; r < nranks; ++r) {
    std::ifstream in(dir + "/trace-rank-" + std::to_string(r) + ".json");
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().empty()) continue;
    out << (first ? "" : ",\n") << text.str();
    first = false;
  }
  out << "\n],\"displayTimeUnit\":\"ms\"}\n";
}

}  // namespace trainer
