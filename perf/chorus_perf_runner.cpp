#include "chorus_perf_runner.hpp"

#include "chorus_perf_data.hpp"
#include "chorus_perf_table.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

namespace perf {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kMaxIters = 1e6;
constexpr size_t kRankLineBytes = 256;

// Page-aligned anonymous memory, optionally on transparent huge pages, registered with
// the backend (-R 1; -R 3: the send buffer only, so a registered source meets an
// unregistered destination); or the backend's own allocation (-R 2).
enum class Role { Send, Recv };
class Buffer {
 public:
  Buffer(size_t bytes, const Args& args, Backend& backend, Role role)
      : bytes_(std::max<size_t>(bytes, 4096)), backend_(backend) {
    if (args.registration == 2) {
      data_ = static_cast<char*>(backend.allocate(bytes_));
      allocated_ = true;
      return;
    }
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (args.hugePages) madvise(p, bytes_, MADV_HUGEPAGE);
    data_ = static_cast<char*>(p);
    if (args.registration == 1 || (args.registration == 3 && role == Role::Send))
      handle_ = backend.registerBuffer(data_, bytes_);
  }
  ~Buffer() {
    try {
      if (handle_) backend_.deregister(handle_);
      if (allocated_) backend_.release(data_);
    } catch (const std::exception&) {
    }
    if (!allocated_) munmap(data_, bytes_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() const { return data_; }

 private:
  size_t bytes_;
  Backend& backend_;
  char* data_ = nullptr;
  void* handle_ = nullptr;
  bool allocated_ = false;
};

[[noreturn]] void noRegistration() {
  throw std::runtime_error("-R 1 and -R 2 need a library with buffer registration (chorus-perf)");
}

double allReduceDouble(Backend& b, double v, Op op) {
  double out = 0;
  b.run(Call{Coll::AllReduce, &v, &out, 1, Type::Float64, op, 0});
  return out;
}

int64_t sumOverRanks(Backend& b, int64_t v) {
  uint64_t in = static_cast<uint64_t>(v);
  uint64_t out = 0;
  b.run(Call{Coll::AllReduce, &in, &out, 1, Type::Uint64, Op::Sum, 0});
  return static_cast<int64_t>(out);
}

std::vector<std::string> gatherRankLines(Backend& b) {
  char host[128] = {};
  gethostname(host, sizeof(host) - 1);
  std::vector<char> mine(kRankLineBytes, 0);
  std::snprintf(mine.data(), kRankLineBytes,
                "#  Rank %2d Group  0 Pid %6d on %10s device  0 [host] %s", b.rank(),
                static_cast<int>(getpid()), host, b.rankInfo().c_str());
  std::vector<char> all(kRankLineBytes * static_cast<size_t>(b.size()), 0);
  b.run(Call{Coll::AllGather, mine.data(), all.data(), kRankLineBytes, Type::Uint8, Op::Sum, 0});
  std::vector<std::string> lines;
  for (int r = 0; r < b.size(); ++r) {
    const char* line = all.data() + kRankLineBytes * static_cast<size_t>(r);
    lines.emplace_back(line, strnlen(line, kRankLineBytes));
  }
  return lines;
}

// One table section: a type, the op used for the data (and printed when the collective
// reduces), and the root.
struct Case {
  Type type;
  Op op;
  int root;
};

class Sweep {
 public:
  Sweep(const Args& args, Backend& b, char* sendBuf, char* recvBuf)
      : args_(args), b_(b), sendBuf_(sendBuf), recvBuf_(recvBuf) {}

  // Times and checks one placement.
  Timing measure(const Case& c, const Layout& l, bool inPlace, uint64_t checkSeed) {
    Call call = callFor(c, l, inPlace);
    const int n = b_.size();
    fillInput(DataSpec{c.type, c.op, n, 0}, b_.rank(), const_cast<void*>(call.send), l.sendCount);

    // Warm up; all but the first warm-up call estimate the time per call.
    const int warm = args_.warmupIters;
    if (warm > 0) b_.run(call);
    const int timedWarm = std::max(warm - 1, args_.minTimeMs > 0 ? 1 : 0);
    const auto w0 = Clock::now();
    for (int i = 0; i < timedWarm; ++i) b_.run(call);
    const double est =
        timedWarm ? std::chrono::duration<double>(Clock::now() - w0).count() / timedWarm : 0.0;

    double want = args_.iters;
    if (args_.minTimeMs > 0) {
      want = std::max(want, est > 0 ? std::ceil(args_.minTimeMs * 1e-3 / est) : kMaxIters);
    }
    const long iters = static_cast<long>(allReduceDouble(b_, std::min(want, kMaxIters), Op::Max));

    allReduceDouble(b_, 0, Op::Sum);  // start together
    const auto t0 = Clock::now();
    for (long i = 0; i < iters; ++i) b_.run(call);
    const double sec = std::chrono::duration<double>(Clock::now() - t0).count() / iters;

    Timing t;
    t.iters = iters;
    t.timeUs = aggregate(sec) * 1e6;
    t.algBw = t.timeUs > 0 ? static_cast<double>(l.bytes) / 1e3 / t.timeUs : 0.0;
    t.busBw = t.algBw * busFactor(args_.coll, n);
    // Nothing to check where a rank gets no elements (N/A, as nccl-tests prints it).
    const bool checkable = l.paramCount > 0 && !(inPlace && args_.coll == Coll::SendRecv &&
                                                 !b_.inPlaceSendRecvDefined());
    if (args_.check > 0 && checkable) {
      int64_t wrong = 0;
      for (int k = 0; k < args_.check; ++k) wrong += checkOnce(c, l, inPlace, checkSeed + k);
      t.wrong = sumOverRanks(b_, wrong);
    }
    return t;
  }

 private:
  Call callFor(const Case& c, const Layout& l, bool inPlace) const {
    const size_t ts = typeSize(c.type);
    Call call{args_.coll, sendBuf_, recvBuf_, l.paramCount, c.type, c.op, c.root};
    if (inPlace) {
      size_t recvOffset = l.recvInPlaceOffset;
      if (args_.coll == Coll::ReduceScatter && !b_.reduceScatterInPlaceAtRankOffset())
        recvOffset = 0;
      call.send = recvBuf_ + l.sendInPlaceOffset * ts;
      call.recv = recvBuf_ + recvOffset * ts;
    }
    return call;
  }

  double aggregate(double sec) {
    switch (args_.average) {
      case 0:
        return allReduceDouble(b_, b_.rank() == 0 ? sec : 0.0, Op::Sum);
      case 2:
        return allReduceDouble(b_, sec, Op::Min);
      case 3:
        return allReduceDouble(b_, sec, Op::Max);
      default:
        return allReduceDouble(b_, sec, Op::Sum) / b_.size();
    }
  }

  // One call on fresh inputs; returns this rank's count of wrong elements.
  int64_t checkOnce(const Case& c, const Layout& l, bool inPlace, uint64_t seed) {
    const Call call = callFor(c, l, inPlace);
    const int rank = b_.rank();
    const int n = b_.size();
    const size_t ts = typeSize(c.type);
    const DataSpec spec{c.type, c.op, n, seed};
    fillPoison(call.recv, l.recvCount * ts);
    const bool sendIsInput = !(inPlace && args_.coll == Coll::Broadcast && rank != c.root);
    if (sendIsInput) fillInput(spec, rank, const_cast<void*>(call.send), l.sendCount);
    b_.run(call);
    const size_t pc = l.paramCount;
    switch (args_.coll) {
      case Coll::AllReduce:
        return countWrongReduced(spec, call.recv, pc, 0);
      case Coll::Reduce:
        return rank == c.root ? countWrongReduced(spec, call.recv, pc, 0) : 0;
      case Coll::ReduceScatter:
        return countWrongReduced(spec, call.recv, pc, pc * static_cast<size_t>(rank));
      case Coll::Broadcast:
        return countWrongCopied(spec, call.recv, pc, c.root, 0);
      case Coll::SendRecv:
        return countWrongCopied(spec, call.recv, pc, (rank + n - 1) % n, 0);
      case Coll::AllToAll: {  // block r: rank r's block `rank`
        int64_t wrong = 0;
        for (int r = 0; r < n; ++r) {
          const char* part = static_cast<const char*>(call.recv) + pc * ts * static_cast<size_t>(r);
          wrong += countWrongCopied(spec, part, pc, r, pc * static_cast<size_t>(rank));
        }
        return wrong;
      }
      case Coll::AllGather: {
        int64_t wrong = 0;
        for (int r = 0; r < n; ++r) {
          const char* part = static_cast<const char*>(call.recv) + pc * ts * static_cast<size_t>(r);
          wrong += countWrongCopied(spec, part, pc, r, 0);
        }
        return wrong;
      }
    }
    return 0;
  }

  const Args& args_;
  Backend& b_;
  char* sendBuf_;
  char* recvBuf_;
};

std::vector<Case> casesFor(const Args& args, const Backend& b, std::string& error) {
  std::vector<Type> types;
  for (Type t : args.types) {
    if (b.supports(t)) types.push_back(t);
  }
  std::vector<Op> ops;
  if (hasOp(args.coll)) {
    for (Op o : args.ops) {
      if (b.supports(o)) ops.push_back(o);
    }
  } else {
    ops.push_back(Op::Max);  // not printed; picks the widest input values
  }
  if (types.empty()) error = "none of the requested data types is supported here";
  if (ops.empty()) error = "none of the requested reduction ops is supported here";
  std::vector<int> roots;
  if (!hasRoot(args.coll)) {
    roots.push_back(-1);
  } else if (args.root < 0) {
    for (int r = 0; r < b.size(); ++r) roots.push_back(r);
  } else if (args.root < b.size()) {
    roots.push_back(args.root);
  } else {
    error = "root " + std::to_string(args.root) + " is not a rank";
  }
  std::vector<Case> cases;
  for (Type t : types) {
    for (Op o : ops) {
      for (int r : roots) cases.push_back(Case{t, o, r});
    }
  }
  return cases;
}

}  // namespace

void* Backend::registerBuffer(void*, size_t) { noRegistration(); }
void Backend::deregister(void*) { noRegistration(); }
void* Backend::allocate(size_t) { noRegistration(); }
void Backend::release(void*) { noRegistration(); }

int runBenchmark(const Args& args, Backend& b, const std::string& program) {
  const bool leader = b.rank() == 0;
  std::unique_ptr<Report> report;
  if (leader) report = std::make_unique<Report>(stdout, program);
  std::vector<std::string> rankLines;
  const std::string info = b.info();
  int64_t wrongTotal = 0;
  try {
    std::string error;
    const std::vector<Case> cases = casesFor(args, b, error);
    if (!error.empty()) {
      if (leader) std::fprintf(stderr, "%s: %s\n", program.c_str(), error.c_str());
      return 2;
    }
    rankLines = gatherRankLines(b);
    if (leader) report->printConfig(args, rankLines, info);
    Buffer sendBuf(args.maxBytes, args, b, Role::Send);
    Buffer recvBuf(args.maxBytes, args, b, Role::Recv);
    Sweep sweep(args, b, sendBuf.data(), recvBuf.data());
    if (leader) report->printTableHeader();
    const std::vector<size_t> sizes = sweepSizes(args);
    uint64_t seed = 1;
    for (const Case& c : cases) {
      for (size_t bytes : sizes) {
        const Layout l = layoutFor(args.coll, bytes, c.type, b.size(), b.rank());
        Row row;
        row.bytes = l.bytes;
        row.count = l.count;
        row.type = c.type;
        row.op = hasOp(args.coll) ? opName(c.op) : "none";
        row.root = hasRoot(args.coll) ? c.root : -1;
        row.outOfPlace = sweep.measure(c, l, false, seed);
        seed += static_cast<uint64_t>(args.check) + 1;
        row.inPlace = sweep.measure(c, l, true, seed);
        seed += static_cast<uint64_t>(args.check) + 1;
        wrongTotal +=
            std::max<int64_t>(row.outOfPlace.wrong, 0) + std::max<int64_t>(row.inPlace.wrong, 0);
        if (leader) report->printRow(row);
      }
    }
    if (leader) {
      report->printFooter();
      if (!args.jsonPath.empty()) report->writeJson(args, rankLines, info, {});
    }
  } catch (const std::exception& e) {
    if (leader && !args.jsonPath.empty()) report->writeJson(args, rankLines, info, {e.what()});
    throw;
  }
  return wrongTotal > 0 ? 1 : 0;
}

}  // namespace perf

namespace perf {

int runVariants(const Args& args, Backend& b, const std::string& program) {
  const bool leader = b.rank() == 0;
  std::string error;
  const std::vector<Case> cases = casesFor(args, b, error);
  if (!error.empty()) {
    if (leader) std::fprintf(stderr, "%s: %s\n", program.c_str(), error.c_str());
    return 2;
  }
  const std::vector<std::string> variants = b.variants();
  // auto/best and the closing count only where auto itself ran (`-A each=rd,ring` leaves it
  // out: its column would read 0.00 at every size).
  const bool autoRan = std::find(variants.begin(), variants.end(), "auto") != variants.end();
  Buffer sendBuf(args.maxBytes, args, b, Role::Send);
  Buffer recvBuf(args.maxBytes, args, b, Role::Recv);
  Sweep sweep(args, b, sendBuf.data(), recvBuf.data());
  int64_t wrong = 0;
  int rows = 0, within10 = 0;
  uint64_t seed = 1;
  for (const Case& c : cases) {  // every -d type x -o op x root, one section each
    if (leader) {
      std::printf(
          "# %s -A each: %s, %d ranks, %s%s%s%s, out-of-place busbw (GB/s), median of %d "
          "interleaved runs; * = best fixed algorithm\n",
          program.c_str(), b.info().c_str(), b.size(), typeName(c.type),
          hasOp(args.coll) ? " " : "", hasOp(args.coll) ? opName(c.op) : "",
          hasRoot(args.coll) ? (" root " + std::to_string(c.root)).c_str() : "", args.repeats);
      std::printf("%12s", "size");
      for (const auto& v : variants) std::printf(" %10s", v.c_str());
      std::printf(" %10s%s\n", "auto_pick", autoRan ? " auto/best" : "");
    }
    for (size_t bytes : sweepSizes(args)) {
      const Layout l = layoutFor(args.coll, bytes, c.type, b.size(), b.rank());
      std::vector<std::vector<double>> runs(variants.size());
      for (int rep = 0; rep < args.repeats; ++rep) {
        for (size_t k = 0; k < variants.size(); ++k) {
          // Rotated, and backwards in odd rounds: each variant follows two different ones
          // (rotation alone always put the last fixed algorithm, peer_staged, before auto).
          const size_t n = variants.size(), start = static_cast<size_t>(rep) % n;
          const size_t v = rep % 2 == 0 ? (start + k) % n : (start + n - k) % n;
          b.select(variants[v]);
          Timing t = sweep.measure(c, l, false, seed);
          seed += static_cast<uint64_t>(args.check) + 1;
          wrong += std::max<int64_t>(t.wrong, 0);
          runs[v].push_back(t.busBw);
        }
      }
      std::vector<double> median(variants.size());
      size_t best = variants.size(), autoIndex = variants.size();
      for (size_t v = 0; v < variants.size(); ++v) {
        auto& r = runs[v];
        std::sort(r.begin(), r.end());
        median[v] = r[r.size() / 2];
        if (variants[v] == "auto") {
          autoIndex = v;
          continue;
        }
        if (best == variants.size() || median[v] > median[best]) best = v;
      }
      b.select("auto");
      Call probe{args.coll, sendBuf.data(), recvBuf.data(), l.paramCount, c.type, c.op, c.root};
      const std::string pick = b.picked(probe);
      if (!leader) continue;
      std::printf("%12zu", l.bytes);
      for (size_t v = 0; v < variants.size(); ++v)
        std::printf(" %9.3g%c", median[v], v == best ? '*' : ' ');
      const double ratio = autoIndex < variants.size() && best < variants.size() && median[best] > 0
                               ? median[autoIndex] / median[best]
                               : 0;
      std::printf(" %10s", pick.c_str());
      if (autoRan) std::printf(" %9.2f", ratio);
      std::printf("\n");
      ++rows;
      within10 += ratio >= 0.9;
    }
  }
  const int64_t totalWrong = sumOverRanks(b, wrong);
  if (leader) {
    if (autoRan)
      std::printf("# auto within 10%% of the best fixed algorithm at %d of %d sizes\n", within10,
                  rows);
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(totalWrong),
                totalWrong ? "FAILED" : "OK");
  }
  return totalWrong > 0 ? 1 : 0;
}

}  // namespace perf
