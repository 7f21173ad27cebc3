// The C API half of chorus_errors_test: every bad argument returns chorusInvalidArgument
// (never aborts, never blocks), chorusGetErrorString names every result, and
// chorusGetLastError holds a message that names the problem.
#include "errors_common.hpp"
#include "raw_enum_calls.h"

#include <chorus/chorus.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace chorus_test {
namespace {

using Clock = std::chrono::steady_clock;

std::string lastError(chorusComm_t comm) {
  const char* m = chorusGetLastError(comm);
  return m ? m : "(null)";
}

// fn must return chorusInvalidArgument within 10 s with a last-error message naming the
// problem (`comm` is the communicator whose chorusGetLastError to read; may be null).
void expectInvalidC(Report& rep, const std::string& check, std::initializer_list<const char*> words,
                    chorusComm_t comm, const std::function<chorusResult_t()>& fn) {
  rep.watchdog.arm(check, kCheckLimit);
  const auto t0 = Clock::now();
  chorusResult_t res = fn();
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::string msg = lastError(comm);
  char took[48];
  std::snprintf(took, sizeof took, " (%.1f ms)", ms);
  if (res != chorusInvalidArgument) {
    const char* s = chorusGetErrorString(res);
    rep.fail(check, "returned " + std::to_string(res) + " (" + (s ? s : "null") +
                        "), expected chorusInvalidArgument; last error: " + msg);
  } else if (ms > 10000) {
    rep.fail(check, std::string("returned only after") + took);
  } else if (!mentionsAny(msg, words)) {
    rep.fail(check, "chorusGetLastError does not name the problem (" + joinWords(words) + "): '" +
                        msg + "'");
  } else {
    rep.pass(check, msg + took);
  }
  rep.watchdog.disarm();
}

void staticChecks(Report& rep) {
  int version = 0;
  if (chorusGetVersion(&version) != chorusSuccess || version != CHORUS_VERSION_CODE) {
    rep.fail("chorusGetVersion", "got " + std::to_string(version) + ", expected " +
                                     std::to_string(CHORUS_VERSION_CODE));
  } else {
    rep.pass("chorusGetVersion", std::to_string(version));
  }
  if (chorusGetVersion(nullptr) != chorusInvalidArgument) {
    rep.fail("chorusGetVersion(NULL)", "did not return chorusInvalidArgument");
  } else {
    rep.pass("chorusGetVersion(NULL)", "chorusInvalidArgument");
  }
  for (int r = 0; r <= chorusNumResults; ++r) {
    const char* s = chorusGetErrorString(static_cast<chorusResult_t>(r));
    std::string check = "chorusGetErrorString(" + std::to_string(r) + ")";
    if (!s || (r < chorusNumResults && !*s)) {
      rep.fail(check, "null or empty");
    } else {
      rep.pass(check, s);
    }
  }
  for (int r : {-1, 99}) {
    const char* s = rawErrorString(r);
    std::string check = "chorusGetErrorString(" + std::to_string(r) + ")";
    s ? rep.pass(check, s) : rep.fail(check, "null");
  }
}

void initChecks(Report& rep) {
  chorusUniqueId id;
  if (chorusGetUniqueId(&id) != chorusSuccess) {
    rep.fail("chorusGetUniqueId", lastError(nullptr));
    return;
  }
  rep.pass("chorusGetUniqueId", "ok");
  expectInvalidC(rep, "chorusGetUniqueId(NULL)", {"null", "id"}, nullptr,
                 [] { return chorusGetUniqueId(nullptr); });
  chorusComm_t comm = nullptr;
  expectInvalidC(rep, "chorusCommInitRank nranks=0", {"nranks", "size", "rank"}, nullptr,
                 [&] { return chorusCommInitRank(&comm, 0, id, 0); });
  expectInvalidC(rep, "chorusCommInitRank rank=2 nranks=2", {"rank"}, nullptr,
                 [&] { return chorusCommInitRank(&comm, 2, id, 2); });
  expectInvalidC(rep, "chorusCommInitRank rank=-1", {"rank"}, nullptr,
                 [&] { return chorusCommInitRank(&comm, 2, id, -1); });
  expectInvalidC(rep, "chorusCommInitRank comm=NULL", {"null", "comm"}, nullptr,
                 [&] { return chorusCommInitRank(nullptr, 1, id, 0); });
  chorusUniqueId zero{};
  expectInvalidC(rep, "chorusCommInitRank all-zero id", {"id", "unique"}, nullptr,
                 [&] { return chorusCommInitRank(&comm, 2, zero, 0); });
  expectInvalidC(rep, "chorusCommInitEnv(NULL)", {"null", "comm"}, nullptr,
                 [] { return chorusCommInitEnv(nullptr); });
}

void commChecks(Report& rep, chorusComm_t comm) {
  int n = 0;
  int rank = -1;
  chorusCommCount(comm, &n);
  chorusCommUserRank(comm, &rank);
  if (n < 1 || rank != rep.rank) {
    rep.fail("chorusCommCount/UserRank", std::to_string(n) + "/" + std::to_string(rank));
    return;
  }
  rep.pass("chorusCommCount/UserRank", std::to_string(n) + "/" + std::to_string(rank));
  expectInvalidC(rep, "chorusCommCount count=NULL", {"null", "count"}, comm,
                 [&] { return chorusCommCount(comm, nullptr); });
  expectInvalidC(rep, "chorusCommUserRank comm=NULL", {"null", "comm"}, nullptr,
                 [&] { return chorusCommUserRank(nullptr, &rank); });
  // One host: every rank is local, in rank order.
  int localRank = -1, localSize = -1;
  if (chorusCommLocalRank(comm, &localRank) != chorusSuccess ||
      chorusCommLocalSize(comm, &localSize) != chorusSuccess || localRank != rank || localSize != n)
    rep.fail("chorusCommLocalRank/LocalSize",
             std::to_string(localRank) + "/" + std::to_string(localSize));
  else
    rep.pass("chorusCommLocalRank/LocalSize",
             std::to_string(localRank) + "/" + std::to_string(localSize));
  expectInvalidC(rep, "chorusCommLocalRank localRank=NULL", {"null", "localRank"}, comm,
                 [&] { return chorusCommLocalRank(comm, nullptr); });
  expectInvalidC(rep, "chorusCommLocalSize comm=NULL", {"null", "comm"}, nullptr,
                 [&] { return chorusCommLocalSize(nullptr, &localSize); });

  const int peer = (rank + 1) % n;
  std::vector<int64_t> a(16 * static_cast<size_t>(n), 1);
  std::vector<int64_t> b(16 * static_cast<size_t>(n), 2);
  int64_t* s = a.data();
  int64_t* r = b.data();
  const size_t c = 4;
  for (int t : {-1, 12, 99}) {
    std::string sfx = " type=" + std::to_string(t);
    auto w = {"type"};
    expectInvalidC(rep, "chorusAllReduce" + sfx, w, comm,
                   [&] { return rawAllReduce(s, r, c, t, chorusSum, comm); });
    expectInvalidC(rep, "chorusAllGather" + sfx, w, comm,
                   [&] { return rawAllGather(s, r, c, t, comm); });
    expectInvalidC(rep, "chorusReduceScatter" + sfx, w, comm,
                   [&] { return rawReduceScatter(s, r, c, t, comm); });
    expectInvalidC(rep, "chorusBroadcast" + sfx, w, comm,
                   [&] { return rawBroadcast(s, r, c, t, comm); });
    expectInvalidC(rep, "chorusReduce" + sfx, w, comm, [&] { return rawReduce(s, r, c, t, comm); });
  }
  for (int op : {-1, 5, 99}) {
    std::string sfx = " op=" + std::to_string(op);
    expectInvalidC(rep, "chorusAllReduce" + sfx, {"op"}, comm,
                   [&] { return rawAllReduce(s, r, c, chorusFloat32, op, comm); });
  }
  expectInvalidC(rep, "chorusBroadcast root=nranks", {"root"}, comm,
                 [&] { return chorusBroadcast(s, r, c, chorusInt64, n, comm); });
  expectInvalidC(rep, "chorusReduce root=-1", {"root"}, comm,
                 [&] { return chorusReduce(s, r, c, chorusInt64, chorusSum, -1, comm); });
  expectInvalidC(rep, "chorusSend peer=nranks", {"peer"}, comm,
                 [&] { return chorusSend(s, c, chorusInt64, n, comm); });
  expectInvalidC(rep, "chorusRecv peer=-1", {"peer"}, comm,
                 [&] { return chorusRecv(r, c, chorusInt64, -1, comm); });
  expectInvalidC(rep, "chorusAllReduce null send", {"null", "buffer"}, comm,
                 [&] { return chorusAllReduce(nullptr, r, c, chorusInt64, chorusSum, comm); });
  if (n > 1) {  // on one rank there is no valid peer
    expectInvalidC(rep, "chorusSend null buffer", {"null", "buffer"}, comm,
                   [&] { return chorusSend(nullptr, c, chorusInt64, peer, comm); });
  }
  expectInvalidC(rep, "chorusAllReduce comm=NULL", {"null", "comm"}, nullptr,
                 [&] { return chorusAllReduce(s, r, c, chorusInt64, chorusSum, nullptr); });

  // Still usable: a correct all-reduce.
  rep.watchdog.arm("chorusAllReduce after the errors", kCheckLimit);
  int32_t v[3] = {rank + 1, rank + 1, rank + 1};
  chorusResult_t res = chorusAllReduce(v, v, 3, chorusInt32, chorusSum, comm);
  if (res != chorusSuccess || v[0] != n * (n + 1) / 2 || v[2] != v[0]) {
    rep.fail("usable after the argument errors", "result " + std::to_string(res) + " value " +
                                                     std::to_string(v[0]) + ": " + lastError(comm));
  } else {
    rep.pass("usable after the argument errors", "chorusAllReduce correct");
  }
  rep.watchdog.disarm();
}

}  // namespace

int runCApiChecks(Report& rep) {
  staticChecks(rep);
  initChecks(rep);
  chorusComm_t comm = nullptr;
  rep.watchdog.arm("chorusCommInitEnv", std::chrono::seconds(60));
  chorusResult_t res = chorusCommInitEnv(&comm);
  rep.watchdog.disarm();
  if (res != chorusSuccess || comm == nullptr) {
    rep.fail("chorusCommInitEnv", std::to_string(res) + ": " + lastError(nullptr));
    return 1;
  }
  commChecks(rep, comm);
  rep.watchdog.arm("chorusCommDestroy", kCheckLimit);
  res = chorusCommDestroy(comm);
  res == chorusSuccess ? rep.pass("chorusCommDestroy", "ok")
                       : rep.fail("chorusCommDestroy", std::to_string(res));
  rep.watchdog.disarm();
  return 0;
}

}  // namespace chorus_test
