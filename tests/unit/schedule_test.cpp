// Executes every rank's Schedule symbolically (no transport, no data) and proves that
// each output element holds exactly the right contributions, each exactly once, reduced
// to completion exactly once (finalize), and that no schedule writes its input.
//
// The executor follows the engine's rules, not a friendlier model: steps to or from one
// peer run in issue order; a step waits for its `after` element by element when both
// have the same element count and for its completion otherwise; empty steps complete at
// once (they order nothing). Sends are put off as long as anything else can run and, for
// small p, move one element at a time, so a step that overwrites data before it is sent,
// or reads data before it is produced, shows up as a wrong result. Optionally one rank
// (`late`) sends only when nothing else can move: a rank that arrives late, so that data
// meant for it is delayed while its peers' data reaches it.
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace chorus {
namespace {

// What an element holds: the set of ranks whose input went into it, as sorted disjoint
// [lo, hi) intervals (a second contribution of any rank is an error, not a count), the
// element index of the inputs it came from (-1: nothing yet, -2: mixed indices), and
// whether its last reduction (finalize) has happened. Up to kInline intervals live in
// the value itself (no allocation per element: ring-like sets are contiguous modulo p);
// strided sets (recursive halving combines the top bit first) spill to the heap.
constexpr int kInline = 4;
using Interval = std::pair<int, int>;
struct Value {
  std::array<Interval, kInline> inline_{};
  std::vector<Interval> spill;  // used instead of inline_ when more than kInline
  int intervals = 0;
  int64_t index = -1;
  bool finalized = false;
  Value() = default;
  Value(int lo, int hi, int64_t i, bool f) : intervals(1), index(i), finalized(f) {
    inline_[0] = {lo, hi};
  }
  const Interval* ranks() const { return intervals > kInline ? spill.data() : inline_.data(); }
  void assign(const std::vector<Interval>& set) {
    intervals = static_cast<int>(set.size());
    if (intervals > kInline) {
      spill = set;
    } else {
      spill.clear();
      std::copy(set.begin(), set.end(), inline_.begin());
    }
  }
  bool operator==(const Value& o) const {
    return intervals == o.intervals && index == o.index && finalized == o.finalized &&
           std::equal(ranks(), ranks() + intervals, o.ranks());
  }
};

std::string describe(const Value& v) {
  std::string text = "{";
  for (int i = 0; i < v.intervals; ++i)
    text +=
        "[" + std::to_string(v.ranks()[i].first) + "," + std::to_string(v.ranks()[i].second) + ")";
  return text + "} index " + std::to_string(v.index) + (v.finalized ? " finalized" : "");
}

// into = into OP other; false when a rank would contribute twice.
bool fold(Value& into, const Value& other) {
  static thread_local std::vector<Interval> merged;
  merged.clear();
  const Interval *x = into.ranks(), *y = other.ranks();
  int a = 0, b = 0;
  while (a < into.intervals || b < other.intervals) {
    bool takeA = b == other.intervals || (a < into.intervals && x[a].first < y[b].first);
    Interval next = takeA ? x[a++] : y[b++];
    if (!merged.empty() && next.first < merged.back().second) return false;  // overlap
    if (!merged.empty() && next.first == merged.back().second) {
      merged.back().second = next.second;
    } else {
      merged.push_back(next);
    }
  }
  into.assign(merged);
  if (into.index != other.index) into.index = -2;
  return true;
}

struct RankState {
  // In-place runs alias input and output as NCCL does, so both point into `store`.
  std::vector<Value> store, outStore, scratch;
  Value* input = nullptr;
  Value* output = nullptr;
  size_t inputCount = 0, outputCount = 0;
  Schedule schedule;
  std::vector<size_t> progress;  // elements handled per step
  std::vector<bool> done;
  // Per peer, the send and receive steps in issue order, and the first not done.
  std::map<int, std::pair<std::vector<int>, size_t>> sends, recvs;
  std::vector<int> local;
};

size_t elements(const Step& s) { return s.kind == StepKind::Send ? s.src.count : s.dst.count; }

struct Message {
  std::vector<Value> data;  // what the sender has streamed so far
  size_t total;
};

class SymbolicRun {
 public:
  SymbolicRun(const Algorithm& algorithm, int nranks, size_t count, int root, bool inPlace,
              size_t sendGrain, int late = -1, const Layout* layout = nullptr)
      : nranks_(nranks), sendGrain_(sendGrain), late_(late), ranks_(nranks) {
    const bool gathers = algorithm.collective == Collective::AllGather;
    const bool scatters = algorithm.collective == Collective::ReduceScatter;
    const bool exchanges = algorithm.collective == Collective::AllToAll;  // n blocks each way
    for (int r = 0; r < nranks; ++r) {
      RankState& s = ranks_[r];
      s.schedule = algorithm.build({algorithm.collective, r, nranks, count, root, layout});
      s.done.assign(s.schedule.steps.size(), false);
      s.progress.assign(s.schedule.steps.size(), 0);
      for (int i = 0; i < static_cast<int>(s.schedule.steps.size()); ++i) {
        const Step& step = s.schedule.steps[i];
        if (step.kind == StepKind::Copy || step.kind == StepKind::Reduce)
          s.local.push_back(i);
        else
          (step.kind == StepKind::Send ? s.sends : s.recvs)[step.peer].first.push_back(i);
      }
      s.inputCount = scatters || exchanges ? count * nranks : count;
      s.outputCount = gathers || exchanges ? count * nranks : count;
      s.store.assign(std::max(s.inputCount, s.outputCount), Value{});
      if (!inPlace) s.outStore.assign(s.outputCount, Value{});
      s.output = inPlace ? s.store.data() : s.outStore.data();
      s.input = s.store.data();
      if (inPlace && gathers) s.input += r * count;    // send == recv + rank * count
      if (inPlace && scatters) s.output += r * count;  // recv == send + rank * count
      for (size_t i = 0; i < s.inputCount; ++i) s.input[i] = Value(r, r + 1, int64_t(i), false);
      s.scratch.assign(s.schedule.scratchCount, Value{});
    }
  }

  // Runs until every step is done; returns an error text or "".
  std::string run() {
    for (;;) {
      bool moved = false;
      for (int phase : {0, 1, 2}) {
        // Sends move one grain per link per round; everything else runs to a standstill.
        // The late rank's sends (phase 2) move only when nothing else can.
        const bool sends = phase > 0;
        for (int r = 0; r < nranks_; ++r) {
          if (sends && (r == late_) != (phase == 2)) continue;
          if (sends) {
            moved |= advanceRank(r, true);
          } else {
            while (advanceRank(r, false)) moved = true;
          }
          if (!error_.empty()) return "rank " + std::to_string(r) + ": " + error_;
        }
        if (moved) break;
      }
      if (!moved) break;
    }
    for (int r = 0; r < nranks_; ++r)
      for (size_t i = 0; i < ranks_[r].done.size(); ++i)
        if (!ranks_[r].done[i])
          return "rank " + std::to_string(r) + " stuck at step " + std::to_string(i);
    for (auto& [link, queue] : links_)
      if (!queue.empty()) return "unreceived message on a link";
    return "";
  }

  const RankState& rank(int r) const { return ranks_[r]; }

 private:
  Value* buffer(RankState& s, Buffer b) {
    return b == Buffer::Input ? s.input : b == Buffer::Output ? s.output : s.scratch.data();
  }

  bool inRange(RankState& s, const Range& range) {
    size_t size = range.buffer == Buffer::Input    ? s.inputCount
                  : range.buffer == Buffer::Output ? s.outputCount
                                                   : s.scratch.size();
    return range.offset + range.count <= size;
  }

  // How many elements of step i its `after` allows, as the engine computes it.
  size_t allowed(const RankState& s, int i) {
    const Step& step = s.schedule.steps[i];
    if (step.after < 0 || s.done[step.after]) return elements(step);
    if (step.after >= i) {
      error_ = "step " + std::to_string(i) + " waits for a later step";
      return 0;
    }
    const Step& producer = s.schedule.steps[step.after];
    return elements(producer) == elements(step) ? s.progress[step.after] : 0;
  }

  bool check(RankState& s, int i) {
    const Step& step = s.schedule.steps[i];
    const bool local = step.kind == StepKind::Copy || step.kind == StepKind::Reduce;
    if (!local && (step.peer < 0 || step.peer >= nranks_ || step.peer == &s - ranks_.data())) {
      error_ = "bad peer at step " + std::to_string(i);
      return false;
    }
    if ((step.kind != StepKind::Recv && !inRange(s, step.src)) ||
        (step.kind != StepKind::Send && !inRange(s, step.dst))) {
      error_ = "range out of bounds at step " + std::to_string(i);
      return false;
    }
    if (step.kind != StepKind::Send && step.dst.buffer == Buffer::Input) {
      error_ = "writes its input at step " + std::to_string(i);
      return false;
    }
    if ((step.kind == StepKind::Copy || step.kind == StepKind::Reduce ||
         step.kind == StepKind::RecvReduce) &&
        step.src.count != step.dst.count) {
      error_ = "source and destination differ in size at step " + std::to_string(i);
      return false;
    }
    return true;
  }

  // Writes v into element k of step i's destination, finalizing it if the step says so.
  void store(RankState& s, const Step& step, size_t k, Value v) {
    if (step.finalize) {
      if (v.finalized) error_ = "an element finalized twice";
      if (v.intervals != 1 || v.ranks()[0] != Interval{0, nranks_})
        error_ = "finalized before all contributions: " + describe(v);
      v.finalized = true;
    }
    buffer(s, step.dst.buffer)[step.dst.offset + k] = std::move(v);
  }

  Value combine(const Step& step, Value a, const Value& b) {
    if (a.finalized || b.finalized) error_ = "folds a finalized element";
    Value before = a;
    if (!fold(a, b)) error_ = "a rank contributes twice: " + describe(before) + " + " + describe(b);
    (void)step;
    return a;
  }

  // Advances step i as far as it can; true when it moved or completed.
  bool advance(int r, int i, bool sends) {
    RankState& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    if ((step.kind == StepKind::Send) != sends || !check(s, i)) return false;
    const size_t total = elements(step);
    if (total == 0) {  // empty steps complete at once
      s.done[i] = true;
      return true;
    }
    const size_t limit = allowed(s, i), from = s.progress[i];
    if (limit <= from) return false;
    Value* src = buffer(s, step.src.buffer);
    size_t to = limit;
    switch (step.kind) {
      case StepKind::Send: {
        auto& queue = links_[{r, step.peer}];
        if (from == 0) queue.push_back({{}, total});
        Message& message = queue.back();
        to = from + std::min(limit - from, sendGrain_);
        for (size_t k = from; k < to; ++k) message.data.push_back(src[step.src.offset + k]);
        break;
      }
      case StepKind::Copy:
        for (size_t k = from; k < to; ++k) store(s, step, k, src[step.src.offset + k]);
        break;
      case StepKind::Reduce: {
        Value* dst = buffer(s, step.dst.buffer);
        for (size_t k = from; k < to; ++k)
          store(s, step, k, combine(step, dst[step.dst.offset + k], src[step.src.offset + k]));
        break;
      }
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        auto& queue = links_[{step.peer, r}];
        if (queue.empty()) return false;  // the peer has not started sending
        Message& message = queue.front();
        if (message.total != total) {
          error_ = "message of " + std::to_string(message.total) + " elements into a step of " +
                   std::to_string(total);
          return false;
        }
        to = std::min(limit, message.data.size());
        if (to <= from) return false;
        for (size_t k = from; k < to; ++k) {
          Value v = message.data[k];
          if (step.kind == StepKind::RecvReduce) v = combine(step, src[step.src.offset + k], v);
          store(s, step, k, std::move(v));
        }
        if (to == total) queue.pop_front();
        break;
      }
    }
    s.progress[i] = to;
    if (to == total) s.done[i] = true;
    return true;
  }

  // One pass over the steps rank r may run now (sends or the others); true if any moved.
  bool advanceRank(int r, bool sends) {
    RankState& s = ranks_[r];
    bool moved = false;
    if (!sends) {
      for (size_t j = 0; j < s.local.size();) {
        moved |= advance(r, s.local[j], false);
        if (s.done[s.local[j]]) {
          s.local[j] = s.local.back();
          s.local.pop_back();
        } else {
          ++j;
        }
      }
    }
    for (auto& [peer, queue] : sends ? s.sends : s.recvs) {
      auto& [order, head] = queue;
      while (head < order.size()) {
        moved |= advance(r, order[head], sends);
        if (!s.done[order[head]]) break;
        ++head;
        if (sends) break;  // one grain per round
      }
    }
    return moved;
  }

  int nranks_;
  size_t sendGrain_;
  int late_;
  std::vector<RankState> ranks_;
  std::map<std::pair<int, int>, std::deque<Message>> links_;
  std::string error_;
};

Value expectAll(int nranks, int64_t index) { return Value(0, nranks, index, true); }
Value expectOne(int from, int64_t index) { return Value(from, from + 1, index, false); }

void checkCollective(const Algorithm& algorithm, int nranks, size_t count, int root, bool inPlace,
                     size_t sendGrain, int late = -1, const Layout* layout = nullptr) {
  SymbolicRun run(algorithm, nranks, count, root, inPlace, sendGrain, late, layout);
  std::string error = run.run();
  ASSERT_EQ(error, "") << toString(algorithm.collective) << "/" << algorithm.name << " p=" << nranks
                       << " count=" << count << " root=" << root << " in-place=" << inPlace
                       << " late=" << late << (layout ? " (with a layout)" : "");
  for (int r = 0; r < nranks; ++r) {
    const Value* out = run.rank(r).output;
    for (size_t i = 0; i < run.rank(r).outputCount; ++i) {
      std::optional<Value> want;
      switch (algorithm.collective) {
        case Collective::AllReduce:
          want = expectAll(nranks, i);
          break;
        case Collective::AllGather:
          want = expectOne(i / count, i % count);
          break;
        case Collective::ReduceScatter:
          want = expectAll(nranks, r * count + i);
          break;
        case Collective::Broadcast:
          want = expectOne(root, i);
          break;
        case Collective::Reduce:
          if (r == root) want = expectAll(nranks, i);
          break;
        case Collective::AllToAll:  // block j holds block r of rank j's input
          want = expectOne(i / count, r * count + i % count);
          break;
        default:
          break;
      }
      if (want && !(out[i] == *want)) {
        FAIL() << toString(algorithm.collective) << "/" << algorithm.name << " p=" << nranks
               << " count=" << count << " root=" << root << " in-place=" << inPlace
               << " late=" << late << " rank=" << r << " element=" << i << ": got "
               << describe(out[i]) << ", want " << describe(*want);
      }
    }
  }
}

// Hierarchical algorithms are the flat ring without a layout: they get their own test.
bool collectiveAlgorithm(const Algorithm& a) {
  return a.collective != Collective::Send && a.collective != Collective::Recv &&
         !std::string_view(a.name).starts_with("hier");
}

TEST(Schedule, RingOrderCrossesEachNodeBoundaryOnce) {
  const Layout layout = Layout::uniform(3, 4, /*interleaved=*/true);  // rank r on node r % 3
  int crossings = 0;
  for (int p = 0; p < layout.nranks(); ++p)
    crossings += !layout.sameNode(layout.ringRank(p), layout.ringRank((p + 1) % layout.nranks()));
  EXPECT_EQ(crossings, 3);
  for (int r = 0; r < layout.nranks(); ++r) EXPECT_EQ(layout.ringRank(layout.ringPosition(r)), r);
}

TEST(Schedule, HierarchicalIsExactOnEveryLayout) {
  // N nodes x L ranks, ranks numbered by node (block) or round robin (interleaved), and
  // layouts with unequal nodes (the flat fallback); sends one element at a time.
  std::vector<Layout> layouts;
  for (int nodes = 1; nodes <= 5; ++nodes)
    for (int perNode = 1; perNode <= 4; ++perNode)
      for (bool interleaved : {false, true})
        layouts.push_back(Layout::uniform(nodes, perNode, interleaved));
  std::vector<std::string> hosts = {"a", "a", "b", "a", "c", "c"};  // 3 + 1 + 2
  layouts.emplace_back(hosts);
  // Also the rings, which follow the layout's order (each node boundary crossed once).
  for (const Algorithm& algorithm : allAlgorithms()) {
    const std::string_view name = algorithm.name;
    const bool ring = name == "ring" && (algorithm.collective == Collective::AllReduce ||
                                         algorithm.collective == Collective::AllGather ||
                                         algorithm.collective == Collective::ReduceScatter);
    if (!name.starts_with("hier") && !ring) continue;
    for (const Layout& layout : layouts) {
      const int p = layout.nranks();
      for (size_t count : {size_t{0}, size_t{1}, size_t(p - 1), size_t(p + 3), size_t{64}})
        for (bool inPlace : {false, true}) {
          checkCollective(algorithm, p, count, 0, inPlace, 1, -1, &layout);
          if (HasFatalFailure()) return;
          checkCollective(algorithm, p, count, 0, inPlace, 1, p / 2, &layout);
          if (HasFatalFailure()) return;
        }
    }
  }
}

// The executor's work: elements all steps of all ranks touch, plus steps times the links
// each rank scans per round; to keep the sweep in seconds.
size_t work(const Algorithm& algorithm, int nranks, size_t count) {
  size_t total = 0;
  for (int r = 0; r < nranks; ++r) {
    std::vector<int> peers;
    Schedule s = algorithm.build({algorithm.collective, r, nranks, count, 0});
    for (const Step& step : s.steps) {
      total += elements(step) + 1;
      if (step.peer >= 0) peers.push_back(step.peer);
    }
    std::sort(peers.begin(), peers.end());
    total += s.steps.size() *
             static_cast<size_t>(std::unique(peers.begin(), peers.end()) - peers.begin());
  }
  return total;
}

TEST(Schedule, EveryCollectiveAlgorithmIsExactForSmallRankCounts) {
  // Every p up to 64, uneven counts, three roots, in-place and not; up to p = 9 sends
  // move one element at a time so pipelining hazards show.
  for (const Algorithm& algorithm : allAlgorithms()) {
    if (!collectiveAlgorithm(algorithm)) continue;
    for (int nranks = 1; nranks <= 64; ++nranks) {
      std::vector<size_t> counts = {0, 1, size_t(nranks - 1), size_t(nranks + 3)};
      if (nranks <= 16) counts.insert(counts.end(), {2, 5, 64});
      for (size_t count : counts) {
        std::vector<int> roots = {0};
        if (algorithm.collective == Collective::Broadcast ||
            algorithm.collective == Collective::Reduce)
          roots = {0, nranks - 1, nranks / 2};
        for (int root : roots) {
          for (bool inPlace : {false, true}) {
            checkCollective(algorithm, nranks, count, root, inPlace, nranks <= 9 ? 1 : SIZE_MAX);
            if (HasFatalFailure()) return;
            if (nranks > 9 || !inPlace) continue;
            checkCollective(algorithm, nranks, count, root, inPlace, 1, /*late=*/nranks / 2);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST(Schedule, EveryCollectiveAlgorithmIsExactForLargeRankCounts) {
  // A sample of p up to 1024; a case whose total work is too large for a unit test
  // (quadratic algorithms at large counts) is skipped and counted.
  const size_t budget = 600'000;
  int run = 0, skipped = 0;
  for (const Algorithm& algorithm : allAlgorithms()) {
    if (!collectiveAlgorithm(algorithm)) continue;
    for (int nranks : {65, 100, 127, 128, 129, 255, 256, 257, 1000, 1023, 1024}) {
      for (size_t count : {size_t(0), size_t(1), size_t(nranks - 1), size_t(nranks + 3)}) {
        if (work(algorithm, nranks, count) > budget) {
          if (std::getenv("CHORUS_SCHEDULE_TIMES"))
            std::printf("skipped %s/%s p=%d count=%zu\n", toString(algorithm.collective),
                        algorithm.name, nranks, count);
          ++skipped;
          continue;
        }
        const int root = nranks / 3;
        auto t0 = std::chrono::steady_clock::now();
        for (bool inPlace : {false, true}) {
          checkCollective(algorithm, nranks, count, root, inPlace, SIZE_MAX);
          if (HasFatalFailure()) return;
        }
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count();
        if (std::getenv("CHORUS_SCHEDULE_TIMES") && ms > 100)
          std::printf("%s/%s p=%d count=%zu: %.0f ms\n", toString(algorithm.collective),
                      algorithm.name, nranks, count, ms);
        ++run;
      }
    }
  }
  std::printf("large rank counts: %d cases run, %d over the work budget skipped\n", run, skipped);
}

// A deliberately broken schedule must fail: the checker is only as good as that.
Schedule brokenRdAllReduce(const CollectiveArgs& args) {
  Schedule s = rdAllReduce(args);
  for (Step& step : s.steps) step.after = -1;  // drop every ordering: in-place hazards
  return s;
}
Schedule doubleCountingAllReduce(const CollectiveArgs& args) {
  Schedule s = ringAllReduce(args);
  if (args.nranks > 1 && args.count > 0) {  // fold the own input in once more at the end
    s.steps.push_back({StepKind::Reduce,
                       -1,
                       {Buffer::Input, 0, 1},
                       {Buffer::Output, 0, 1},
                       static_cast<int>(s.steps.size()) - 1,
                       false});
  }
  return s;
}

Schedule unorderedAllToAll(const CollectiveArgs& args) {
  Schedule s = pairwiseAllToAll(args);
  for (Step& step : s.steps) step.after = -1;  // receives may overwrite unsent blocks
  return s;
}

TEST(Schedule, TheCheckerCatchesAnAllToAllThatOverwritesBeforeSending) {
  const Algorithm broken{"unordered", Collective::AllToAll, unorderedAllToAll, ""};
  bool caught = false;
  for (int nranks : {2, 3, 4, 5}) {
    const size_t count = 3;
    SymbolicRun run(broken, nranks, count, 0, /*inPlace=*/true, 1, /*late=*/0);
    bool wrong = !run.run().empty();
    for (int r = 0; r < nranks && !wrong; ++r)
      for (size_t i = 0; i < count * nranks; ++i)
        wrong |= !(run.rank(r).output[i] == expectOne(int(i / count), r * count + i % count));
    caught |= wrong;
  }
  EXPECT_TRUE(caught);
}

TEST(Schedule, TheCheckerCatchesBrokenSchedules) {
  for (auto [name, build, inPlace] : {std::tuple{"no ordering", &brokenRdAllReduce, true},
                                      std::tuple{"double", &doubleCountingAllReduce, false}}) {
    const Algorithm broken{name, Collective::AllReduce, build, ""};
    bool caught = false;
    for (int nranks : {2, 3, 4, 5, 8}) {
      SymbolicRun run(broken, nranks, 7, 0, inPlace, 1);
      std::string error = run.run();
      bool wrong = !error.empty();
      for (int r = 0; r < nranks && !wrong; ++r)
        for (size_t i = 0; i < 7; ++i) wrong |= !(run.rank(r).output[i] == expectAll(nranks, i));
      caught |= wrong;
    }
    EXPECT_TRUE(caught) << name;
  }
}

// The most messages and the most elements any rank sends (not always the same rank).
struct Cost {
  size_t messages = 0, elements = 0;
};
Cost busiest(const Algorithm& algorithm, int nranks, size_t count, int root = 0) {
  Cost worst;
  for (int r = 0; r < nranks; ++r) {
    Cost c;
    for (const Step& s : algorithm.build({algorithm.collective, r, nranks, count, root}).steps)
      if (s.kind == StepKind::Send) ++c.messages, c.elements += s.src.count;
    worst.messages = std::max(worst.messages, c.messages);
    worst.elements = std::max(worst.elements, c.elements);
  }
  return worst;
}

int log2Floor(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}
int log2Ceil(int n) { return n <= 1 ? 0 : log2Floor(n - 1) + 1; }

TEST(Schedule, StepsAndBytesMatchTheFormulas) {
  const size_t count = 1 << 20;
  for (int n : {2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 24, 64, 100}) {
    const int pof2 = 1 << log2Floor(n), extra = n - pof2, lg = log2Floor(n);
    auto find = [](Collective c, const char* name) { return *findAlgorithm(c, name); };
    // rd all-reduce: log2 p' exchanges of the whole vector, + 1 for a paired rank.
    Cost rd = busiest(find(Collective::AllReduce, "rd"), n, count);
    EXPECT_EQ(rd.messages, size_t(lg + (extra ? 1 : 0))) << n;
    EXPECT_EQ(rd.elements, count * (lg + (extra ? 1 : 0))) << n;
    // rhd all-reduce: 2 log2 p' messages of about 2 (p'-1)/p' count, + count when paired.
    Cost rhd = busiest(find(Collective::AllReduce, "rhd"), n, count);
    EXPECT_EQ(rhd.messages, size_t(2 * lg + (extra ? 1 : 0))) << n;
    const double ideal = 2.0 * (pof2 - 1) / pof2 * count + (extra ? count : 0);
    EXPECT_NEAR(double(rhd.elements), ideal, 2.0 * lg + 2) << n;
    // Bruck: ceil(log2 p) rounds of at most two messages, (p-1) blocks in all.
    const size_t m = 1000;
    Cost bruck = busiest(find(Collective::AllGather, "bruck"), n, m);
    EXPECT_EQ(bruck.elements, m * (n - 1)) << n;
    EXPECT_GE(bruck.messages, size_t(log2Ceil(n)));
    EXPECT_LE(bruck.messages, size_t(2 * log2Ceil(n)));
    if (n == pof2) EXPECT_EQ(busiest(find(Collective::AllGather, "rd"), n, m).messages, size_t(lg));
    // Recursive halving reduce-scatter: (p'-1)/p' of the input (+ all of it when paired).
    Cost rh = busiest(find(Collective::ReduceScatter, "rhd"), n, m);
    EXPECT_EQ(rh.messages, size_t(lg + (extra ? 1 : 0))) << n;
    // Binomial broadcast: the root sends the vector ceil(log2 p) times.
    Cost tree = busiest(find(Collective::Broadcast, "tree"), n, count);
    EXPECT_EQ(tree.messages, size_t(log2Ceil(n))) << n;
    EXPECT_EQ(tree.elements, count * log2Ceil(n)) << n;
    // Scatter + all-gather: the root sends about 2 (p-1)/p of the vector.
    Cost sag = busiest(find(Collective::Broadcast, "scatter_allgather"), n, count);
    EXPECT_NEAR(double(sag.elements), 2.0 * (n - 1) / n * count, 2.0 * n) << n;
    // Tree reduce: every non-root rank sends the vector once.
    EXPECT_EQ(busiest(find(Collective::Reduce, "tree"), n, count).elements, count) << n;
    // Pairwise all-to-all: n-1 messages of one block each.
    Cost pairwise = busiest(find(Collective::AllToAll, "pairwise"), n, m);
    EXPECT_EQ(pairwise.messages, size_t(n - 1)) << n;
    EXPECT_EQ(pairwise.elements, m * (n - 1)) << n;
    // rsg: (p-1)/p in the ring plus 1/p to the root.
    EXPECT_NEAR(double(busiest(find(Collective::Reduce, "rsg"), n, count).elements), double(count),
                n)
        << n;
  }
}

// `CHORUS_SCHEDULE_TABLE=1 chorus_unit_tests --gtest_filter=*Table*` prints the table in
// docs/algorithms.md: messages and elements sent by the busiest rank.
TEST(Schedule, Table) {
  if (!std::getenv("CHORUS_SCHEDULE_TABLE")) GTEST_SKIP() << "set CHORUS_SCHEDULE_TABLE=1";
  const size_t count = 1 << 20;
  for (const Algorithm& a : allAlgorithms()) {
    if (!collectiveAlgorithm(a)) continue;
    std::printf("| %s | %s |", toString(a.collective), a.name);
    for (int n : {2, 3, 4, 8, 9, 16, 64}) {
      Cost c = busiest(a, n, count);
      size_t base = a.collective == Collective::AllGather ||
                            a.collective == Collective::ReduceScatter ||
                            a.collective == Collective::AllToAll
                        ? count * n
                        : count;
      std::printf(" %zu / %.2f |", c.messages, double(c.elements) / double(base));
    }
    std::printf("\n");
  }
}

TEST(Schedule, PartitionCoversTheBufferOnce) {
  for (size_t count : {0, 1, 7, 100, 1023}) {
    for (int parts : {1, 2, 3, 7, 9, 64}) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        Part p = partOf(count, parts, i);
        EXPECT_EQ(p.begin, next);
        next += p.size;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(Schedule, RingAllReduceMovesTwoShardsPerStep) {
  // 2(n-1) sends of about count/n elements each: the bandwidth-optimal volume.
  const int n = 8;
  const size_t count = 8000;
  Schedule s = ringAllReduce({Collective::AllReduce, 3, n, count, 0});
  size_t sent = 0, sends = 0;
  for (const Step& step : s.steps)
    if (step.kind == StepKind::Send) sent += step.src.count, ++sends;
  EXPECT_EQ(sends, 2u * (n - 1));
  EXPECT_EQ(sent, 2 * (n - 1) * count / n);
}

}  // namespace
}  // namespace chorus
