// chorus_errors_test: bad arguments give a clear chorus::Error(InvalidArgument), at once,
// never an abort or a hang; the communicator stays usable afterwards. Run under chorus-run:
//   chorus-run -n 2 chorus_errors_test --api cpp     (C++ API)
//   chorus-run -n 2 chorus_errors_test --api c       (C API, errors_c_api.cpp)
// Every check prints "ok" or "FAIL" with the library's message; a hang is reported by the
// watchdog. Exit 0 only if every check passed.
#include "errors_common.hpp"

#include <chorus/chorus.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace chorus_test {
int runCApiChecks(Report& rep);  // errors_c_api.cpp
}

namespace {

using namespace chorus_test;
using Clock = std::chrono::steady_clock;
using chorus::DataType;
using chorus::RedOp;

// Runs fn; expects chorus::Error(InvalidArgument), thrown by the call or by Work::wait,
// within 10 s, with a message that names the problem (one of `words`).
template <class F>
void expectInvalid(Report& rep, const std::string& check, std::initializer_list<const char*> words,
                   F fn) {
  rep.watchdog.arm(check, kCheckLimit);
  const auto t0 = Clock::now();
  try {
    auto result = fn();
    if constexpr (std::is_same_v<decltype(result), chorus::Work>) {
      bool done = result.wait(std::chrono::seconds(10));
      rep.fail(check, done ? "accepted: completed without an error"
                           : "accepted: no error, and not complete after 10 s");
    } else {
      rep.fail(check, "accepted: no error");
    }
  } catch (const chorus::Error& e) {
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::string msg = e.what();
    char took[48];
    std::snprintf(took, sizeof took, " (%.1f ms)", ms);
    if (e.code() != chorus::Result::InvalidArgument) {
      rep.fail(check, std::string("code ") + chorus::toString(e.code()) +
                          ", expected invalid argument: " + msg);
    } else if (ms > 10000) {
      rep.fail(check, "reported only after" + std::string(took) + ": " + msg);
    } else if (msg.empty() || !mentionsAny(msg, words)) {
      rep.fail(check,
               "message does not name the problem (" + joinWords(words) + "): '" + msg + "'");
    } else {
      rep.pass(check, msg + took);
    }
  } catch (const std::exception& e) {
    rep.fail(check, std::string("threw a non-chorus exception: ") + e.what());
  }
  rep.watchdog.disarm();
}

// A correct allReduce after the failures: argument errors must not poison the communicator.
void expectUsable(Report& rep, chorus::Communicator& comm, const std::string& check) {
  rep.watchdog.arm(check, kCheckLimit);
  const int n = comm.size();
  std::vector<int32_t> buf(5, comm.rank() + 1);
  try {
    chorus::Work w =
        comm.allReduce(buf.data(), buf.data(), buf.size(), DataType::Int32, RedOp::Sum);
    if (!w.wait(std::chrono::seconds(20))) {
      rep.fail(check, "allReduce not complete after 20 s");
    } else if (buf != std::vector<int32_t>(5, n * (n + 1) / 2)) {
      rep.fail(check, "allReduce gave " + std::to_string(buf[0]) + ", expected " +
                          std::to_string(n * (n + 1) / 2));
    } else {
      rep.pass(check, "allReduce correct");
    }
  } catch (const std::exception& e) {
    rep.fail(check, std::string("allReduce threw: ") + e.what());
  }
  rep.watchdog.disarm();
}

// Send and receive buffers back to back in one allocation touch without overlapping:
// accepted, with right results (the overlap check compares each buffer's own size).
void expectAdjacentBuffersWork(Report& rep, chorus::Communicator& comm) {
  const std::string check = "adjacent send and receive buffers";
  rep.watchdog.arm(check, kCheckLimit);
  const int n = comm.size(), rank = comm.rank();
  constexpr size_t c = 3;
  std::vector<int64_t> buf(c + c * static_cast<size_t>(n));
  std::string wrong;
  try {
    // all-reduce: [send c][recv c]
    for (size_t i = 0; i < c; ++i) buf[i] = 10 * (rank + 1) + static_cast<int64_t>(i);
    comm.allReduce(buf.data(), buf.data() + c, c, DataType::Int64, RedOp::Sum).wait();
    for (size_t i = 0; i < c; ++i)
      if (buf[c + i] != 5 * n * (n + 1) + n * static_cast<int64_t>(i))
        wrong = "allReduce element " + std::to_string(i) + " = " + std::to_string(buf[c + i]);
    // all-gather: [send c][recv n c], and reduce-scatter: [send n c][recv c]
    for (size_t i = 0; i < c; ++i) buf[i] = 100 * rank + static_cast<int64_t>(i);
    comm.allGather(buf.data(), buf.data() + c, c, DataType::Int64).wait();
    for (int k = 0; k < n; ++k)
      for (size_t i = 0; i < c; ++i)
        if (buf[c + k * c + i] != 100 * k + static_cast<int64_t>(i))
          wrong = "allGather block " + std::to_string(k) + " element " + std::to_string(i);
    for (size_t j = 0; j < c * n; ++j) buf[j] = rank + static_cast<int64_t>(j);
    comm.reduceScatter(buf.data(), buf.data() + c * n, c, DataType::Int64, RedOp::Sum).wait();
    for (size_t i = 0; i < c; ++i) {
      const int64_t j = static_cast<int64_t>(rank * c + i);
      if (buf[c * n + i] != n * (n - 1) / 2 + n * j)
        wrong = "reduceScatter element " + std::to_string(i);
    }
    if (wrong.empty())
      rep.pass(check, "all-reduce, all-gather and reduce-scatter accepted and correct");
    else
      rep.fail(check, wrong);
  } catch (const std::exception& e) {
    rep.fail(check, std::string("refused or failed: ") + e.what());
  }
  rep.watchdog.disarm();
}

void initChecks(Report& rep) {
  chorus::UniqueId id = chorus::getUniqueId();
  chorus::Options opt;
  opt.timeout = std::chrono::seconds(5);
  auto init = [&](int rank, int nranks, const chorus::UniqueId& uid) {
    return [=, &opt] { return chorus::Communicator::init(rank, nranks, uid, opt); };
  };
  expectInvalid(rep, "init nranks=0", {"nranks", "size", "rank"}, init(0, 0, id));
  expectInvalid(rep, "init nranks=-3", {"nranks", "size", "rank"}, init(0, -3, id));
  expectInvalid(rep, "init rank=2 nranks=2", {"rank"}, init(2, 2, id));
  expectInvalid(rep, "init rank=-1 nranks=2", {"rank"}, init(-1, 2, id));
  chorus::UniqueId zero;  // all zero bytes
  expectInvalid(rep, "init all-zero unique id", {"id", "unique"}, init(0, 2, zero));
  chorus::UniqueId garbage;
  uint64_t x = 0x243f6a8885a308d3ull;
  for (char& c : garbage.bytes) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    c = static_cast<char>(x >> 56);
  }
  expectInvalid(rep, "init random-bytes unique id", {"id", "unique"}, init(0, 2, garbage));
}

