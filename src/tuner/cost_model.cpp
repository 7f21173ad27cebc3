#include "tuner/cost_model.hpp"

#include "algorithms/layout.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <tuple>

namespace chorus {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

size_t stepCount(const Step& s) { return s.kind == StepKind::Send ? s.src.count : s.dst.count; }

// One step of one rank, flattened with its dependencies as global indices.
struct Node {
  StepKind kind;
  bool pipelined;  // `after` streams element by element into this step
  int rank;
  int peer;
  size_t count;
  int after = -1;     // producer (same rank)
  int linkPrev = -1;  // previous step on the same peer queue, same direction
  int match = -1;     // receives: the matching send; before matching: the sequence number
  int pending = 0;    // dependencies not yet timed
  double start = 0, finish = 0, earliestStart = 0, earliestFinish = 0;
};

class Replay {
 public:
  Replay(int nranks, size_t elementSize, const LinkModel& link, size_t sliceBytes,
         const Layout* layout = nullptr, const LinkModel* inter = nullptr)
      : nranks_(nranks),
        elementSize_(elementSize),
        link_(link),
        inter_(inter && layout && layout->nranks() == nranks ? *inter : link),
        layout_(inter && layout && layout->nranks() == nranks ? layout : nullptr),
        sliceBytes_(static_cast<double>(sliceBytes)),
        lastSend_(nranks, -1),
        lastRecv_(nranks, -1),
        sendSeq_(nranks, 0),
        recvSeq_(nranks, 0),
        seen_(nranks, false) {
    sendBegin_.reserve(nranks + 1);
  }

  // Ranks must be added in order 0, 1, ..., nranks-1.
  void addRank(const Schedule& schedule) {
    const int rank = static_cast<int>(sendBegin_.size());
    const int base = static_cast<int>(nodes_.size());
    sendBegin_.push_back(sends_.size());
    std::vector<int> touched;
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      const Step& s = schedule.steps[i];
      const int g = base + static_cast<int>(i);
      Node n{s.kind, false, rank, s.peer, stepCount(s)};
      if (s.after >= 0 && static_cast<size_t>(s.after) < schedule.steps.size()) {
        n.after = base + s.after;
        const size_t made = stepCount(schedule.steps[s.after]);
        n.pipelined = made == n.count;
      }
      if (s.kind != StepKind::Copy && s.kind != StepKind::Reduce) {
        if (s.peer < 0 || s.peer >= nranks_) {
          n.match = -2;  // never satisfiable: reported as a deadlock
        } else {
          const bool sending = s.kind == StepKind::Send;
          auto& last = sending ? lastSend_ : lastRecv_;
          if (!seen_[s.peer]) {
            seen_[s.peer] = true;
            touched.push_back(s.peer);
          }
          n.linkPrev = last[s.peer];
          last[s.peer] = g;
          if (n.count > 0) {  // empty steps move no bytes: they match nothing
            if (sending) {
              sends_.push_back({s.peer, g});
              ++sendSeq_[s.peer];
            } else {
              n.match = recvSeq_[s.peer]++;
            }
          }
        }
      }
      nodes_.push_back(n);
    }
    // Sends grouped by peer, in order within a peer: the k-th one to b is at
    // lower_bound(b) + k.
    std::stable_sort(sends_.begin() + sendBegin_.back(), sends_.end(),
                     [](const SendRef& a, const SendRef& b) { return a.peer < b.peer; });
    for (int peer : touched) {  // per rank state back to empty, in O(peers touched)
      lastSend_[peer] = lastRecv_[peer] = -1;
      sendSeq_[peer] = recvSeq_[peer] = 0;
      seen_[peer] = false;
    }
  }

