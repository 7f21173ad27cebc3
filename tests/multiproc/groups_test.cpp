// chorus_groups_test: group calls, split and barrier across real processes.
//   chorus-run -n 3 chorus_groups_test --case exchange --mib 64 [--api c|c-nonblocking]
//       one group of sends and receives with every rank (itself included) at once, MIB
//       MiB each way per peer, posted in opposite peer orders on the two sides; the C API
//       variant uses chorusGroupStart/End on blocking calls (which deadlock without it),
//       c-nonblocking on a non-blocking communicator driven by chorusCommGetAsyncError;
//   chorus-run -n 5 chorus_groups_test --case split
//       odd/even halves (key reverses the order) with collectives on both halves and on
//       the parent in one group; a NoColor rank; a split of a split; barriers (late
//       ranks arrive later; after it every rank must see every rank's file);
//   chorus_groups_test --case inprocess --transport shm|tcp [--ranks 4]
//       several ranks in this one process (initAll / chorusCommInitAll), driven from one
//       thread through groups and from one thread each;
//   chorus-run -n 3 chorus_groups_test --case small
//       small all-reduces (the shm mailbox path, whose op state is reused once let go):
//       several in flight at once, finished ones still held while later ones run, some in
//       a group, with barriers between; every result checked; then 100 blocking ones,
//       each let go before the next (the op state reused); then one the last rank
//       makes late: rank 0's wait with a timeout returns false before it;
//   chorus-run -n 3 chorus_groups_test --case bind
//       where the ranks outnumber the process's cores (all of the machine's), each rank's
//       thread must be bound to core (rank modulo cores) once its communicator exists;
//       otherwise, or with CHORUS_BIND_CORE=0, its affinity must be as it was; then one
//       checked all-reduce;
//   chorus-run -n 4 chorus_groups_test --case kill --victim 2
//       the victim dies by SIGKILL inside a group exchange; the others must fail with an
//       error naming it, the call and its sequence number, and exit 0.
// Every value is computed here (never from the library); any problem prints "FAIL" and
// exits non-zero. A watchdog turns a hang into a failure.
#include "watchdog.hpp"

#include <chorus/chorus.h>
#include <chorus/chorus.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