void collectiveChecks(Report& rep, chorus::Communicator& comm) {
  const int n = comm.size();
  const int rank = comm.rank();
  const int peer = (rank + 1) % n;
  std::vector<int64_t> a(16 * static_cast<size_t>(n), 1);
  std::vector<int64_t> b(16 * static_cast<size_t>(n), 2);
  int64_t* s = a.data();
  int64_t* r = b.data();
  const size_t c = 4;

  for (int tv : {-1, 12, 99, 0x7fffffff}) {
    auto t = static_cast<DataType>(tv);
    std::string sfx = " type=" + std::to_string(tv);
    auto w = {"type"};
    expectInvalid(rep, "allReduce" + sfx, w,
                  [&] { return comm.allReduce(s, r, c, t, RedOp::Sum); });
    expectInvalid(rep, "allGather" + sfx, w, [&] { return comm.allGather(s, r, c, t); });
    expectInvalid(rep, "reduceScatter" + sfx, w,
                  [&] { return comm.reduceScatter(s, r, c, t, RedOp::Sum); });
    expectInvalid(rep, "broadcast" + sfx, w, [&] { return comm.broadcast(s, r, c, t, 0); });
    expectInvalid(rep, "reduce" + sfx, w, [&] { return comm.reduce(s, r, c, t, RedOp::Sum, 0); });
    expectInvalid(rep, "send" + sfx, w, [&] { return comm.send(s, c, t, peer); });
    expectInvalid(rep, "recv" + sfx, w, [&] { return comm.recv(r, c, t, peer); });
  }
  for (int ov : {-1, 5, 99}) {
    auto op = static_cast<RedOp>(ov);
    std::string sfx = " op=" + std::to_string(ov);
    auto w = {"op"};
    expectInvalid(rep, "allReduce" + sfx, w,
                  [&] { return comm.allReduce(s, r, c, DataType::Float32, op); });
    expectInvalid(rep, "reduceScatter" + sfx, w,
                  [&] { return comm.reduceScatter(s, r, c, DataType::Float32, op); });
    expectInvalid(rep, "reduce" + sfx, w,
                  [&] { return comm.reduce(s, r, c, DataType::Float32, op, 0); });
  }
  for (int root : {-1, n, n + 5}) {
    std::string sfx = " root=" + std::to_string(root);
    auto w = {"root"};
    expectInvalid(rep, "broadcast" + sfx, w,
                  [&] { return comm.broadcast(s, r, c, DataType::Int64, root); });
    expectInvalid(rep, "reduce" + sfx, w,
                  [&] { return comm.reduce(s, r, c, DataType::Int64, RedOp::Sum, root); });
  }
  for (int p : {-1, n}) {
    std::string sfx = " peer=" + std::to_string(p);
    auto w = {"peer"};
    expectInvalid(rep, "send" + sfx, w, [&] { return comm.send(s, c, DataType::Int64, p); });
    expectInvalid(rep, "recv" + sfx, w, [&] { return comm.recv(r, c, DataType::Int64, p); });
  }
  // Null buffers with count > 0; only buffers every rank uses, so all ranks throw alike.
  auto w = {"null", "buffer"};
  const auto i64 = DataType::Int64;
  expectInvalid(rep, "allReduce null send", w,
                [&] { return comm.allReduce(nullptr, r, c, i64, RedOp::Sum); });
  expectInvalid(rep, "allReduce null recv", w,
                [&] { return comm.allReduce(s, nullptr, c, i64, RedOp::Sum); });
  expectInvalid(rep, "allGather null send", w, [&] { return comm.allGather(nullptr, r, c, i64); });
  expectInvalid(rep, "allGather null recv", w, [&] { return comm.allGather(s, nullptr, c, i64); });
  expectInvalid(rep, "reduceScatter null send", w,
                [&] { return comm.reduceScatter(nullptr, r, c, i64, RedOp::Sum); });
  expectInvalid(rep, "reduceScatter null recv", w,
                [&] { return comm.reduceScatter(s, nullptr, c, i64, RedOp::Sum); });
  expectInvalid(rep, "broadcast null recv", w,
                [&] { return comm.broadcast(s, nullptr, c, i64, 0); });
  expectInvalid(rep, "reduce null send", w,
                [&] { return comm.reduce(nullptr, r, c, i64, RedOp::Sum, 0); });
  expectInvalid(rep, "send null buffer", w, [&] { return comm.send(nullptr, c, i64, peer); });
  expectInvalid(rep, "recv null buffer", w, [&] { return comm.recv(nullptr, c, i64, peer); });

  // Overlapping buffers that are not the in-place layout, and a count whose byte size
  // overflows.
  expectInvalid(rep, "allReduce recv = send + 1 element", {"overlap"},
                [&] { return comm.allReduce(s, s + 1, c, i64, RedOp::Sum); });
  expectInvalid(rep, "allReduce send = recv + 1 element", {"overlap"},
                [&] { return comm.allReduce(s + 1, s, c, i64, RedOp::Sum); });
  if (n >= 2) {  // at np 1 these layouts do not overlap: every rank must take one branch
    // recv + c + 1 is neither rank's in-place slot (recv + rank c) and lies inside recv.
    expectInvalid(rep, "allGather send = recv + count + 1", {"overlap"},
                  [&] { return comm.allGather(r + c + 1, r, c, i64); });
    expectInvalid(rep, "reduceScatter recv = send + count + 1", {"overlap"},
                  [&] { return comm.reduceScatter(s, s + c + 1, c, i64, RedOp::Sum); });
  }
  expectAdjacentBuffersWork(rep, comm);
  expectInvalid(rep, "allReduce count=SIZE_MAX", {"count", "large", "size"},
                [&] { return comm.allReduce(s, r, SIZE_MAX, i64, RedOp::Sum); });
  expectInvalid(rep, "allGather int64 count=SIZE_MAX/4", {"count", "large", "size"},
                [&] { return comm.allGather(s, r, SIZE_MAX / 4, i64); });

  expectUsable(rep, comm, "usable after the argument errors");

  expectInvalid(rep, "setAlgorithm unknown name", {"no-such-algo", "algorithm", "unknown"}, [&] {
    comm.setAlgorithm("no-such-algo");
    return 0;
  });
  expectUsable(rep, comm, "usable after setAlgorithm failed");

  // A one-sided algorithm forced on buffers peers cannot reach in place (plain vectors:
  // neither memAlloc'd nor registered) is refused with what to do, not run or hung.
  std::vector<float> in(1 << 16, 1.0f), out(1 << 16);
  for (const char* spec : {"allreduce:peer_push", "allreduce:peer_twoshot"}) {
    comm.setAlgorithm(spec);
    expectInvalid(rep, std::string(spec) + " on plain buffers", {"memAlloc", "register"}, [&] {
      return comm.allReduce(in.data(), out.data(), in.size(), DataType::Float32, RedOp::Sum);
    });
  }
  comm.setAlgorithm("allreduce:auto");
  expectUsable(rep, comm, "usable after the refused one-sided algorithms");
}

