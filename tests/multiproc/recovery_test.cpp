// chorus_recovery_test: what a job does after a failure.
//   chorus-run -n 5 chorus_recovery_test --case shrink      rank 3 dies mid-sequence; the
//       others get an error naming it, shrink to 4 ranks and finish the sequence there;
//   chorus-run -n 5 chorus_recovery_test --case shrink_again  the same, then job rank 1 dies
//       between calls and the 3 others shrink, then job rank 4 dies: a shrunk communicator's
//       ranks, shrinks and errors number the members its own way (job 4 is rank 3, then 2);
//   chorus-run -n 5 chorus_recovery_test --case shrink_union  job ranks 3 and 4 die in one
//       call; rank 0 excludes only 3, the others what their errors named: both go;
//   chorus-run -n 3 chorus_recovery_test --case abort       a second thread aborts a call
//       that cannot finish (rank 2 is busy): the wait returns at once with the reason;
//   chorus-run -n 3 chorus_recovery_test --case nonblocking the C API on a non-blocking
//       communicator: calls return chorusInProgress, chorusCommGetAsyncError drives them.
// Results are checked against values computed here; any problem prints "FAIL".
#include <chorus/chorus.h>
#include <chorus/chorus.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using chorus::DataType;
using chorus::RedOp;
constexpr size_t kCount = 1000;
constexpr int kCalls = 20, kVictim = 3, kDeathAt = 7;

int32_t value(int parentRank, int call, size_t i) {
  return parentRank * 1000 + call * 10 + static_cast<int32_t>(i % 7);
}

bool check(const std::vector<int32_t>& out, const std::vector<int>& members, int call, int rank) {
  for (size_t i = 0; i < kCount; ++i) {
    int32_t want = 0;
    for (int m : members) want += value(m, call, i);
    if (out[i] != want) {
      std::printf("rank %d: FAIL: call %d element %zu: got %d, want %d\n", rank, call, i, out[i],
                  want);
      return false;
    }
  }
  return true;
}

