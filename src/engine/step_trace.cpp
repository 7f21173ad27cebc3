#include "engine/step_trace.hpp"

#include "algorithms/schedule_rules.hpp"
#include "clock.hpp"
#include "engine/op_state.hpp"
#include "errors.hpp"
#include "json_text.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

namespace chorus {

namespace {

double nowUs() {
  return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

constexpr int kCallTrack = 0, kFirstLocalTrack = 1, kFirstPeerTrack = 100;

int peerTrack(StepKind kind, int peer) { return kFirstPeerTrack + 2 * peer + !isOutgoing(kind); }

}  // namespace

const char* stepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::Send:
      return "Send";
    case StepKind::Recv:
      return "Recv";
    case StepKind::RecvReduce:
      return "RecvReduce";
    case StepKind::Copy:
      return "Copy";
    case StepKind::Reduce:
      return "Reduce";
    case StepKind::Expose:
      return "Expose";
    case StepKind::PeerRead:
      return "PeerRead";
    case StepKind::PeerReduce:
      return "PeerReduce";
    case StepKind::PeerWrite:
      return "PeerWrite";
  }
  return "?";
}

StepTraceWriter::StepTraceWriter(const std::string& path) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    throw Error(Result::SystemError,
                "CHORUS_TRACE_STEPS: cannot write " + path + ": " + std::strerror(errno));
  std::fputs("[\n", file_);
}

StepTraceWriter::~StepTraceWriter() {
  if (!file_) return;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
}

void StepTraceWriter::flush() {
  if (file_) std::fflush(file_);
}

void StepTraceWriter::line(const std::string& text) {
  if (!first_) std::fputs(",\n", file_);
  first_ = false;
  std::fputs(text.c_str(), file_);
}

void StepTraceWriter::nameTrack(int rank, int tid, const std::string& name) {
  const int64_t key = static_cast<int64_t>(rank) << 32 | static_cast<uint32_t>(tid);
  if (named_.emplace(key, true).second == false) return;
  if (tid == kCallTrack)
    line("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(rank) +
         ",\"args\":{\"name\":\"rank " + std::to_string(rank) + "\"}}");
  line("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(rank) +
       ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + jsonQuoted(name) + "}}");
  line("{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + std::to_string(rank) +
       ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"sort_index\":" + std::to_string(tid) +
       "}}");
}

// The first local lane of `rank` free by `start` (steps that overlap go on lanes of their
// own: a track's slices must nest).
int StepTraceWriter::localLane(int rank, double start, double end) {
  std::vector<double>& lanes = lanes_[rank];
  for (size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i] <= start) {
      lanes[i] = end;
      return static_cast<int>(i);
    }
  lanes.push_back(end);
  return static_cast<int>(lanes.size() - 1);
}

void StepTraceWriter::step(const StepEvent& e) {
  int tid;
  std::string track;
  if (isLocal(e.kind)) {
    const int lane = localLane(e.rank, e.start, e.end);
    tid = kFirstLocalTrack + lane;
    track = "local " + std::to_string(lane);
  } else {
    tid = peerTrack(e.kind, e.peer);
    track = (isOutgoing(e.kind) ? "to " : "from ") + std::to_string(e.peer);
  }
  nameTrack(e.rank, kCallTrack, "calls");
  nameTrack(e.rank, tid, track);
  char text[512];
  std::snprintf(text, sizeof text,
                "{\"ph\":\"X\",\"cat\":\"step\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,"
                "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"seq\":%llu,\"step\":%d,\"kind\":\"%s\","
                "\"peer\":%d,\"bytes\":%zu,\"after\":%d,\"algo\":%s,\"done\":%d}}",
                stepKindName(e.kind), e.rank, tid, e.start, std::max(0.0, e.end - e.start),
                static_cast<unsigned long long>(e.seq), e.step, stepKindName(e.kind), e.peer,
                e.bytes, e.after, jsonQuoted(e.algorithm).c_str(), e.done ? 1 : 0);
  line(text);
}

