// TCP transport: ranks are threads sharing a HashStore, talking over loopback.
#include "errors.hpp"
#include "net/socket.hpp"
#include "store/hash_store.hpp"
#include "striping/stripe_stats.hpp"
#include "time_bounds.hpp"
#include "transports/transport.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace chorus {
namespace {

using namespace std::chrono_literals;

// Sets environment variables for one test and restores them afterwards.
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      ::setenv(name, value, 1);
    }
  }
  ~Env() {
    for (auto& [name, old] : saved_) {
      if (old)
        ::setenv(name.c_str(), old->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// Reproducible bytes for the stream src -> dst, message `tag`.
std::vector<uint8_t> pattern(int src, int dst, int tag, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  uint64_t x = 0x9e3779b97f4a7c15ull * (src * 1000003ull + dst * 1009ull + tag + 1);
  for (size_t i = 0; i < bytes; ++i) {
    if (i % 8 == 0) {  // splitmix64
      x += 0x9e3779b97f4a7c15ull;
      uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      x = z ^ (z >> 31);
    }
    out[i] = static_cast<uint8_t>(x >> (8 * (i % 8)));
  }
  return out;
}

struct Flow {
  std::vector<uint8_t> out;  // to send to the peer
  size_t sent = 0;
  std::vector<uint8_t> in;  // received from the peer
  size_t expected = 0;
};

struct DriveOptions {
  bool randomChunks = true;  // random trySend and consume sizes
  bool whole8 = false;       // consume only multiples of 8 bytes, as the engine does
  Deadline deadline = deadlineIn(60s);
};

// A miniature engine: moves every flow until all are complete, sleeping in wait() when
// no channel makes progress. Throws Error(Timeout) at the deadline instead of hanging.
void drive(Transport& t, std::map<int, Flow>& flows, const DriveOptions& o, uint32_t seed) {
  std::mt19937 rng(seed);
  for (auto& [peer, f] : flows) f.in.reserve(f.expected);
  auto pass = [&] {
    bool progress = false;
    for (auto& [peer, f] : flows) {
      Channel& ch = t.channel(peer);
      if (f.sent < f.out.size()) {
        size_t n = f.out.size() - f.sent;
        if (o.randomChunks) n = std::min<size_t>(n, 1 + rng() % (3 << 20));
        size_t took = ch.trySend(f.out.data() + f.sent, n);
        EXPECT_LE(took, n);
        f.sent += took;
        progress |= took > 0;
      }
      if (f.in.size() < f.expected) {
        auto span = ch.peek();
        size_t n = std::min(span.size(), f.expected - f.in.size());
        size_t unit = o.whole8 ? 8 : 1;
        n -= n % unit;
        if (o.randomChunks && n > unit) n = unit * (1 + rng() % (n / unit));
        if (n > 0) {
          auto* p = reinterpret_cast<const uint8_t*>(span.data());
          f.in.insert(f.in.end(), p, p + n);
          ch.consume(n);
          progress = true;
        }
      }
    }
    return progress;
  };
  auto done = [&] {
    for (auto& [peer, f] : flows)
      if (f.sent < f.out.size() || f.in.size() < f.expected) return false;
    return true;
  };
  while (!done()) {
    if (pass()) continue;
    if (Clock::now() >= o.deadline) throw Error(Result::Timeout, "drive: no progress");
    uint64_t token = t.prepareWait();
    if (pass()) continue;
    t.wait(token, std::min(o.deadline, deadlineIn(200ms)));
  }
}

// Runs fn(rank, transport) on n threads. Transports are destroyed only after every rank
// is done, so that a finished rank does not look dead to a slower one.
void runRanks(int n, const std::function<void(int, Transport&)>& fn,
              std::chrono::milliseconds setup = 20s) {
  HashStore store;
  std::barrier done(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Transport> t;
      try {
        t = makeTcpTransport(TransportContext{r, n, &store, "host", deadlineIn(setup)});
        fn(r, *t);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
      done.arrive_and_wait();
    });
  }
  for (auto& th : threads) th.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

void expectFlows(int rank, std::map<int, Flow>& flows, int tag) {
  for (auto& [peer, f] : flows) {
    auto want = pattern(peer, rank, tag, f.expected);
    ASSERT_EQ(f.in.size(), want.size());
    ASSERT_TRUE(f.in == want) << "rank " << rank << " got wrong bytes from rank " << peer
                              << " (tag " << tag << ", " << want.size() << " bytes)";
  }
}

// Ring exchange of each size in turn, over one set of connections.
void ringSizes(int nranks, const std::vector<size_t>& sizes, const DriveOptions& o = {}) {
  runRanks(nranks, [&](int rank, Transport& t) {
    EXPECT_STREQ(t.name(), "tcp");
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    for (size_t i = 0; i < sizes.size(); ++i) {
      int tag = static_cast<int>(i);
      std::map<int, Flow> flows;
      flows[next].out = pattern(rank, next, tag, sizes[i]);
      flows[prev].expected = sizes[i];
      drive(t, flows, o, rank * 7 + tag);
      expectFlows(rank, flows, tag);
    }
    EXPECT_TRUE(t.channel(prev).peek().empty()) << "stray bytes after the last message";
  });
}

const std::vector<size_t> kRingSizes = {0, 8, 1000, (1 << 20) + 24, test::bulk(16 << 20)};

TEST(TcpTransport, RingTwoStreamsDefault) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}, {"CHORUS_TCP_STREAMS", "2"}};
  ringSizes(3, kRingSizes);
}