int shrinkCase() {
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int rank = comm.rank(), n = comm.size();
  std::vector<int> members;
  for (int r = 0; r < n; ++r) members.push_back(r);
  std::vector<int32_t> in(kCount), out(kCount);
  int call = 0;
  std::string error;
  auto t0 = Clock::now();
  try {
    for (; call < kCalls; ++call) {
      if (rank == kVictim && call == kDeathAt) std::raise(SIGKILL);
      for (size_t i = 0; i < kCount; ++i) in[i] = value(rank, call, i);
      comm.allReduce(in.data(), out.data(), kCount, DataType::Int32, RedOp::Sum).wait();
      if (!check(out, members, call, rank)) return 1;
    }
    std::printf("rank %d: FAIL: no error although rank %d died\n", rank, kVictim);
    return 1;
  } catch (const chorus::Error& e) {
    error = e.what();
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (error.find("rank " + std::to_string(kVictim)) == std::string::npos) {
    std::printf("rank %d: FAIL: the error does not name rank %d: %s\n", rank, kVictim,
                error.c_str());
    return 1;
  }
  std::printf("rank %d: call %d failed after %.0f ms: %s\n", rank, call, ms, error.c_str());
  const int dead[] = {kVictim};
  chorus::Communicator smaller = comm.shrink(dead);
  members.erase(members.begin() + kVictim);
  if (smaller.size() != n - 1) {
    std::printf("rank %d: FAIL: shrunk to %d ranks\n", rank, smaller.size());
    return 1;
  }
  for (; call < kCalls; ++call) {  // redo the failed call, then the rest
    for (size_t i = 0; i < kCount; ++i) in[i] = value(rank, call, i);
    smaller.allReduce(in.data(), out.data(), kCount, DataType::Int32, RedOp::Sum).wait();
    if (!check(out, members, call, rank)) return 1;
  }
  if (smaller.rank() == 0)
    std::printf("survivors finished on %d ranks: calls %d..%d correct\n", smaller.size(), kDeathAt,
                kCalls - 1);
  return 0;
}

// The calls of one communicator of `members` (job ranks), from `call` on: each job rank
// contributes value(jobRank, call, i); the sums must be the members'. Returns false on a
// wrong result; throws the call's Error.
bool runCalls(chorus::Communicator& c, const std::vector<int>& members, int jobRank, int& call,
              int until, int dieAt = -1) {
  std::vector<int32_t> in(kCount), out(kCount);
  for (; call < until; ++call) {
    if (call == dieAt) std::raise(SIGKILL);
    for (size_t i = 0; i < kCount; ++i) in[i] = value(jobRank, call, i);
    c.allReduce(in.data(), out.data(), kCount, DataType::Int32, RedOp::Sum).wait();
    if (!check(out, members, call, jobRank)) return false;
  }
  return true;
}

// The communicator's rank and size must be this job rank's place among `members`.
bool numbered(const chorus::Communicator& c, const std::vector<int>& members, int jobRank,
              const char* what) {
  const int want =
      static_cast<int>(std::find(members.begin(), members.end(), jobRank) - members.begin());
  if (c.size() == static_cast<int>(members.size()) && c.rank() == want) return true;
  std::printf("job rank %d: FAIL: %s is rank %d of %d, want %d of %zu\n", jobRank, what, c.rank(),
              c.size(), want, members.size());
  return false;
}

// The calls from `call` on, `dying` raising SIGKILL at kDeathAt: the survivors' Error, or
// nothing (with a FAIL line naming `who`) when no call failed.
std::optional<chorus::Error> callsUntilDeath(chorus::Communicator& c,
                                             const std::vector<int>& members, int jobRank,
                                             int& call, bool dying, const char* who) {
  try {
    runCalls(c, members, jobRank, call, kCalls, dying ? kDeathAt : -1);
  } catch (const chorus::Error& e) {
    return e;
  }
  std::printf("job rank %d: FAIL: no error although %s died\n", jobRank, who);
  return std::nullopt;
}

// The world of a 5-rank case; false (with a FAIL line) on another size.
bool fiveRanks(const chorus::Communicator& comm) {
  if (comm.size() == 5) return true;
  std::printf("FAIL: run on 5 ranks\n");
  return false;
}

int shrinkAgainCase() {
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int job = comm.rank();
  std::vector<int> members = {0, 1, 2, 3, 4};
  if (!fiveRanks(comm)) return 1;
  int call = 0;
  const auto first = callsUntilDeath(comm, members, job, call, job == 3, "job rank 3");
  if (!first) return 1;
  if (std::string(first->what()).find("rank 3") == std::string::npos) {
    std::printf("job rank %d: FAIL: the error does not name rank 3: %s\n", job, first->what());
    return 1;
  }
  const int dead[] = {3};
  chorus::Communicator smaller = comm.shrink(dead);
  members = {0, 1, 2, 4};
  if (!numbered(smaller, members, job, "the first shrink") ||
      !runCalls(smaller, members, job, call, kCalls))
    return 1;
  // Job rank 1 (rank 1 here too) dies between calls; the others shrink without it.
  if (job == 1) std::raise(SIGKILL);
  const int leaving[] = {1};
  chorus::Communicator again = smaller.shrink(leaving);
  members = {0, 2, 4};
  call = 0;
  if (!numbered(again, members, job, "the second shrink") ||
      !runCalls(again, members, job, call, kDeathAt))
    return 1;
  // Job rank 4, rank 2 here (3 in `smaller`), dies: the error names it as rank 2.
  const auto second = callsUntilDeath(again, members, job, call, job == 4, "job rank 4");
  if (!second) return 1;
  const std::string what = second->what();
  const std::vector<int> failed = second->failedRanks();
  if (what.find("rank 2") == std::string::npos || what.find("rank 4") != std::string::npos ||
      what.find("rank 3") != std::string::npos || failed != std::vector<int>{2}) {
    std::printf(
        "job rank %d: FAIL: the error does not name job rank 4 as rank 2 (%zu failed "
        "ranks, first %d): %s\n",
        job, failed.size(), failed.empty() ? -1 : failed[0], what.c_str());
    return 1;
  }
  std::printf("job rank %d: call %d failed: %s\n", job, call, what.c_str());
  const int dead2[] = {2};
  chorus::Communicator last = again.shrink(dead2);
  members = {0, 2};
  if (!numbered(last, members, job, "the third shrink") ||
      !runCalls(last, members, job, call, kCalls))
    return 1;
  if (last.rank() == 0)
    std::printf("survivors 0 and 2 finished after three shrinks: calls %d..%d correct\n", kDeathAt,
                kCalls - 1);
  return 0;
}

// Two ranks die in one call (job ranks 3 and 4): the survivors learn of the deaths apart,
// and rank 0 passes only {3} to shrink while ranks 1 and 2 pass what their errors named.
// The survivors must agree on excluding both: 3 ranks, numbered 0..2, correct sums.
int shrinkUnionCase() {
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int job = comm.rank();
  std::vector<int> members = {0, 1, 2, 3, 4};
  if (!fiveRanks(comm)) return 1;
  int call = 0;
  const auto error = callsUntilDeath(comm, members, job, call, job >= 3, "job ranks 3 and 4");
  if (!error) return 1;
  std::vector<int> exclude = job == 0 ? std::vector<int>{3} : error->failedRanks();
  std::string list;
  for (int r : exclude) list += " " + std::to_string(r);
  std::printf("job rank %d: shrinks excluding%s\n", job, list.c_str());
  chorus::Communicator smaller = comm.shrink(exclude);
  members = {0, 1, 2};
  if (!numbered(smaller, members, job, "the shrink") ||
      !runCalls(smaller, members, job, call, kCalls))
    return 1;
  if (smaller.rank() == 0)
    std::printf("survivors agreed on excluding job ranks 3 and 4: calls %d..%d correct\n", kDeathAt,
                kCalls - 1);
  return 0;
}

int abortCase() {
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int rank = comm.rank();
  std::vector<int32_t> in(kCount, 1), out(kCount);
  if (rank == 2) {  // busy elsewhere; the others' call cannot finish
    std::this_thread::sleep_for(std::chrono::seconds(3));
    return 0;
  }
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    comm.abort();
  });
  const auto t0 = Clock::now();
  bool ok = false;
  try {
    comm.allReduce(in.data(), out.data(), kCount, DataType::Int32, RedOp::Sum).wait();
    std::printf("rank %d: FAIL: completed without rank 2\n", rank);
  } catch (const chorus::Error& e) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    ok = std::string(e.what()).find("aborted") != std::string::npos && ms < 2000;
    std::printf("rank %d: %sreturned after %.0f ms: %s\n", rank, ok ? "" : "FAIL: ", ms, e.what());
  }
  aborter.join();
  const chorus::Result state = comm.asyncError();
  if (state == chorus::Result::Success || state == chorus::Result::InProgress) {
    std::printf("rank %d: FAIL: asyncError says %s after the abort\n", rank,
                chorus::toString(state));
    ok = false;
  }
  if (ok && rank == 0) std::printf("abort from another thread: ok\n");
  return ok ? 0 : 1;
}