void StepTraceWriter::call(int rank, const std::string& name, uint64_t seq, double start,
                           double end, size_t count, bool done) {
  nameTrack(rank, kCallTrack, "calls");
  char text[512];
  std::snprintf(text, sizeof text,
                "{\"ph\":\"X\",\"cat\":\"call\",\"name\":%s,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                "\"dur\":%.3f,\"args\":{\"seq\":%llu,\"count\":%zu,\"done\":%d}}",
                jsonQuoted(name).c_str(), rank, kCallTrack, start, std::max(0.0, end - start),
                static_cast<unsigned long long>(seq), count, done ? 1 : 0);
  line(text);
}

namespace {
std::mutex takenMutex;
std::set<std::string> taken;  // the paths of this process's live traces
}  // namespace

// <prefix>.rank<R>.json, or .rank<R>.<k>.json while that one is in use by another engine
// of this process (a split or shrink of the communicator; initAll's ranks are other R).
std::string StepTrace::pathFor(const std::string& prefix, int rank) {
  std::lock_guard lock(takenMutex);
  const std::string base = prefix + ".rank" + std::to_string(rank);
  std::string path = base + ".json";
  for (int k = 1; !taken.insert(path).second; ++k) path = base + "." + std::to_string(k) + ".json";
  return path;
}

StepTrace::StepTrace(const std::string& prefix, int rank)
    : rank_(rank), path_(pathFor(prefix, rank)), writer_(path_) {}

StepTrace::~StepTrace() {
  abandonAll();
  std::lock_guard lock(takenMutex);
  taken.erase(path_);
}

void StepTrace::submitted(const detail::OpState& op) {
  Open& o = open_[&op];
  const size_t steps = op.schedule->steps.size();
  o.start.assign(steps, -1);
  o.end.assign(steps, -1);
  o.submitted = nowUs();
  o.left = steps;
}

double StepTrace::now() { return nowUs(); }

bool StepTrace::unstarted(const detail::OpState& op, int step) const {
  auto it = open_.find(&op);
  return it != open_.end() && it->second.start[static_cast<size_t>(step)] < 0;
}

void StepTrace::started(const detail::OpState& op, int step, double at) {
  auto it = open_.find(&op);
  if (it == open_.end()) return;
  double& start = it->second.start[static_cast<size_t>(step)];
  if (start < 0) start = at;
}

void StepTrace::completed(const detail::OpState& op, int step) {
  auto it = open_.find(&op);
  if (it == open_.end()) return;
  Open& o = it->second;
  const double now = nowUs();
  double& start = o.start[static_cast<size_t>(step)];
  if (start < 0) start = now;  // an empty step, or one done in its first pass
  if (o.end[static_cast<size_t>(step)] >= 0) return;
  o.end[static_cast<size_t>(step)] = now;
  if (--o.left > 0) return;
  write(op, o, true);
  open_.erase(it);
}

void StepTrace::abandonAll() {
  for (auto& [op, o] : open_) write(*op, o, false);
  open_.clear();
  writer_.flush();
}

void StepTrace::write(const detail::OpState& op, const Open& o, bool done) {
  const Schedule& schedule = *op.schedule;
  double last = o.submitted;
  std::vector<size_t> order;  // by start: the local lanes are handed out in time order
  for (size_t i = 0; i < schedule.steps.size(); ++i)
    if (o.start[i] >= 0) order.push_back(i);  // not: never moved (a failure came first)
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return o.start[a] < o.start[b]; });
  for (size_t i : order) {
    const Step& s = schedule.steps[i];
    StepTraceWriter::StepEvent e;
    e.rank = rank_;
    e.seq = op.sequence;
    e.step = static_cast<int>(i);
    e.kind = s.kind;
    e.peer = s.peer;
    e.bytes = rules::elementsOf(s) * op.elementSize;
    e.after = s.after;
    e.start = o.start[i];
    e.done = o.end[i] >= 0;
    e.end = e.done ? o.end[i] : e.start;
    e.algorithm = op.algorithm;
    writer_.step(e);
    last = std::max(last, e.end);
  }
  writer_.call(rank_, std::string(toString(op.collective)) + " " + op.algorithm, op.sequence,
               o.submitted, last, op.count, done);
}

}  // namespace chorus