  ReplayResult run() {
    sendBegin_.push_back(sends_.size());
    ReplayResult result;
    result.steps = nodes_.size();
    if (static_cast<int>(sendBegin_.size()) != nranks_ + 1) {
      result.deadlock = true;
      result.micros = kInfinity;
      return result;
    }
    resolveMatches();
    buildDependents();
    free_.assign(3 * static_cast<size_t>(nranks_), 0);
    ingressFree_.assign(2 * static_cast<size_t>(nranks_), 0);
    // Steps that found their resource (egress port or CPU) busy wait in its line, best
    // earliest start first; one wake event per busy resource sits in the main queue at
    // the time it frees, so resources go to steps in order of when they can start.
    std::vector<std::vector<Entry>> waiting(free_.size());
    std::vector<bool> waking(free_.size(), false);
    for (int g = 0; g < static_cast<int>(nodes_.size()); ++g)
      if (nodes_[g].pending == 0) events_.push({earliest(g), g});
    size_t timed = 0;
    auto wait = [&](int resource, double est, int g) {
      auto& line = waiting[resource];
      line.push_back({est, g});
      std::push_heap(line.begin(), line.end(), std::greater<>());
      if (!waking[resource]) {
        waking[resource] = true;
        events_.push({free_[resource], -1 - resource});
      }
    };
    while (!events_.empty()) {
      auto [time, g] = events_.top();
      events_.pop();
      if (g < 0) {  // a resource frees: its best waiter takes it
        const int resource = -1 - g;
        auto& line = waiting[resource];
        if (free_[resource] > time) {
          events_.push({free_[resource], g});
          continue;
        }
        std::pop_heap(line.begin(), line.end(), std::greater<>());
        g = line.back().second;
        line.pop_back();
        if (line.empty())
          waking[resource] = false;
        else
          events_.push({std::max(time, free_[resource]), -1 - resource});
      } else {
        const int resource = resourceOf(nodes_[g]);
        if (resource >= 0 && (free_[resource] > time || !waiting[resource].empty())) {
          wait(resource, time, g);
          continue;
        }
      }
      Node& n = nodes_[g];
      schedule(n);
      if (const int resource = resourceOf(n);
          resource >= 0 && !waiting[resource].empty() && !waking[resource]) {
        waking[resource] = true;
        events_.push({free_[resource], -1 - resource});
      }
      ++timed;
      if (n.finish > result.micros || result.lastRank < 0) {
        result.micros = std::max(result.micros, n.finish);
        result.lastRank = n.rank;
      }
      for (size_t d = depBegin_[g]; d < depBegin_[g + 1]; ++d) {
        int next = dependents_[d];
        if (--nodes_[next].pending == 0) events_.push({earliest(next), next});
      }
    }
    if (timed != nodes_.size()) {
      result.deadlock = true;
      result.micros = kInfinity;
    }
    return result;
  }

 private:
  struct SendRef {
    int peer;
    int node;
  };

  double bytes(const Node& n) const { return static_cast<double>(n.count * elementSize_); }
  bool selfMessage(const Node& n) const { return n.peer == n.rank; }
  bool crossesNodes(const Node& n) const {
    return layout_ && n.peer >= 0 && n.peer < nranks_ && !layout_->sameNode(n.rank, n.peer);
  }
  const LinkModel& linkOf(const Node& n) const { return crossesNodes(n) ? inter_ : link_; }

  // Throughput cost of the step's own work, excluding waiting on others.
  double ownCost(const Node& n) const {
    const double b = bytes(n);
    switch (n.kind) {
      case StepKind::Send:
        return selfMessage(n) ? b / link_.copyBytesPerUs
                              : linkOf(n).overheadUs + b / linkOf(n).bytesPerUs;
      case StepKind::Recv:
        return selfMessage(n) ? 0 : linkOf(n).overheadUs;
      case StepKind::RecvReduce:
        return (selfMessage(n) ? 0 : linkOf(n).overheadUs) + b / link_.reduceBytesPerUs;
      case StepKind::Reduce:
        return b / link_.reduceBytesPerUs;
      case StepKind::Copy:
        return b / link_.copyBytesPerUs;
    }
    return 0;
  }
  double sliceCost(const Node& n) const {
    const double b = bytes(n);
    return b <= sliceBytes_ ? ownCost(n) : ownCost(n) * (sliceBytes_ / b);
  }

  void resolveMatches() {
    for (Node& n : nodes_) {
      if ((n.kind != StepKind::Recv && n.kind != StepKind::RecvReduce) || n.match < 0) continue;
      const int from = n.peer, seq = n.match;
      auto begin = sends_.begin() + sendBegin_[from], end = sends_.begin() + sendBegin_[from + 1];
      auto first = std::lower_bound(begin, end, n.rank,
                                    [](const SendRef& s, int peer) { return s.peer < peer; });
      if (end - first > seq && first[seq].peer == n.rank) {
        n.match = first[seq].node;
      } else {
        n.match = -2;
      }
    }
  }

  void buildDependents() {
    const size_t count = nodes_.size();
    depBegin_.assign(count + 1, 0);
    auto forEachDep = [&](auto&& f) {
      for (size_t g = 0; g < count; ++g) {
        const Node& n = nodes_[g];
        if (n.linkPrev >= 0) f(n.linkPrev, g);
        if (n.count == 0) continue;  // an empty step waits only for its queue
        if (n.after >= 0) f(n.after, g);
        if (n.kind != StepKind::Send && n.match >= 0) f(n.match, g);
      }
    };
    forEachDep([&](int dep, size_t) { ++depBegin_[dep + 1]; });
    for (size_t g = 0; g < count; ++g) depBegin_[g + 1] += depBegin_[g];
    dependents_.resize(depBegin_[count]);
    std::vector<size_t> fill(depBegin_.begin(), depBegin_.end() - 1);
    forEachDep([&](int dep, size_t g) {
      dependents_[fill[dep]++] = static_cast<int>(g);
      ++nodes_[g].pending;
    });
    for (Node& n : nodes_)
      if (n.match == -2) ++n.pending;  // unmatched receive: never ready
  }

