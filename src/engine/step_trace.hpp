// A per-step trace of collectives (CHORUS_TRACE_STEPS=<prefix>): every step of every call
// with its kind, peer, bytes, and when it first moved data and when it completed, as
// Chrome-trace JSON (the array form: it opens in Perfetto and chrome://tracing beside the
// trainer's traces, and stays readable when a run dies before closing it).
//
// One file per rank and engine: <prefix>.rank<R>.json for a communicator created from a
// unique id or the environment, <prefix>.<its key prefix>.rank<R>.json for a split, shrink
// or grow (<prefix>.comm0.split0.1.rank0.json: R is its own rank, which another process
// holds in the world's numbering). Another communicator of the same name alive in the
// process meanwhile writes <prefix>...rank<R>.<k>.json; a later one writes the file anew.
// Tracks (Chrome "threads") of rank R (pid R): tid 0 the calls (submitted to done), tid
// 1.. the local steps (Copy, Reduce; one lane each while they overlap), tid 100 + 2p the
// steps to peer p (Send, Expose), 101 + 2p those from p (Recv, RecvReduce, PeerRead,
// PeerReduce). Times are microseconds of the steady clock (CLOCK_MONOTONIC): ranks on one
// host (the netns test bed's too) share it.
// Each step event's args: seq (the call's sequence number), step (its index in the
// schedule), peer, bytes, after, algo, and done 0 for a step a failure left unfinished.
// Small all-reduces through the shm mailbox (no schedule) are not traced.
//
// StepTraceWriter formats the events; chorus-sim --timeline writes the replay's steps
// with it in the same form, so a measured and a simulated call open side by side.
#pragma once

#include "algorithms/schedule.hpp"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace chorus {

namespace detail {
struct OpState;
}

const char* stepKindName(StepKind kind);  // "Send", "RecvReduce", ...

class StepTraceWriter {
 public:
  // Opens `path` for writing (truncates); throws Error(SystemError) naming it on failure.
  explicit StepTraceWriter(const std::string& path);
  ~StepTraceWriter();  // closes the array
  StepTraceWriter(const StepTraceWriter&) = delete;
  StepTraceWriter& operator=(const StepTraceWriter&) = delete;

  struct StepEvent {
    int rank = 0;
    uint64_t seq = 0;
    int step = 0;
    StepKind kind = StepKind::Copy;
    int peer = -1;
    size_t bytes = 0;
    int after = -1;
    double start = 0, end = 0;  // microseconds
    bool done = true;
    const char* algorithm = "";
  };
  void step(const StepEvent& e);
  // A call's span on track 0 of `rank`.
  void call(int rank, const std::string& name, uint64_t seq, double start, double end, size_t count,
            bool done);
  void flush();

 private:
  void line(const std::string& text);
  void nameTrack(int rank, int tid, const std::string& name);
  int localLane(int rank, double start, double end);

  std::FILE* file_ = nullptr;
  bool first_ = true;
  std::unordered_map<int64_t, bool> named_;             // (rank, tid) tracks named so far
  std::unordered_map<int, std::vector<double>> lanes_;  // per rank: each local lane's end
};

// The engine's side: stamps steps as they move and complete, writes a call's steps once
// it is done (or abandoned by a failure). Only constructed when the setting is on.
class StepTrace {
 public:
  StepTrace(const std::string& prefix, int rank);
  ~StepTrace();         // writes what is open: the engine's ops in flight are still alive then
  static double now();  // microseconds of the steady clock
  void submitted(const detail::OpState& op);
  bool unstarted(const detail::OpState& op, int step) const;  // traced, no start yet
  void started(const detail::OpState& op, int step, double at);
  void completed(const detail::OpState& op, int step);  // an unstarted step starts now
  void abandonAll();  // a failure: every open call as far as it came
  void flush() { writer_.flush(); }

  static std::string pathFor(const std::string& prefix, int rank);  // claims the name

 private:
  struct Open {
    std::vector<double> start, end;  // per step; < 0: not yet
    double submitted = 0;
    size_t left = 0;
  };
  void write(const detail::OpState& op, const Open& o, bool done);

  int rank_;
  std::string path_;
  StepTraceWriter writer_;
  std::unordered_map<const detail::OpState*, Open> open_;
};

}  // namespace chorus
