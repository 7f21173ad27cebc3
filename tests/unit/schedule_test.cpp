// Executes every rank's Schedule symbolically (no transport, no data) and proves that
// each output element holds exactly the right contributions, each exactly once, and that
// no schedule writes its input.
#include "algorithms/algorithms.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace chorus {
namespace {

// What an element holds: how many times each rank's input went into it, and which
// element index of the inputs it came from (-1: nothing yet, -2: mixed indices).
struct Value {
  std::vector<uint16_t> contributions;
  int64_t index = -1;
  bool operator==(const Value&) const = default;
};

struct RankState {
  // In-place runs alias input and output as NCCL does, so both point into `store`.
  std::vector<Value> store, outStore, scratch;
  Value* input = nullptr;
  Value* output = nullptr;
  size_t inputCount = 0, outputCount = 0;
  Schedule schedule;
  std::vector<bool> done;
};

Value initial(int nranks, int rank, int64_t index) {
  Value v{std::vector<uint16_t>(nranks, 0), index};
  v.contributions[rank] = 1;
  return v;
}

class SymbolicRun {
 public:
  SymbolicRun(const Algorithm& algorithm, int nranks, size_t count, int root, bool inPlace)
      : nranks_(nranks), ranks_(nranks) {
    const bool gathers = algorithm.collective == Collective::AllGather;
    const bool scatters = algorithm.collective == Collective::ReduceScatter;
    const Value empty{std::vector<uint16_t>(nranks, 0), -1};
    for (int r = 0; r < nranks; ++r) {
      RankState& s = ranks_[r];
      s.schedule = algorithm.build({algorithm.collective, r, nranks, count, root});
      s.done.assign(s.schedule.steps.size(), false);
      s.inputCount = scatters ? count * nranks : count;
      s.outputCount = gathers ? count * nranks : count;
      s.store.assign(std::max(s.inputCount, s.outputCount), empty);
      if (!inPlace) s.outStore.assign(s.outputCount, empty);
      s.output = inPlace ? s.store.data() : s.outStore.data();
      s.input = s.store.data();
      if (inPlace && gathers) s.input += r * count;   // send == recv + rank * count
      if (inPlace && scatters) s.output += r * count;  // recv == send + rank * count
      for (size_t i = 0; i < s.inputCount; ++i) s.input[i] = initial(nranks, r, i);
      s.scratch.assign(s.schedule.scratchCount, empty);
    }
  }

