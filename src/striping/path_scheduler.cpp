#include "striping/path_scheduler.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace chorus::stripe {
namespace {

constexpr double kMinRate = 1e5;  // bytes/s: a stalled path still gets a finite estimate
constexpr double kAlpha = 0.3;    // weight of a new rate sample

}  // namespace

PathScheduler::PathScheduler(int paths, double initialRate)
    : paths_(static_cast<size_t>(paths), Path{initialRate}) {}

int PathScheduler::pick(size_t bytes, uint64_t usable) const {
  int best = -1;
  double bestTime = std::numeric_limits<double>::infinity();
  for (int p = 0; p < paths(); ++p) {
    if (!(usable >> p & 1)) continue;
    double t = static_cast<double>(paths_[p].backlog + bytes) / paths_[p].rate;
    if (t < bestTime) {
      bestTime = t;
      best = p;
    }
  }
  return best;
}

void PathScheduler::onWritten(int path, size_t bytes) {
  paths_[path].backlog += bytes;
  paths_[path].windowWritten += bytes;
}

void PathScheduler::onBacklog(int path, uint64_t backlog, Clock::time_point now) {
  Path& p = paths_[path];
  p.backlog = backlog;
  if (p.windowStart == Clock::time_point{}) {
    p.windowStart = now;
    p.windowBacklog = backlog;
    p.windowWritten = 0;
    return;
  }
  auto dt = now - p.windowStart;
  if (dt < kRateWindow) return;
  double seconds = std::chrono::duration<double>(dt).count();
  double drained =
      static_cast<double>(p.windowBacklog + p.windowWritten) -
      static_cast<double>(std::min<uint64_t>(backlog, p.windowBacklog + p.windowWritten));
  double sample = drained / seconds;
  if (p.timed && (p.windowBacklog > 0 || backlog > 0 || p.windowWritten > 0)) {
    // Measured by its completions.
  } else if (p.windowBacklog > 0 && backlog > 0) {
    // Busy the whole window: the drain rate is the path's capacity now.
    p.rate = std::max(kMinRate, (1 - kAlpha) * p.rate + kAlpha * sample);
  } else if (sample > p.rate) {
    // It emptied its queue: at least this fast.
    p.rate = (1 - kAlpha) * p.rate + kAlpha * sample;
  } else if (p.windowBacklog == 0 && backlog == 0 && p.windowWritten == 0) {
    // Idle, so unmeasured: grow the estimate towards the fastest path, so that a path
    // written off while it stalled gets a chunk again and is measured.
    double fastest = 0;
    for (const Path& q : paths_) fastest = std::max(fastest, q.rate);
    p.rate = std::min(fastest, p.rate * 1.5);
  }
  p.windowStart = now;
  p.windowBacklog = backlog;
  p.windowWritten = 0;
}

void PathScheduler::onDrained(int path, size_t bytes, Clock::duration busy) {
  Path& p = paths_[path];
  const double seconds = std::max(1e-6, std::chrono::duration<double>(busy).count());
  const double sample = static_cast<double>(bytes) / seconds;
  p.rate = std::max(kMinRate, p.timed ? (1 - kAlpha) * p.rate + kAlpha * sample : sample);
  p.timed = true;
}

double PathScheduler::weight(int path) const {
  double total = 0;
  for (const Path& p : paths_) total += p.rate;
  return total > 0 ? paths_[path].rate / total : 0;
}

std::string PathScheduler::describe() const {
  std::string out;
  char text[64];
  for (int p = 0; p < paths(); ++p) {
    std::snprintf(text, sizeof(text), "%s%d:%.0f%% (%.1f MB/s)", p ? " " : "", p, 100 * weight(p),
                  rate(p) / 1e6);
    out += text;
  }
  return out;
}

}  // namespace chorus::stripe