namespace {

using chorus::DataType;
using chorus::RedOp;
using chorus_test::Watchdog;

// Element i of the message from rank `from` to rank `to`.
uint32_t word(int from, int to, size_t i) {
  uint64_t x = (static_cast<uint64_t>(from) << 40) ^ (static_cast<uint64_t>(to) << 20) ^ i;
  x *= 0x9E3779B97F4A7C15ull;
  return static_cast<uint32_t>(x >> 32);
}

int failures = 0;
void fail(int rank, const std::string& what) {
  std::printf("FAIL rank %d: %s\n", rank, what.c_str());
  std::fflush(stdout);
  ++failures;
}

// Sends word(rank, p, .) to every p and receives from every p, all in one group: sends in
// ascending peer order, receives in descending (the peers see the opposite).
int exchangeCase(size_t mib, bool cApi, bool nonBlocking) {
  Watchdog dog;
  dog.arm("exchange", std::chrono::seconds(240));
  chorus::Communicator comm;
  chorusComm_t c = nullptr;
  int rank, n;
  if (cApi) {
    chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
    config.blocking = nonBlocking ? 0 : 1;
    if (chorusCommInitEnvConfig(&c, &config) != chorusSuccess)
      return fail(-1, chorusGetLastError(nullptr)), 1;
    chorusCommUserRank(c, &rank);
    chorusCommCount(c, &n);
  } else {
    comm = chorus::Communicator::initFromEnv();
    rank = comm.rank();
    n = comm.size();
  }
  const size_t count = (mib << 20) / sizeof(uint32_t);
  std::vector<std::vector<uint32_t>> out(n), in(n);
  for (int p = 0; p < n; ++p) {
    out[p].resize(count);
    for (size_t i = 0; i < count; ++i) out[p][i] = word(rank, p, i);
    in[p].assign(count, 0xdeadbeef);
  }
  if (cApi) {
    chorusResult_t r = chorusGroupStart();
    for (int p = 0; p < n && r == chorusSuccess; ++p)
      r = chorusSend(out[p].data(), count, chorusUint32, p, c);
    for (int p = n - 1; p >= 0 && r == chorusSuccess; --p)
      r = chorusRecv(in[p].data(), count, chorusUint32, p, c);
    chorusResult_t end = chorusGroupEnd();
    // Non-blocking: chorusInProgress until chorusCommGetAsyncError has driven it all.
    while (nonBlocking && end == chorusInProgress) {
      chorusResult_t state = chorusInProgress;
      if (chorusCommGetAsyncError(c, &state) != chorusSuccess) break;
      end = state;
    }
    if (r != chorusSuccess || end != chorusSuccess)
      return fail(rank, std::string("group: ") + chorusGetLastError(nullptr)), 1;
    chorusResult_t barrier = chorusBarrier(c);
    while (nonBlocking && barrier == chorusInProgress) chorusCommGetAsyncError(c, &barrier);
    if (barrier != chorusSuccess)
      return fail(rank, std::string("chorusBarrier: ") + chorusGetLastError(nullptr)), 1;
  } else {
    comm.group([&] {
          for (int p = 0; p < n; ++p) comm.send(out[p].data(), count, DataType::Uint32, p);
          for (int p = n - 1; p >= 0; --p) comm.recv(in[p].data(), count, DataType::Uint32, p);
        })
        .wait();
  }
  for (int p = 0; p < n; ++p)
    for (size_t i = 0; i < count; ++i)
      if (in[p][i] != word(p, rank, i)) {
        fail(rank, "from rank " + std::to_string(p) + " element " + std::to_string(i) + ": got " +
                       std::to_string(in[p][i]) + ", want " + std::to_string(word(p, rank, i)));
        break;
      }
  if (c) chorusCommDestroy(c);
  if (failures == 0)
    std::printf("rank %d: exchanged %zu MiB with each of %d ranks: ok\n", rank, mib, n);
  return failures ? 1 : 0;
}

// allReduce (sum of f(parent rank)) and allGather (parent ranks) on `part`, checked
// against `members` (parent ranks in the part's order). Queued in the open group if any.
struct PartCheck {
  chorus::Communicator* part;
  std::vector<int> members;
  int64_t mine[2];
  std::vector<int64_t> sum = std::vector<int64_t>(3), gathered;
  std::vector<int64_t> contribution;
  std::vector<chorus::Work> works;
  void start(int parentRank) {
    mine[0] = parentRank;
    contribution = {parentRank + 1, 10 * parentRank, -parentRank * parentRank};
    gathered.assign(members.size(), -1);
    works.push_back(
        part->allReduce(contribution.data(), sum.data(), 3, DataType::Int64, RedOp::Sum));
    works.push_back(part->allGather(mine, gathered.data(), 1, DataType::Int64));
  }
  void check(int parentRank, const char* what) {
    for (auto& w : works) w.wait();
    int64_t want[3] = {0, 0, 0};
    for (int m : members) {
      want[0] += m + 1;
      want[1] += 10 * m;
      want[2] -= m * m;
    }
    for (int i = 0; i < 3; ++i)
      if (sum[i] != want[i])
        fail(parentRank, std::string(what) + ": allReduce[" + std::to_string(i) +
                             "] = " + std::to_string(sum[i]) + ", want " + std::to_string(want[i]));
    for (size_t i = 0; i < members.size(); ++i)
      if (gathered[i] != members[i])
        fail(parentRank, std::string(what) + ": allGather[" + std::to_string(i) + "] = " +
                             std::to_string(gathered[i]) + ", want " + std::to_string(members[i]));
  }
};

// Every rank leaves a file, late ranks later; after the barrier each must see all of them.
void checkBarrier(chorus::Communicator& comm) {
  const int rank = comm.rank(), n = comm.size();
  char dir[256] = "";
  if (rank == 0) {
    std::snprintf(dir, sizeof dir, "%s/chorus-barrier-XXXXXX",
                  std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) fail(rank, "mkdtemp failed");
  }
  comm.broadcast(dir, dir, sizeof dir, DataType::Uint8, 0).wait();
  auto mark = [&](int r) { return std::string(dir) + "/" + std::to_string(r); };
  std::this_thread::sleep_for(std::chrono::milliseconds(40 * (n - 1 - rank)));
  if (FILE* f = std::fopen(mark(rank).c_str(), "w")) std::fclose(f);
  comm.barrier().wait();
  for (int r = 0; r < n; ++r)
    if (access(mark(r).c_str(), F_OK) != 0)
      fail(rank, "after the barrier, rank " + std::to_string(r) + " has not arrived");
  comm.barrier().wait();  // everyone looked: rank 0 may clean up
  if (rank == 0) {
    for (int r = 0; r < n; ++r) std::remove(mark(r).c_str());
    rmdir(dir);
  }
}

int splitCase() {
  Watchdog dog;
  dog.arm("split", std::chrono::seconds(120));
  chorus::Communicator world = chorus::Communicator::initFromEnv();
  const int rank = world.rank(), n = world.size();
  // Odd and even halves, ordered by descending parent rank (key = -rank).
  chorus::Communicator half = world.split(rank % 2, -rank);
  std::vector<int> members;
  for (int r = n - 1; r >= 0; --r)
    if (r % 2 == rank % 2) members.push_back(r);
  const int wantRank =
      static_cast<int>(std::find(members.begin(), members.end(), rank) - members.begin());
  if (!half || half.size() != static_cast<int>(members.size()) || half.rank() != wantRank)
    fail(rank, "half: rank " + std::to_string(half ? half.rank() : -1) + " of " +
                   std::to_string(half ? half.size() : -1) + ", want " + std::to_string(wantRank) +
                   " of " + std::to_string(members.size()));
  // Both halves and the parent in one group: the parent's calls and the half's progress
  // together.
  std::vector<int> everyone;
  for (int r = 0; r < n; ++r) everyone.push_back(r);
  PartCheck onHalf{&half, members}, onWorld{&world, everyone};
  chorus::group([&] {
    onHalf.start(rank);
    onWorld.start(rank);
  }).wait();
  onHalf.check(rank, "half");
  onWorld.check(rank, "world");

  // Rank 0 sits out; the others keep their order.
  chorus::Communicator rest = world.split(rank == 0 ? chorus::NoColor : 7, 0);
  if (rank == 0 && rest) fail(rank, "NoColor gave a communicator");
  if (rank != 0) {
    if (!rest || rest.size() != n - 1 || rest.rank() != rank - 1) {
      fail(rank, "rest: wrong rank or size");
    } else {
      std::vector<int> others(everyone.begin() + 1, everyone.end());
      PartCheck onRest{&rest, others};
      onRest.start(rank);
      rest.barrier().wait();
      chorus::Communicator quarter = rest.split(0, rank % 2);  // a split of a split
      std::vector<int> order;
      for (int parity : {0, 1})
        for (int r : others)
          if (r % 2 == parity) order.push_back(r);
      PartCheck onQuarter{&quarter, order};
      onQuarter.start(rank);
      quarter.barrier().wait();
      onRest.check(rank, "rest");
      onQuarter.check(rank, "split of rest");
    }
  }
  checkBarrier(world);
  if (half) checkBarrier(half);
  if (failures == 0) std::printf("rank %d: split checks ok\n", rank);
  return failures ? 1 : 0;
}

int killCase(int victim) {
  Watchdog dog;
  dog.arm("kill", std::chrono::seconds(90));
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int rank = comm.rank(), n = comm.size();
  const size_t count = size_t{4} << 20;  // 16 MiB per peer: more than any transport buffers
  std::vector<uint32_t> out(count, rank), in(count * n);
  try {
    for (int round = 0; round < 3; ++round) {
      chorus::Group group;
      for (int p = 0; p < n; ++p) comm.send(out.data(), count, DataType::Uint32, p);
      for (int p = 0; p < n; ++p) comm.recv(in.data() + p * count, count, DataType::Uint32, p);
      chorus::Work all = group.end();
      if (rank == victim && round == 1) {
        all.test();  // some of the round is under way
        std::raise(SIGKILL);
      }
      all.wait();
    }
    fail(rank, "the group finished although rank " + std::to_string(victim) + " died");
  } catch (const chorus::Error& e) {
    const std::string what = e.what();
    const std::string dead = "rank " + std::to_string(victim);
    if (what.find(dead) == std::string::npos || what.find('#') == std::string::npos ||
        (what.find("send #") == std::string::npos && what.find("recv #") == std::string::npos))
      fail(rank, "error does not name " + dead + " and a call with its number: " + what);
    else
      std::printf("rank %d: error names the dead rank: %s\n", rank, what.c_str());
  }
  return failures ? 1 : 0;
}

// Small all-reduces on the mailbox path in every pattern of holding and overlapping:
// rounds of `inFlight` calls issued before any is waited for, then all waited; the
// Works of the round before kept (and waited on again) while the next runs; a group of
// them; a barrier after each round. Sums are exact (small integers as floats).
// Blocking small all-reduces one after another, each Work let go before the next call:
// the library reuses the op state of the one before (prepareMailbox), so a field it fails
// to reset (done, error, the posted mark) shows up as a wrong or missing result here.
void blockingLoopCheck(chorus::Communicator& comm) {
  const int rank = comm.rank(), n = comm.size();
  for (int call = 0; call < 100; ++call) {
    int64_t in[3] = {call, rank, call * rank}, out[3] = {-1, -1, -1};
    comm.allReduce(in, out, 3, DataType::Int64, RedOp::Sum).wait();
    const int64_t want[3] = {int64_t{call} * n, int64_t{n} * (n - 1) / 2,
                             int64_t{call} * n * (n - 1) / 2};
    if (!std::equal(out, out + 3, want)) {
      fail(rank, "blocking small all-reduce " + std::to_string(call) + ": " +
                     std::to_string(out[0]) + ", " + std::to_string(out[1]) + ", " +
                     std::to_string(out[2]) + " instead of " + std::to_string(want[0]) + ", " +
                     std::to_string(want[1]) + ", " + std::to_string(want[2]));
      return;
    }
  }
}

// A small all-reduce that the last rank has not called yet: rank 0's wait with a 20 ms
// timeout must return false (the wait's pausing polls check the deadline too), then the
// call completes once the last rank makes it. The last rank calls only after rank 0's
// timed wait has returned (a file rank 0 creates), so nothing here depends on timing; it
// gives up after 10 s (and calls, so that a wait that misses its deadline shows up as a
// failure, not a hang).
void lateRankCheck(chorus::Communicator& comm) {
  const int rank = comm.rank(), n = comm.size();
  const char* port = std::getenv("CHORUS_PORT");
  const std::string flag = "/tmp/chorus-groups-small-late." + std::string(port ? port : "0");
  if (rank == n - 1) {
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (access(flag.c_str(), F_OK) != 0) {
      if (std::chrono::steady_clock::now() > giveUp) {
        fail(rank, "rank 0's wait(20 ms) did not return within 10 s");
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    unlink(flag.c_str());
  }
  float in[2] = {1.0f + rank, 10.0f * rank}, out[2] = {-1, -1};
  chorus::Work work = comm.allReduce(in, out, 2, DataType::Float32, RedOp::Sum);
  if (rank == 0) {
    if (work.wait(std::chrono::milliseconds(20)))
      fail(rank, "wait(20 ms) completed a small all-reduce the last rank had not called");
    if (FILE* f = std::fopen(flag.c_str(), "w"))
      std::fclose(f);
    else
      fail(rank, "cannot create " + flag);
  }
  work.wait();
  const float sum0 = n + n * (n - 1) / 2.0f, sum1 = 10.0f * n * (n - 1) / 2.0f;
  if (out[0] != sum0 || out[1] != sum1)
    fail(rank, "late small all-reduce: " + std::to_string(out[0]) + ", " + std::to_string(out[1]) +
                   " instead of " + std::to_string(sum0) + ", " + std::to_string(sum1));
}

int smallCase() {
  Watchdog dog;
  dog.arm("small", std::chrono::seconds(120));
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int rank = comm.rank(), n = comm.size();
  constexpr int kRounds = 200, kInFlight = 4, kCount = 2;  // 8 B
  auto input = [&](int round, int call, int r, int i) {
    return static_cast<float>((round * 7 + call * 3 + r * 5 + i) % 101);
  };
  auto expected = [&](int round, int call, int i) {
    float sum = 0;
    for (int r = 0; r < n; ++r) sum += input(round, call, r, i);
    return sum;
  };
  std::vector<std::vector<float>> in(kInFlight, std::vector<float>(kCount)),
      out(2 * kInFlight, std::vector<float>(kCount));
  std::vector<chorus::Work> previous;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<float>* results = &out[(round % 2) * kInFlight];
    std::vector<chorus::Work> works;
    auto issue = [&](int call) {
      for (int i = 0; i < kCount; ++i) in[call][i] = input(round, call, rank, i);
      std::fill(results[call].begin(), results[call].end(), -1.0f);
      return comm.allReduce(in[call].data(), results[call].data(), kCount, DataType::Float32,
                            RedOp::Sum);
    };
    if (round % 3 == 2) {
      chorus::Group group;
      for (int call = 0; call < kInFlight; ++call) issue(call);
      works.push_back(group.end());
    } else {
      for (int call = 0; call < kInFlight; ++call) works.push_back(issue(call));
    }
    for (chorus::Work& w : works) w.wait();
    for (chorus::Work& w : previous)
      if (!w.test()) fail(rank, "a finished small all-reduce reads as unfinished later");
    bool wrong = false;
    for (int call = 0; call < kInFlight && !wrong; ++call)
      for (int i = 0; i < kCount && !wrong; ++i)
        if (results[call][i] != expected(round, call, i)) {
          fail(rank, "small all-reduce round " + std::to_string(round) + " call " +
                         std::to_string(call) + ": " + std::to_string(results[call][i]) +
                         " instead of " + std::to_string(expected(round, call, i)));
          wrong = true;
        }
    if (wrong) break;
    previous = std::move(works);
    if (round % 10 == 0) comm.barrier().wait();
  }
  blockingLoopCheck(comm);
  lateRankCheck(comm);
  if (failures == 0) std::printf("rank %d: small all-reduce checks ok\n", rank);
  return failures ? 1 : 0;
}

// Several ranks in this process (initAll), over `transport`: one thread drives all of
// them through groups (collectives on every communicator, a ring of 8 MiB messages), then
// one thread per rank runs collectives and a barrier; then the same through the C API
// (chorusCommInitAll, chorusGroupStart/End, destroyed one after another from one thread).
int inProcessCase(const std::string& transport, int n) {
  Watchdog dog;
  dog.arm("inprocess", std::chrono::seconds(120));
  chorus::Options options;
  options.transport = transport;
  std::vector<chorus::Communicator> comms = chorus::Communicator::initAll(n, options);
  std::vector<int> everyone;
  for (int r = 0; r < n; ++r) {
    everyone.push_back(r);
    if (comms[r].rank() != r || comms[r].size() != n) fail(r, "initAll: wrong rank or size");
  }
  if (comms[0].transportName() != transport) fail(0, "transport " + comms[0].transportName());
  std::vector<PartCheck> checks;
  for (int r = 0; r < n; ++r) checks.push_back({&comms[r], everyone});
  const size_t count = size_t{2} << 20;  // 8 MiB of uint32
  std::vector<std::vector<uint32_t>> out(n), in(n);
  chorus::Work all = chorus::group([&] {
    for (int r = 0; r < n; ++r) {
      checks[r].start(r);
      out[r].resize(count);
      in[r].assign(count, 0);
      for (size_t i = 0; i < count; ++i) out[r][i] = word(r, (r + 1) % n, i);
      comms[r].send(out[r].data(), count, DataType::Uint32, (r + 1) % n);
      comms[r].recv(in[r].data(), count, DataType::Uint32, (r + n - 1) % n);
    }
  });
  all.wait();
  for (int r = 0; r < n; ++r) {
    checks[r].check(r, "one thread, group");
    const int from = (r + n - 1) % n;
    for (size_t i = 0; i < count; ++i)
      if (in[r][i] != word(from, r, i)) {
        fail(r, "ring message from " + std::to_string(from) + " wrong at " + std::to_string(i));
        break;
      }
  }
  std::vector<PartCheck> perThread;
  for (int r = 0; r < n; ++r) perThread.push_back({&comms[r], everyone});
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        perThread[r].start(r);
        comms[r].barrier().wait();
        perThread[r].check(r, "thread per rank");
      } catch (const std::exception& e) {
        fail(r, e.what());
      }
    });
  for (auto& t : threads) t.join();
  // Splits of these (a thread per rank, as they meet), destroyed one after another from
  // this thread: each must know its peers live here and skip the barrier with them.
  std::vector<chorus::Communicator> halves(n);
  threads.clear();
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        halves[r] = comms[r].split(r % 2, r);
        int32_t v = r, sum = -1;
        halves[r].allReduce(&v, &sum, 1, DataType::Int32, chorus::RedOp::Sum).wait();
        int32_t want = 0;
        for (int q = r % 2; q < n; q += 2) want += q;
        if (sum != want) fail(r, "split of initAll: sum " + std::to_string(sum));
      } catch (const std::exception& e) {
        fail(r, std::string("split of initAll: ") + e.what());
      }
    });
  for (auto& t : threads) t.join();
  const auto destroyBegan = std::chrono::steady_clock::now();
  halves.clear();
  const double destroySeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - destroyBegan).count();
  if (destroySeconds > 5)
    fail(-1, "destroying the splits of initAll one by one took " + std::to_string(destroySeconds) +
                 " s (each waited for its peers)");
  comms.clear();

  std::vector<chorusComm_t> c(n);
  if (chorusCommInitAll(c.data(), n, nullptr) != chorusSuccess)
    return fail(-1, chorusGetLastError(nullptr)), 1;
  std::vector<int32_t> values(n), sums(n, -1);
  chorusResult_t r = chorusGroupStart();
  for (int i = 0; i < n && r == chorusSuccess; ++i) {
    values[i] = 3 * i + 1;
    r = chorusAllReduce(&values[i], &sums[i], 1, chorusInt32, chorusSum, c[i]);
  }
  if (chorusGroupEnd() != chorusSuccess || r != chorusSuccess)
    fail(-1, std::string("C group: ") + chorusGetLastError(nullptr));
  for (int i = 0; i < n; ++i) {
    if (sums[i] != n * (3 * (n - 1) + 2) / 2)
      fail(i, "C allReduce in a group: " + std::to_string(sums[i]));
    chorusCommDestroy(c[i]);
  }
  if (failures == 0) std::printf("%d ranks in one process over %s: ok\n", n, transport.c_str());
  return failures ? 1 : 0;
}