  // Earliest start from the dependencies; records the earliest finish they allow.
  double earliest(int g) {
    Node& n = nodes_[g];
    double est = 0, efin = 0;
    if (n.linkPrev >= 0) est = nodes_[n.linkPrev].finish;
    if (n.count > 0) {
      if (n.after >= 0) {
        const Node& p = nodes_[n.after];
        if (n.pipelined) {
          est = std::max(est, p.start);
          efin = std::max(efin, p.finish + sliceCost(n));
        } else {
          est = std::max(est, p.finish);
        }
      }
      if (n.kind != StepKind::Send && n.match >= 0) {
        const Node& s = nodes_[n.match];
        const double latency = selfMessage(s) ? 0 : linkOf(s).latencyUs;
        est = std::max(est, s.start + latency);
        efin = std::max(efin, s.finish + latency + sliceCost(n));
      }
    }
    n.earliestStart = est;
    n.earliestFinish = efin;
    return est;
  }

  // -1: no resource (empty, or a plain receive); else 3 rank (egress port within the
  // node), 3 rank + 1 (CPU), 3 rank + 2 (egress port to other nodes: the NIC).
  int resourceOf(const Node& n) const {
    if (n.count == 0 || ownCost(n) == 0) return -1;
    if (n.kind != StepKind::Send || selfMessage(n)) return 3 * n.rank + 1;
    return 3 * n.rank + (crossesNodes(n) ? 2 : 0);
  }

  void schedule(Node& n) {
    const int resource = resourceOf(n);
    n.start = n.earliestStart;
    if (resource < 0) {
      n.finish = std::max(n.earliestFinish, n.start);
      return;
    }
    const double cost = ownCost(n);
    const double start = std::max(n.earliestStart, free_[resource]);
    free_[resource] = start + cost;
    n.finish = std::max(n.earliestFinish, start + cost);
    if (resource % 3 != 1) {
      // The sender's port is held; the receiver's port drains what arrives in order, so
      // a busy receiver delays when the bytes are through, not when the sender is free.
      n.start = start;
      double& ingress = ingressFree_[2 * n.peer + (crossesNodes(n) ? 1 : 0)];
      ingress = std::max(ingress, start) + cost;
      n.finish = std::max(n.finish, ingress);
    }
  }

  const int nranks_;
  const size_t elementSize_;
  const LinkModel link_;
  const LinkModel inter_;  // between nodes (= link_ without a layout)
  const Layout* layout_;   // nullptr: one link class
  const double sliceBytes_;
  std::vector<Node> nodes_;
  std::vector<SendRef> sends_;
  std::vector<size_t> sendBegin_;
  std::vector<int> lastSend_, lastRecv_, sendSeq_, recvSeq_;
  std::vector<bool> seen_;
  std::vector<size_t> depBegin_;
  std::vector<int> dependents_;
  using Entry = std::pair<double, int>;  // (time, step), or (time, -1 - resource): a wake
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> events_;
  std::vector<double> free_, ingressFree_;
};

struct CacheKey {
  const Algorithm* algorithm;
  Collective collective;
  int nranks;
  size_t count, elementSize;
  LinkModel link, inter;
  uint64_t layout;
  auto tie() const {
    auto fields = [](const LinkModel& m) {
      return std::tie(m.latencyUs, m.bytesPerUs, m.reduceBytesPerUs, m.copyBytesPerUs,
                      m.overheadUs);
    };
    return std::tuple_cat(std::tie(algorithm, collective, nranks, count, elementSize, layout),
                          fields(link), fields(inter));
  }
  bool operator<(const CacheKey& o) const { return tie() < o.tie(); }
};

std::mutex cacheMutex;
std::map<CacheKey, double> cache;
constexpr size_t kCacheEntries = 1 << 14;

std::string formatMicros(double us) {
  char text[32];
  if (us == kInfinity) return "deadlock";
  if (us < 1e4)
    std::snprintf(text, sizeof(text), "%.1f", us);
  else
    std::snprintf(text, sizeof(text), "%.0f", us);
  return text;
}

std::string formatBytes(size_t bytes) {
  char text[32];
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0)
    std::snprintf(text, sizeof(text), "%zu MiB", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(text, sizeof(text), "%zu KiB", bytes >> 10);
  else
    std::snprintf(text, sizeof(text), "%zu B", bytes);
  return text;
}

}  // namespace