// After abort() every collective throws chorus::Error (any code), at once.
void abortCheck(Report& rep, chorus::Communicator& comm) {
  const std::string check = "allReduce after abort()";
  rep.watchdog.arm(check, kCheckLimit);
  int32_t v = 1;
  try {
    comm.abort();
    chorus::Work w = comm.allReduce(&v, &v, 1, DataType::Int32, RedOp::Sum);
    bool done = w.wait(std::chrono::seconds(10));
    rep.fail(check, done ? "completed without an error" : "no error, not complete after 10 s");
  } catch (const chorus::Error& e) {
    rep.pass(check, std::string(chorus::toString(e.code())) + ": " + e.what());
  } catch (const std::exception& e) {
    rep.fail(check, std::string("non-chorus exception: ") + e.what());
  }
  rep.watchdog.disarm();
}

int runCppChecks(Report& rep) {
  initChecks(rep);
  chorus::Options opt;
  opt.timeout = std::chrono::seconds(30);
  chorus::Communicator comm;
  rep.watchdog.arm("initFromEnv", std::chrono::seconds(60));
  try {
    comm = chorus::Communicator::initFromEnv(opt);
  } catch (const std::exception& e) {
    rep.fail("initFromEnv", e.what());
    return 1;
  }
  rep.watchdog.disarm();
  collectiveChecks(rep, comm);
  abortCheck(rep, comm);
  rep.watchdog.arm("Communicator destructor after abort()", kCheckLimit);
  comm = chorus::Communicator();
  rep.watchdog.disarm();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string api = "cpp";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--api") == 0 && i + 1 < argc) {
      api = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--api cpp|c]\n", argv[0]);
      return 2;
    }
  }
  Report rep;
  const char* envRank = std::getenv("CHORUS_RANK");
  rep.rank = envRank ? std::atoi(envRank) : 0;
  if (api == "c") {
    runCApiChecks(rep);
  } else {
    runCppChecks(rep);
  }
  std::printf("rank %d: %d passed, %d failed\n", rep.rank, rep.passed, rep.failed);
  return rep.failed == 0 ? 0 : 1;
}