int bindCase() {
  Watchdog dog;
  dog.arm("bind", std::chrono::seconds(60));
  cpu_set_t before, after;
  if (sched_getaffinity(0, sizeof(before), &before) != 0) {
    std::printf("FAIL: sched_getaffinity\n");
    return 1;
  }
  const int cores = CPU_COUNT(&before);
  const char* setting = std::getenv("CHORUS_BIND_CORE");
  const bool enabled = !setting || std::string(setting) != "0";
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int rank = comm.rank(), n = comm.size();
  sched_getaffinity(0, sizeof(after), &after);
  const bool bound = enabled && n > cores && cores >= 2 && cores == get_nprocs();
  if (bound) {
    int cpu = -1;
    for (int c = 0, nth = rank % cores; c < CPU_SETSIZE && cpu < 0; ++c)
      if (CPU_ISSET(c, &before) && nth-- == 0) cpu = c;
    if (CPU_COUNT(&after) != 1 || !CPU_ISSET(cpu, &after))
      fail(rank, std::to_string(CPU_COUNT(&after)) +
                     " cores allowed after creation, expected only core " + std::to_string(cpu));
  } else if (!CPU_EQUAL(&before, &after)) {
    fail(rank, "affinity changed where no binding was due");
  }
  std::vector<float> data{static_cast<float>(rank), 1.0f};
  comm.allReduce(data.data(), data.data(), data.size(), DataType::Float32, RedOp::Sum).wait();
  if (data[0] != n * (n - 1) / 2.0f || data[1] != static_cast<float>(n))
    fail(rank,
         "all-reduce after binding: " + std::to_string(data[0]) + ", " + std::to_string(data[1]));
  if (failures == 0)
    std::printf("rank %d: bind checks ok (%s)\n", rank, bound ? "bound" : "unbound");
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string which, api = "cpp", transport = "shm";
  int ranks = 4;
  size_t mib = 1;
  int victim = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--case")
      which = argv[i + 1];
    else if (a == "--api")
      api = argv[i + 1];
    else if (a == "--mib")
      mib = std::stoul(argv[i + 1]);
    else if (a == "--victim")
      victim = std::stoi(argv[i + 1]);
    else if (a == "--transport")
      transport = argv[i + 1];
    else if (a == "--ranks")
      ranks = std::stoi(argv[i + 1]);
  }
  try {
    if (which == "exchange") return exchangeCase(mib, api != "cpp", api == "c-nonblocking");
    if (which == "split") return splitCase();
    if (which == "kill") return killCase(victim);
    if (which == "small") return smallCase();
    if (which == "bind") return bindCase();
    if (which == "inprocess") return inProcessCase(transport, ranks);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("FAIL: usage: --case exchange|split|kill|small|bind|inprocess\n");
  return 2;
}