TEST(TcpTransport, RingOneStream) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}, {"CHORUS_TCP_STREAMS", "1"}};
  ringSizes(3, kRingSizes);
}

TEST(TcpTransport, RingFourStreams) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}, {"CHORUS_TCP_STREAMS", "4"}};
  ringSizes(3, kRingSizes);
}

TEST(TcpTransport, RingTwoRanksWholeWords) {
  // Consuming only whole 8-byte units must always finish: a span that split a unit at
  // the ring's wrap would leave the consumer stuck. Odd ring and block sizes on purpose.
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"},
          {"CHORUS_TCP_STREAMS", "3"},
          {"CHORUS_TCP_BLOCK", "1000"},
          {"CHORUS_TCP_BUFFER", "2504"}};
  DriveOptions o;
  o.whole8 = true;
  ringSizes(2, {8, 8000, 3 << 20}, o);
}

TEST(TcpTransport, TinyBlocksAndRingWrapAround) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"},
          {"CHORUS_TCP_STREAMS", "5"},
          {"CHORUS_TCP_BLOCK", "1000"},
          {"CHORUS_TCP_BUFFER", "2504"}};
  ringSizes(3, {0, 7, 8, 999, 1001, 5003, 300000});
}

TEST(TcpTransport, AllToAllFourRanks) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}, {"CHORUS_TCP_STREAMS", "4"}, {"CHORUS_TCP_BLOCK", "64K"}};
  const int n = 4;
  auto bytes = [](int src, int dst) -> size_t {
    if (src == dst) return 0;
    return test::bulk(size_t{1} << 20) * (src + 1) + size_t{8} * dst + size_t{3} * src;  // odd
  };
  runRanks(n, [&](int rank, Transport& t) {
    for (int round = 0; round < 2; ++round) {
      std::map<int, Flow> flows;
      for (int p = 0; p < n; ++p) {
        if (p == rank) continue;
        flows[p].out = pattern(rank, p, round, bytes(rank, p));
        flows[p].expected = bytes(p, rank);
      }
      drive(t, flows, {}, rank + 100 * round);
      expectFlows(rank, flows, round);
    }
  });
}

TEST(TcpTransport, SingleRankHasNoChannels) {
  HashStore store;
  auto t = makeTcpTransport(TransportContext{0, 1, &store, "host", deadlineIn(5s)});
  EXPECT_STREQ(t->name(), "tcp");
  EXPECT_THROW(t->channel(0), Error);
  EXPECT_THROW(t->channel(1), Error);
  auto start = Clock::now();
  t->wait(t->prepareWait(), deadlineIn(20ms));
  EXPECT_GE(Clock::now() - start, 19ms);
}