  // Runs until every step is done; returns an error text or "". Sends are put off as
  // long as anything else can run (as when a FIFO is full), so a step that overwrites
  // data before it has been sent shows up as a wrong result.
  std::string run() {
    bool moved = true;
    while (moved) {
      moved = false;
      for (bool sends : {false, true}) {
        for (int r = 0; r < nranks_ && !moved; ++r) {
          std::string error;
          while (stepOnce(r, sends, error)) moved = true;
          if (!error.empty()) return "rank " + std::to_string(r) + ": " + error;
        }
        if (moved) break;
      }
    }
    for (int r = 0; r < nranks_; ++r)
      for (size_t i = 0; i < ranks_[r].done.size(); ++i)
        if (!ranks_[r].done[i]) return "rank " + std::to_string(r) + " stuck at step " + std::to_string(i);
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

  // A step may run when earlier steps on the same link are done and its producer is done.
  bool ready(const RankState& s, size_t i) {
    const Step& step = s.schedule.steps[i];
    if (step.after >= 0 && !s.done[step.after]) return false;
    for (size_t j = 0; j < i; ++j) {
      const Step& earlier = s.schedule.steps[j];
      const bool local = step.kind == StepKind::Copy || step.kind == StepKind::Reduce;
      if (s.done[j] || earlier.peer != step.peer || local) continue;
      bool earlierSends = earlier.kind == StepKind::Send, sends = step.kind == StepKind::Send;
      if (earlierSends == sends) return false;
    }
    return true;
  }

  void fold(Value& into, const Value& other) {
    for (int j = 0; j < nranks_; ++j) into.contributions[j] += other.contributions[j];
    if (into.index != other.index) into.index = -2;
  }

  bool stepOnce(int r, bool sends, std::string& error) {
    RankState& s = ranks_[r];
    for (size_t i = 0; i < s.schedule.steps.size(); ++i) {
      if (s.done[i] || !ready(s, i)) continue;
      const Step& step = s.schedule.steps[i];
      if ((step.kind == StepKind::Send) != sends) continue;
      const bool local = step.kind == StepKind::Copy || step.kind == StepKind::Reduce;
      if (!local && (step.peer < 0 || step.peer >= nranks_ || step.peer == r)) {
        error = "bad peer";
        return false;
      }
      if ((step.kind != StepKind::Recv && !inRange(s, step.src)) ||
          (step.kind != StepKind::Send && !inRange(s, step.dst))) {
        error = "range out of bounds at step " + std::to_string(i);
        return false;
      }
      if (step.kind != StepKind::Send && step.dst.buffer == Buffer::Input) {
        error = "writes its input";
        return false;
      }
      Value* srcBuf = buffer(s, step.src.buffer);
      Value* dstBuf = buffer(s, step.dst.buffer);
      switch (step.kind) {
        case StepKind::Send:
          links_[{r, step.peer}].emplace_back(srcBuf + step.src.offset,
                                              srcBuf + step.src.offset + step.src.count);
          break;
        case StepKind::Copy:
          for (size_t k = 0; k < step.dst.count; ++k)
            dstBuf[step.dst.offset + k] = srcBuf[step.src.offset + k];
          break;
        case StepKind::Reduce:
          for (size_t k = 0; k < step.dst.count; ++k) fold(dstBuf[step.dst.offset + k], srcBuf[step.src.offset + k]);
          break;
        case StepKind::Recv:
        case StepKind::RecvReduce: {
          auto& queue = links_[{step.peer, r}];
          if (queue.empty()) continue;  // not yet: the peer has not sent
          std::vector<Value> message = std::move(queue.front());
          queue.pop_front();
          if (message.size() != step.dst.count) {
            error = "message of " + std::to_string(message.size()) + " elements into a step of " +
                    std::to_string(step.dst.count);
            return false;
          }
          for (size_t k = 0; k < step.dst.count; ++k) {
            Value v = message[k];
            if (step.kind == StepKind::RecvReduce) fold(v, srcBuf[step.src.offset + k]);
            dstBuf[step.dst.offset + k] = v;
          }
          break;
        }
      }
      s.done[i] = true;
      return true;
    }
    return false;
  }

  int nranks_;
  std::vector<RankState> ranks_;
  std::map<std::pair<int, int>, std::deque<std::vector<Value>>> links_;
};

Value expectAll(int nranks, int64_t index) { return {std::vector<uint16_t>(nranks, 1), index}; }
Value expectOne(int nranks, int from, int64_t index) {
  Value v{std::vector<uint16_t>(nranks, 0), index};
  v.contributions[from] = 1;
  return v;
}

void checkCollective(const Algorithm& algorithm, int nranks, size_t count, int root, bool inPlace) {
  SymbolicRun run(algorithm, nranks, count, root, inPlace);
  std::string error = run.run();
  ASSERT_EQ(error, "") << algorithm.name << " " << toString(algorithm.collective) << " p=" << nranks
                       << " count=" << count << " in-place=" << inPlace;
  for (int r = 0; r < nranks; ++r) {
    const Value* out = run.rank(r).output;
    for (size_t i = 0; i < run.rank(r).outputCount; ++i) {
      std::optional<Value> want;
      switch (algorithm.collective) {
        case Collective::AllReduce: want = expectAll(nranks, i); break;
        case Collective::AllGather: want = expectOne(nranks, i / count, i % count); break;
        case Collective::ReduceScatter: want = expectAll(nranks, r * count + i); break;
        case Collective::Broadcast: want = expectOne(nranks, root, i); break;
        case Collective::Reduce:
          if (r == root) want = expectAll(nranks, i);
          break;
        default: break;
      }
      if (want) {
        ASSERT_EQ(out[i], *want) << toString(algorithm.collective) << "/" << algorithm.name
                                 << " p=" << nranks << " count=" << count << " root=" << root
                                 << " in-place=" << inPlace << " rank=" << r << " element=" << i;
      }
    }
  }
}

TEST(Schedule, EveryCollectiveAlgorithmIsExactForManyRankCounts) {
  for (const Algorithm& algorithm : allAlgorithms()) {
    if (algorithm.collective == Collective::Send || algorithm.collective == Collective::Recv) continue;
    for (int nranks : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 31}) {
      for (size_t count : {0, 1, 2, 5, 13, 64}) {
        for (int root : {0, nranks - 1, nranks / 2}) {
          for (bool inPlace : {false, true}) {
            checkCollective(algorithm, nranks, count, root, inPlace);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
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