ReplayResult replaySchedules(std::span<const Schedule> schedules, size_t elementSize,
                             const LinkModel& link, size_t sliceBytes) {
  Replay replay(static_cast<int>(schedules.size()), elementSize, link, sliceBytes);
  for (const Schedule& s : schedules) replay.addRank(s);
  return replay.run();
}

double predictMicros(const Algorithm& algorithm, Collective collective, int nranks, size_t count,
                     size_t elementSize, const LinkModel& link, const Layout* layout,
                     const LinkModel* inter) {
  if (layout && layout->nranks() != nranks) layout = nullptr;
  if (nranks < 1) return kInfinity;
  const double bytes = static_cast<double>(count * elementSize);
  if (collective == Collective::Send || collective == Collective::Recv)
    return count == 0 ? 0 : link.latencyUs + 2 * link.overheadUs + bytes / link.bytesPerUs;
  const CacheKey key{&algorithm,
                     collective,
                     nranks,
                     count,
                     elementSize,
                     link,
                     inter ? *inter : link,
                     layout ? layout->fingerprint() : 0};
  {
    std::lock_guard lock(cacheMutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  Replay replay(nranks, elementSize, link, kPipelineSliceBytes, layout, inter);
  for (int r = 0; r < nranks; ++r)
    replay.addRank(algorithm.build({collective, r, nranks, count, 0, layout}));
  const double micros = replay.run().micros;
  std::lock_guard lock(cacheMutex);
  if (cache.size() >= kCacheEntries) cache.clear();
  cache.emplace(key, micros);
  return micros;
}

std::vector<Prediction> rankAlgorithms(Collective collective, int nranks, size_t count,
                                       size_t elementSize, const LinkModel& link,
                                       const Layout* layout, const LinkModel* inter) {
  std::vector<Prediction> ranked;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == collective)
      ranked.push_back(
          {&a, predictMicros(a, collective, nranks, count, elementSize, link, layout, inter)});
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Prediction& a, const Prediction& b) { return a.micros < b.micros; });
  return ranked;
}

std::vector<size_t> defaultExplainSizes() {
  std::vector<size_t> sizes;
  for (size_t b = 8; b <= (64u << 20); b *= 4) sizes.push_back(b);
  sizes.push_back(64u << 20);
  return sizes;
}

std::string explainTable(Collective collective, int nranks, const LinkModel& link,
                         std::span<const size_t> sizes, size_t elementSize) {
  std::vector<const Algorithm*> columns;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == collective) columns.push_back(&a);
  char line[256];
  std::snprintf(line, sizeof(line),
                "# %s, %d ranks, link %.1f us %.2f GB/s, reduce %.1f GB/s, copy %.1f GB/s: "
                "predicted us, * = best\n",
                toString(collective), nranks, link.latencyUs, link.bytesPerUs / 1000,
                link.reduceBytesPerUs / 1000, link.copyBytesPerUs / 1000);
  std::string text = line;
  std::snprintf(line, sizeof(line), "%12s", "size");
  text += line;
  for (const Algorithm* a : columns) {
    std::snprintf(line, sizeof(line), " %12s", a->name);
    text += line;
  }
  text += "  best\n";
  for (size_t bytes : sizes) {
    const size_t count = elementSize ? bytes / elementSize : 0;
    std::vector<double> times;
    size_t best = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      times.push_back(predictMicros(*columns[i], collective, nranks, count, elementSize, link));
      if (times[i] < times[best]) best = i;
    }
    std::snprintf(line, sizeof(line), "%12s", formatBytes(count * elementSize).c_str());
    text += line;
    for (size_t i = 0; i < columns.size(); ++i) {
      std::snprintf(line, sizeof(line), " %11s%c", formatMicros(times[i]).c_str(),
                    i == best ? '*' : ' ');
      text += line;
    }
    text += "  ";
    text += columns.empty() ? "-" : columns[best]->name;
    text += '\n';
  }
  return text;
}

std::string explainTable(Collective collective, int nranks, const LinkModel& link) {
  const std::vector<size_t> sizes = defaultExplainSizes();
  return explainTable(collective, nranks, link, sizes);
}

std::string explainChoice(Collective collective, int nranks, size_t count, size_t elementSize,
                          const LinkModel& link) {
  std::string text = std::string(toString(collective)) + " " + std::to_string(nranks) + " ranks " +
                     std::to_string(count * elementSize) + " B:";
  bool first = true;
  for (const Prediction& p : rankAlgorithms(collective, nranks, count, elementSize, link)) {
    text += first ? " " : ", ";
    text += std::string(p.algorithm->name) + " " + formatMicros(p.micros) + " us";
    if (first) text += " (best predicted)";
    first = false;
  }
  return text;
}

}  // namespace chorus