int nonblockingCase() {
  chorusComm_t nb = nullptr;
  chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
  config.blocking = 0;
  if (chorusCommInitEnvConfig(&nb, &config) != chorusSuccess) {
    std::printf("FAIL: init: %s\n", chorusGetLastError(nullptr));
    return 1;
  }
  int rank = 0, n = 0;
  chorusCommUserRank(nb, &rank);
  chorusCommCount(nb, &n);
  std::vector<int32_t> in(1 << 20), out(1 << 20);
  for (size_t i = 0; i < in.size(); ++i) in[i] = rank + static_cast<int32_t>(i % 5);
  int inProgress = 0, polls = 0;
  chorusResult_t r = chorusAllReduce(in.data(), out.data(), in.size(), chorusInt32, chorusSum, nb);
  if (r != chorusSuccess && r != chorusInProgress) {
    std::printf("rank %d: FAIL: %s\n", rank, chorusGetLastError(nb));
    return 1;
  }
  inProgress += r == chorusInProgress;
  chorusResult_t state = chorusInProgress;
  const auto t0 = Clock::now();
  while (state == chorusInProgress && Clock::now() - t0 < std::chrono::seconds(30)) {
    if (chorusCommGetAsyncError(nb, &state) != chorusSuccess) break;
    ++polls;
  }
  bool ok = state == chorusSuccess;
  for (size_t i = 0; ok && i < out.size(); ++i)
    ok = out[i] == n * (n - 1) / 2 + n * static_cast<int32_t>(i % 5);
  std::printf("rank %d: %snon-blocking all-reduce: %s after %d polls\n", rank, ok ? "" : "FAIL: ",
              r == chorusInProgress ? "in progress at return" : "complete at return", polls);
  chorusCommDestroy(nb);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "shrink";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--case") == 0) which = argv[i + 1];
  try {
    if (which == "shrink") return shrinkCase();
    if (which == "shrink_again") return shrinkAgainCase();
    if (which == "shrink_union") return shrinkUnionCase();
    if (which == "abort") return abortCase();
    if (which == "nonblocking") return nonblockingCase();
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown case %s\n", which.c_str());
  return 2;
}