// Rank `victim` destroys its transport after it has seen data from everyone; the others
// must get PeerError naming it within two seconds, from whichever call meets it first.
// (The error is there as soon as poll() reports the reset; what the bound also measures is
// how long a survivor's thread waits for a core. At load 14-15 on 2 cores, from other
// builds, survivors caught it 27-483 ms after the victim closed in 22 runs, and once in 15
// more runs 1.10 s: a one-second bound failed there. A survivor that learnt of the death
// from its wait's deadline (30 s) or a keep-alive still fails two seconds.)
TEST(TcpTransport, PeerDiesMidStream) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}, {"CHORUS_TCP_STREAMS", "2"}};
  const int n = 3, victim = 2;
  std::atomic<int64_t> diedAt{0};
  std::vector<std::string> seen(n);
  std::vector<int> blamed(n, -1);
  std::vector<int64_t> caughtAt(n, 0);
  HashStore store;
  std::barrier done(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      // Outside the try: a survivor that caught the death keeps its connections to the
      // other survivor open until the barrier (destroyed at the throw, they reset the other
      // survivor's, which then blamed this rank: failed 1 of 12 runs at load 4).
      std::unique_ptr<Transport> t;
      try {
        t = makeTcpTransport(TransportContext{r, n, &store, "host", deadlineIn(20s)});
        std::map<int, Flow> flows;
        for (int p = 0; p < n; ++p) {
          if (p == r) continue;
          flows[p].out = pattern(r, p, 0, test::bulk(64 << 20));
          flows[p].expected = test::bulk(64 << 20);
        }
        if (r == victim) {
          flows.clear();  // only receive a little, then die with data unread
          for (int p = 0; p < n; ++p)
            if (p != r) flows[p].expected = 2 << 20;
          drive(*t, flows, {}, r);
          t.reset();
          diedAt = Clock::now().time_since_epoch().count();
        } else {
          DriveOptions o;
          o.deadline = deadlineIn(30s);
          drive(*t, flows, o, r);
          seen[r] = "no error";
        }
      } catch (const PeerError& e) {
        caughtAt[r] = Clock::now().time_since_epoch().count();
        blamed[r] = e.peer();
        seen[r] = e.what();
      } catch (const std::exception& e) {
        seen[r] = std::string("other error: ") + e.what();
      }
      done.arrive_and_wait();  // survivors keep their connections to each other until here
    });
  }
  for (auto& th : threads) th.join();
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(blamed[r], victim) << "rank " << r << ": " << seen[r];
    EXPECT_NE(seen[r].find("rank 2"), std::string::npos) << seen[r];
    auto delay = Clock::duration(caughtAt[r] - diedAt.load());
    EXPECT_LT(delay, chorus::test::within(4s)) << "rank " << r;
  }
}

// Two ranks; rank 1 dies while rank 0 is blocked: sending into full sockets, or waiting
// for bytes that never come.
void deathWhileBlocked(bool sending) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}, {"CHORUS_TCP_STREAMS", "2"}};
  HashStore store;
  std::atomic<int64_t> diedAt{0};
  std::atomic<bool> blocked{false};
  std::string seen;
  int blamed = -1;
  int64_t caughtAt = 0;
  std::thread victim([&] {
    auto t = makeTcpTransport(TransportContext{1, 2, &store, "host", deadlineIn(20s)});
    while (!blocked) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(100ms);
    t.reset();
    diedAt = Clock::now().time_since_epoch().count();
  });
  try {
    auto t = makeTcpTransport(TransportContext{0, 2, &store, "host", deadlineIn(20s)});
    std::vector<uint8_t> data(1 << 20);
    Channel& ch = t->channel(1);
    auto end = deadlineIn(10s);
    while (Clock::now() < end) {
      bool progress = sending ? ch.trySend(data.data(), data.size()) > 0 : !ch.peek().empty();
      if (!progress) {
        blocked = true;
        t->wait(t->prepareWait(), std::min(end, deadlineIn(500ms)));
      }
    }
    seen = "no error";
  } catch (const PeerError& e) {
    caughtAt = Clock::now().time_since_epoch().count();
    blamed = e.peer();
    seen = e.what();
  }
  victim.join();
  EXPECT_EQ(blamed, 1) << seen;
  EXPECT_NE(seen.find("rank 1"), std::string::npos) << seen;
  // 3 s: PeerDiesMidStream's bound of the same mechanism took 1.10 s once at load 14-15.
  EXPECT_LT(Clock::duration(caughtAt - diedAt.load()), chorus::test::within(3s));
}

TEST(TcpTransport, PeerDiesWhileWeSend) { deathWhileBlocked(true); }
TEST(TcpTransport, PeerDiesWhileWeReceive) { deathWhileBlocked(false); }

