// CHORUS_TRACE_STEPS: three ranks in this process (initAll, shm) run two ring all-reduces
// and two rd ones with the trace on; each rank's file must be valid JSON holding, per call,
// exactly its schedule's steps (kind, peer, bytes, after, in schedule order), each with
// start <= end, every receive ending after its matching send started, and the call's span
// covering its steps. Then with the setting unset no file is written.
#include "../common/algorithm_lookup.hpp"
#include "../common/process_support.hpp"

#include <gtest/gtest.h>
#include <chorus/chorus.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "algorithms/schedule_rules.hpp"
#include "engine/step_trace.hpp"

namespace chorus {
namespace {

namespace fs = std::filesystem;
using test_support::EnvGuard;
constexpr double kRounding = 0.002;  // us: start and duration are written to the ns

struct Traced {
  std::string kind;
  int peer, after, step;
  size_t bytes;
  double start, end;
  int done;
};
// rank -> seq -> steps (by index), and rank -> seq -> the call's span [start, end]
struct Trace {
  std::map<int, std::map<uint64_t, std::map<int, Traced>>> steps;
  std::map<int, std::map<uint64_t, std::pair<double, double>>> calls;
  std::map<int, std::map<uint64_t, std::string>> algorithm;
};

void readRank(const fs::path& file, int rank, Trace& trace) {
  std::ifstream in(file);
  ASSERT_TRUE(in) << file;
  const nlohmann::json events = nlohmann::json::parse(in);  // throws when not JSON
  ASSERT_TRUE(events.is_array());
  for (const auto& e : events) {
    if (e["ph"] != "X") continue;
    ASSERT_EQ(e["pid"].get<int>(), rank);
    const auto& a = e["args"];
    const uint64_t seq = a["seq"].get<uint64_t>();
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    if (e["cat"] == "call") {
      trace.calls[rank][seq] = {ts, ts + dur};
      continue;
    }
    Traced t{a["kind"].get<std::string>(),
             a["peer"].get<int>(),
             a["after"].get<int>(),
             a["step"].get<int>(),
             a["bytes"].get<size_t>(),
             ts,
             ts + dur,
             a["done"].get<int>()};
    EXPECT_EQ(e["name"].get<std::string>(), t.kind);
    EXPECT_TRUE(trace.steps[rank][seq].emplace(t.step, t).second) << "step twice: " << t.step;
    trace.algorithm[rank][seq] = a["algo"].get<std::string>();
  }
}

void allReduces(int n, size_t count, int calls) {
  Options options;
  options.transport = "shm";
  std::vector<Communicator> comms = Communicator::initAll(n, options);
  std::vector<std::vector<float>> in(n), out(n);
  for (int call = 0; call < calls; ++call) {
    group([&] {
      for (int r = 0; r < n; ++r) {
        in[r].assign(count, static_cast<float>(r + call));
        out[r].assign(count, -1);
        comms[r].allReduce(in[r].data(), out[r].data(), count, DataType::Float32, RedOp::Sum);
      }
    }).wait();
    const float want = static_cast<float>(n * (n - 1) / 2 + n * call);
    for (int r = 0; r < n; ++r) ASSERT_EQ(out[r][count / 2], want) << "rank " << r;
  }
}

TEST(StepTrace, HoldsEveryStepOfTheScheduleInOrder) {
  const fs::path dir = fs::temp_directory_path() / ("chorus_trace_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int n = 3;
  const size_t count = 3 * 50'000;  // 600 KB: ring's steps of 200 KB, in one slice each
  EnvGuard env{"CHORUS_TUNE_FILE"};
  env.set("CHORUS_TUNE_PROBE", "0");
  env.set("CHORUS_TRACE_STEPS", (dir / "t").string());
  for (const char* name : {"ring", "rd"}) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    env.set("CHORUS_ALGO", std::string("allreduce:") + name);
    allReduces(n, count, 2);
    Trace trace;
    for (int r = 0; r < n; ++r) readRank(dir / ("t.rank" + std::to_string(r) + ".json"), r, trace);
    const Algorithm& algorithm = test::allReduce(name);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(trace.steps[r].size(), 2u) << name << " rank " << r << ": calls traced";
      CollectiveArgs args{Collective::AllReduce, r, n, count};
      const Schedule schedule = algorithm.build(args);
      for (const auto& [seq, steps] : trace.steps[r]) {
        EXPECT_EQ(trace.algorithm[r][seq], name);
        ASSERT_EQ(steps.size(), schedule.steps.size()) << name << " rank " << r << " #" << seq;
        const auto [callStart, callEnd] = trace.calls[r].at(seq);
        for (const auto& [i, t] : steps) {
          const Step& s = schedule.steps[static_cast<size_t>(i)];
          EXPECT_EQ(t.kind, stepKindName(s.kind)) << "rank " << r << " step " << i;
          EXPECT_EQ(t.peer, s.peer) << "rank " << r << " step " << i;
          EXPECT_EQ(t.after, s.after) << "rank " << r << " step " << i;
          EXPECT_EQ(t.bytes, rules::elementsOf(s) * sizeof(float)) << "rank " << r << " step " << i;
          EXPECT_EQ(t.done, 1);
          EXPECT_LE(t.start, t.end);
          EXPECT_LE(callStart, t.start + kRounding);
          EXPECT_GE(callEnd + kRounding, t.end);
        }
      }
    }
    // The k-th message from p to r (per call): r's receive ends after p's send started.
    for (int r = 0; r < n; ++r)
      for (const auto& [seq, steps] : trace.steps[r]) {
        std::map<int, int> fromPeer;
        for (const auto& [i, t] : steps) {
          if (t.kind != "Recv" && t.kind != "RecvReduce") continue;
          const int k = fromPeer[t.peer]++;
          int seen = 0;
          const Traced* send = nullptr;
          for (const auto& [j, u] : trace.steps[t.peer].at(seq))
            if (u.kind == "Send" && u.peer == r && seen++ == k) send = &u;
          ASSERT_NE(send, nullptr) << "rank " << r << " step " << i << ": no matching send";
          EXPECT_GE(t.end, send->start) << "rank " << r << " step " << i;
        }
      }
  }
  // Off: nothing written.
  fs::remove_all(dir);
  fs::create_directories(dir);
  env.clear("CHORUS_TRACE_STEPS");
  env.set("CHORUS_ALGO", "allreduce:ring");
  allReduces(n, count, 1);
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

// Rule 1's exception (rules::writesBehindFold): peer_push's write of a chunk to peer P runs
// beside the fold reading P's chunk, slice by slice behind the fold chain it is `after`,
// instead of waiting for that fold to complete. Two ranks in this process on memAlloc
// buffers, 64 KiB slices, one round of 256 Ki floats a part: the fold takes sixteen
// passes, and the write moves its first slice in the fold's first pass or the next (the
// ranks progress on this one thread), so every such write starts before its fold ends
// (under rule 1 alone it starts after). Results checked, in and out of place.
TEST(StepTrace, AWriteRunsBesideTheFoldAheadOfIt) {
  const fs::path dir =
      fs::temp_directory_path() / ("chorus_trace_push_" + std::to_string(getpid()));
  const int n = 2;
  const size_t count = size_t{n} << 18;
  EnvGuard env{"CHORUS_TUNE_FILE"};
  env.set("CHORUS_TUNE_PROBE", "0");
  env.set("CHORUS_ALGO", "allreduce:peer_push");
  env.set("CHORUS_SLICE_BYTES", "64K");
  env.set("CHORUS_TRACE_STEPS", (dir / "t").string());
  for (bool inPlace : {false, true}) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    {
      Options options;
      options.transport = "shm";
      std::vector<Communicator> comms = Communicator::initAll(n, options);
      std::vector<float*> in(n), out(n);
      for (int r = 0; r < n; ++r) {
        in[r] = static_cast<float*>(memAlloc(count * sizeof(float)));
        out[r] = inPlace ? in[r] : static_cast<float*>(memAlloc(count * sizeof(float)));
        for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((r + 1) * (i % 1000));
      }
      group([&] {
        for (int r = 0; r < n; ++r)
          comms[r].allReduce(in[r], out[r], count, DataType::Float32, RedOp::Sum);
      }).wait();
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; i += 997)
          ASSERT_EQ(out[r][i], static_cast<float>(3 * (i % 1000))) << "rank " << r << " " << i;
        memFree(in[r]);
        if (!inPlace) memFree(out[r]);
      }
    }
    Trace trace;
    for (int r = 0; r < n; ++r) readRank(dir / ("t.rank" + std::to_string(r) + ".json"), r, trace);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(trace.steps[r].size(), 1u) << "rank " << r;
      const auto& steps = trace.steps[r].begin()->second;
      int writes = 0;
      const Traced* fold = nullptr;  // the last PeerReduce from the peer (n = 2: one peer)
      for (const auto& [i, t] : steps) {
        if (t.kind == "PeerReduce") fold = &t;
        if (t.kind != "PeerWrite") continue;
        ASSERT_NE(fold, nullptr) << "rank " << r << " step " << i;
        ++writes;
        EXPECT_LT(t.start, fold->end) << "rank " << r << " write " << i << " (in place " << inPlace
                                      << ") waited for fold " << fold->step;
      }
      EXPECT_EQ(writes, 1) << "rank " << r;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace chorus
