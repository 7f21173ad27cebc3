#include "timeline.hpp"

#include <fstream>
#include <sstream>

namespace trainer {

void Timeline::add(Lane lane, std::string name, Clock::time_point start, Clock::time_point end) {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  std::lock_guard lock(mutex_);
  if (events_.size() >= max_) return;
  // steady_clock is CLOCK_MONOTONIC: one time base for every process on the host.
  events_.push_back({lane, std::move(name),
                     duration_cast<microseconds>(start.time_since_epoch()).count(),
                     duration_cast<microseconds>(end - start).count()});
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
  for (const Event& e : events_)
    out << ",\n{\"ph\":\"X\",\"name\":\"" << e.name << "\",\"pid\":" << rank_
        << ",\"tid\":" << static_cast<int>(e.lane) << ",\"ts\":" << e.startUs
        << ",\"dur\":" << e.durUs << "}";
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