TEST(TcpTransport, WaitKeepsItsDeadline) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}};
  runRanks(2, [](int rank, Transport& t) {
    // First a word each way, so that the channel is connected (on first use) before the
    // waits are timed.
    std::map<int, Flow> hello;
    hello[1 - rank].out = pattern(rank, 1 - rank, 9, 8);
    hello[1 - rank].expected = 8;
    drive(t, hello, {}, rank);
    if (rank == 1) {
      std::this_thread::sleep_for(300ms);
      uint64_t word = 42;
      EXPECT_EQ(t.channel(0).trySend(&word, 8), 8u);
      std::this_thread::sleep_for(700ms);  // stay alive through rank 0's waits
      return;
    }
    // Nothing arrives for 300 ms: each wait ends at its deadline, not before, and not much
    // after (300 ms of slack: at load 5-10 on this 2-core machine a 50 ms bound failed once,
    // with no change to tcp; a wait that slept a fixed poll period of a second or more, or
    // until data came, still fails it).
    for (auto d : {0ms, 1ms, 50ms}) {
      auto deadline = deadlineIn(d);
      t.wait(t.prepareWait(), deadline);
      auto now = Clock::now();
      EXPECT_GE(now, deadline);
      EXPECT_LT(now - deadline, chorus::test::within(300ms))
          << "wait overshot a " << d.count() << " ms deadline";
    }
    // Data wakes it up early.
    auto start = Clock::now();
    t.wait(t.prepareWait(), deadlineIn(5s));
    EXPECT_LT(Clock::now() - start, chorus::test::within(1s));
    // The data was pulled in, so the next wait sleeps instead of returning at once.
    auto deadline = deadlineIn(100ms);
    t.wait(t.prepareWait(), deadline);
    EXPECT_GE(Clock::now(), deadline);
    auto span = t.channel(1).peek();
    ASSERT_EQ(span.size(), 8u);
    uint64_t word = 0;
    std::memcpy(&word, span.data(), 8);
    EXPECT_EQ(word, 42u);
    t.channel(1).consume(8);
    EXPECT_THROW(t.channel(1).consume(1), Error);
  });
}

// Connections are made on first use: set-up waits for no one, and the first use of a
// channel to a rank that never came fails at the deadline, naming it.
TEST(TcpTransport, FirstUseTimesOutNamingTheMissingRank) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}};
  HashStore store;
  auto start = Clock::now();
  auto t = makeTcpTransport(TransportContext{0, 3, &store, "host", deadlineIn(300ms)});
  EXPECT_LT(Clock::now() - start, chorus::test::within(2s)) << "set-up waited for rank 2";
  uint64_t word = 1;
  try {
    auto end = deadlineIn(10s);
    while (Clock::now() < end && t->channel(2).trySend(&word, 8) == 0)
      t->wait(t->prepareWait(), deadlineIn(50ms));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::Timeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 2"), std::string::npos) << e.what();
    EXPECT_EQ(e.failedRanks(), std::vector<int>{2});
  }
}

// The peer is there (it published its address) but never drives its transport: its
// kernel takes the connection, nobody answers the handshake. Both sides' first use
// fails at the deadline naming the other, and neither hangs.
TEST(TcpTransport, PeerThatNeverAnswersIsNamed) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}};
  HashStore store;
  auto silent = makeTcpTransport(TransportContext{1, 2, &store, "host", deadlineIn(1s)});
  auto t = makeTcpTransport(TransportContext{0, 2, &store, "host", deadlineIn(1s)});
  auto start = Clock::now();
  try {
    for (auto end = deadlineIn(10s); Clock::now() < end;) {
      if (!t->channel(1).peek().empty()) break;
      t->wait(t->prepareWait(), deadlineIn(50ms));
    }
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::Timeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1 did not answer"), std::string::npos) << e.what();
    EXPECT_EQ(e.failedRanks(), std::vector<int>{1});
  }
  EXPECT_LT(Clock::now() - start, chorus::test::within(5s));
}

// A rank whose transport is gone before anyone connected to it: the first use of a
// channel to it fails at once with PeerError naming it (its listener refuses).
TEST(TcpTransport, PeerGoneBeforeFirstUseIsNamed) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}};
  HashStore store;
  auto gone = makeTcpTransport(TransportContext{1, 2, &store, "host", deadlineIn(20s)});
  auto t = makeTcpTransport(TransportContext{0, 2, &store, "host", deadlineIn(20s)});
  gone.reset();
  auto start = Clock::now();
  try {
    uint64_t word = 1;
    for (auto end = deadlineIn(10s); Clock::now() < end;) {
      if (t->channel(1).trySend(&word, 8) > 0) break;
      t->wait(t->prepareWait(), deadlineIn(50ms));
    }
    ADD_FAILURE() << "no error";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.peer(), 1) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - start, chorus::test::within(2s));
}

// Channels of this process's tcp transports that are open, as (rank, peer).
std::set<std::pair<int, int>> openChannels() {
  std::set<std::pair<int, int>> open;
  for (const auto& path : stripe::stripeReport())
    if (path.transport == "tcp") open.insert({path.rank, path.peer});
  return open;
}

// A ring exchange at 6 ranks opens exactly the ring's pairs (each rank: its two
// neighbours), not a full mesh; an all-to-all afterwards opens the rest.
TEST(TcpTransport, ConnectsOnlyThePeersItUses) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}, {"CHORUS_TCP_STREAMS", "2"}};
  const int n = 6;
  std::barrier ringDone(n), counted(n);
  std::set<std::pair<int, int>> afterRing;
  runRanks(n, [&](int rank, Transport& t) {
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    std::map<int, Flow> flows;
    flows[next].out = pattern(rank, next, 0, 100000);
    flows[prev].expected = 100000;
    drive(t, flows, {}, rank);
    expectFlows(rank, flows, 0);
    ringDone.arrive_and_wait();
    if (rank == 0) afterRing = openChannels();
    counted.arrive_and_wait();
    std::map<int, Flow> all;
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      all[p].out = pattern(rank, p, 1, 5000 + p);
      all[p].expected = 5000 + rank;
    }
    drive(t, all, {}, rank + 10);
    expectFlows(rank, all, 1);
  });
  std::set<std::pair<int, int>> ring;
  for (int r = 0; r < n; ++r) {
    ring.insert({r, (r + 1) % n});
    ring.insert({r, (r + n - 1) % n});
  }
  EXPECT_EQ(afterRing, ring);
}

// Both ranks of each pair make their first call on the channel at the same moment (both
// start connecting): exactly one set of connections survives, and data flows both ways.
TEST(TcpTransport, BothSidesConnectAtOnce) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}, {"CHORUS_TCP_STREAMS", "3"}};
  for (int round = 0; round < 5; ++round) {
    const int n = 4;
    std::barrier go(n);
    runRanks(n, [&](int rank, Transport& t) {
      std::map<int, Flow> flows;
      for (int p = 0; p < n; ++p) {
        if (p == rank) continue;
        flows[p].out = pattern(rank, p, round, 3000 + 8 * p);
        flows[p].expected = 3000 + 8 * rank;
      }
      go.arrive_and_wait();
      drive(t, flows, {}, rank + round);
      expectFlows(rank, flows, round);
    });
  }
}

TEST(TcpTransport, StrangersAreDropped) {
  Env env{{"CHORUS_SOCKET_IFNAME", "lo"}, {"CHORUS_TCP_STREAMS", "2"}};
  HashStore store;
  std::string error1;
  std::vector<uint8_t> got;
  std::thread acceptor([&] {
    try {
      auto t = makeTcpTransport(TransportContext{1, 2, &store, "host", deadlineIn(20s)});
      std::map<int, Flow> flows;
      flows[0].expected = 100000;
      drive(*t, flows, {}, 1);
      got = flows[0].in;
    } catch (const std::exception& e) {
      error1 = e.what();
    }
  });
  auto value = store.get("tcp/1", deadlineIn(10s));
  std::string text(reinterpret_cast<const char*>(value.data()), value.size());
  auto colon = text.rfind(':');
  auto address = net::SocketAddress::parse(
      text.substr(0, colon), static_cast<uint16_t>(std::stoi(text.substr(colon + 1))));
  std::vector<net::Socket> strangers;
  auto deadline = deadlineIn(5s);
  strangers.push_back(net::Socket::connect(address, deadline));  // silent
  {
    auto s = net::Socket::connect(address, deadline);  // garbage, then gone
    std::string junk(32, 'x');
    s.sendAll(junk.data(), junk.size(), deadline);
  }
  {
    auto s = net::Socket::connect(address, deadline);  // right magic, impossible rank
    struct {
      uint64_t magic = 0x3170637453524843ull;
      int32_t rank = 7, stream = 0, streams = 2, nranks = 2;
      uint64_t block = 128 << 10;
    } hello;
    s.sendAll(&hello, sizeof(hello), deadline);
    strangers.push_back(std::move(s));
  }
  std::this_thread::sleep_for(50ms);
  {
    auto t = makeTcpTransport(TransportContext{0, 2, &store, "host", deadlineIn(20s)});
    std::map<int, Flow> flows;
    flows[1].out = pattern(0, 1, 0, 100000);
    drive(*t, flows, {}, 0);
    acceptor.join();
  }
  EXPECT_EQ(error1, "");
  EXPECT_TRUE(got == pattern(0, 1, 0, 100000));
}

}  // namespace
}  // namespace chorus
