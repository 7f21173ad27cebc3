// chorus_ib_verbs_test: unit-level checks of the verbs transport on a real device (run
// inside the Soft-RoCE guest, tests/rdma/guest_suite.sh).
//   1. RegCache: a range inside a registered extent is a hit; distinct ranges are misses;
//      idle registrations beyond the capacity are evicted, pinned ones never; forget()
//      drops them.
//   2. BufferPool: a buffer returned and asked for again is the same, already registered.
//   3. Two communicators in a row over the ib transport (2 forked ranks): the second one
//      registers nothing new, its rings all come from the cache.
//   4. Two IbChannels connected to each other in this process: bytes arrive in order
//      across 4 QPs; then one side vanishes (its QPs destroyed) and the other gets a
//      PeerError naming the peer from the fabric itself (retry exceeded), not a hang.
//   5. IbPeerMemory between two connected channels: an exposed range read with RDMA READ
//      (at an offset, in pieces over 4 QPs) arrives exact, into plain memory (through a
//      landing buffer) and straight into a buffer the reader exposes;
//      a read beyond the exposed range is refused; RDMA WRITE into the exposed range (at an
//      offset, in pieces) lands exact with nothing around it touched, from plain memory
//      (through a landing buffer) and from a buffer the writer exposes (no registration),
//      ending with one one-byte flush READ on each QP that carried a piece (the stats'
//      per-QP counters), and a write beyond the range is refused; a record with a wrong rkey fails
//      the read with PeerError naming the peer (remote access error), not a hang.
//   6. The rendezvous' clear to send between two connected channels: the receiver answers
//      transfer 1 before its offer, the sender then streams it (its source unregistered:
//      it never asks for the answer) and the receiver withdraws; transfer 2, answered
//      before its offer too, must land in transfer 2's destination (the sender dropped
//      1's answer), exact, with 1's destination untouched; transfer 3 takes the old path
//      (the offer first, then the answer).
//   7. Whether the peer's host answers (IbChannel::probe, silence): the probes of a peer
//      that never polls (as a stopped rank: its HCA answers for it) are all answered; once
//      its QPs are gone (nobody answers) a probe goes unanswered, and silence says so.
// Exit 0 when every check passes; each failed check prints a FAIL line.
#include "errors.hpp"
#include "memory/shared_memory.hpp"
#include "transports/ib/ib_channel.hpp"
#include "transports/ib/ib_device.hpp"
#include "transports/ib/ib_peer_memory.hpp"
#include "transports/ib/reg_cache.hpp"

#include <chorus/chorus.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using chorus::ib::RegCache;
using chorus::ib::RegStats;

int gFailures = 0;

void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++gFailures;
}

void cacheChecks(chorus::ib::IbDevice& dev) {
  constexpr size_t kMiB = 1 << 20;
  auto* mem = static_cast<std::byte*>(std::aligned_alloc(4096, 8 * kMiB));
  RegCache cache(dev.pd(), kMiB, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  {
    auto a = cache.acquire(mem, 100);
    auto b = cache.acquire(mem + 200, 1000);  // same page: covered by a's extent
    check(cache.stats().misses == 1 && cache.stats().hits == 1,
          "a range inside an extent is a hit");
    check(a.lkey() == b.lkey(), "the hit hands out the same memory region");
    auto c = cache.acquire(mem + 8192, 4096);
    check(cache.stats().misses == 2, "a range outside every extent is a miss");
  }
  {
    auto again = cache.acquire(mem + 10, 50);
    check(cache.stats().hits == 2 && cache.stats().misses == 2, "an idle registration is reused");
  }
  // Eight distinct 256 KiB ranges through a 1 MiB cache: idle ones are evicted.
  for (int i = 0; i < 8; ++i) cache.acquire(mem + kMiB + i * (kMiB / 4), kMiB / 4);
  RegStats s = cache.stats();
  check(s.evictions > 0 && s.registeredBytes <= kMiB, "idle registrations stay within capacity");
  {
    std::vector<RegCache::Handle> pinned;
    for (int i = 0; i < 6; ++i)
      pinned.push_back(cache.acquire(mem + 4 * kMiB + i * (kMiB / 4), kMiB / 4));
    check(cache.stats().registeredBytes >= 6 * (kMiB / 4),
          "pinned registrations are never evicted");
  }
  check(cache.stats().registeredBytes <= kMiB, "released registrations shrink back to capacity");
  cache.forget(mem, 8 * kMiB);
  check(cache.stats().entries == 0, "forget drops every idle registration of a range");
  uint64_t misses = cache.stats().misses;
  cache.acquire(mem, 64);
  check(cache.stats().misses == misses + 1, "after forget the range registers again");
  cache.forget(mem, 8 * kMiB);
  std::free(mem);

  auto& pool = dev.pool();
  RegStats before = dev.cache().stats();
  std::byte* first;
  {
    auto b = pool.get(3 * kMiB + 5);
    first = b.data();
    check(b.size() >= 3 * kMiB + 5 && reinterpret_cast<uintptr_t>(first) % 4096 == 0,
          "pool buffers are page-aligned and large enough");
  }
  auto b2 = pool.get(3 * kMiB + 5);
  RegStats after = dev.cache().stats();
  check(b2.data() == first, "the pool hands the returned buffer out again");
  check(after.misses == before.misses + 1 && after.hits == before.hits + 1,
        "the reused pool buffer is a cache hit, not a new registration");
}

bool readAll(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t got = read(fd, p, n);
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// One rank of part 3: two communicators one after the other.
int commRank(int rank, int fd) {
  chorus::UniqueId ids[2];
  for (auto& id : ids)
    if (!readAll(fd, id.bytes.data(), id.bytes.size())) return 3;
  chorus::Options opt;
  opt.transport = "ib";
  opt.timeout = std::chrono::seconds(60);
  auto device = chorus::ib::IbDevice::open(chorus::ib::IbConfig::fromEnv());
  RegStats stats[2];
  for (int round = 0; round < 2; ++round) {
    auto comm = chorus::Communicator::init(rank, 2, ids[round], opt);
    std::vector<float> data(1 << 18, 1.0f);
    comm.allReduce(data.data(), data.data(), data.size(), chorus::DataType::Float32,
                   chorus::RedOp::Sum)
        .wait();
    if (data[0] != 2.0f || data.back() != 2.0f) {
      std::printf("FAIL rank %d: allReduce over ib gave %g\n", rank, data[0]);
      return 1;
    }
    comm = {};  // destroyed: its rings go back to the pool, still registered
    stats[round] = device->cache().stats();
  }
  std::printf("rank %d: after communicator 1: %lu misses %lu hits; after 2: %lu misses %lu hits\n",
              rank, (unsigned long)stats[0].misses, (unsigned long)stats[0].hits,
              (unsigned long)stats[1].misses, (unsigned long)stats[1].hits);
  bool ok = stats[1].misses == stats[0].misses && stats[1].hits > stats[0].hits;
  std::printf("%s rank %d: the second communicator's buffers all come from the cache\n",
              ok ? "ok  " : "FAIL", rank);
  return ok ? 0 : 1;
}

int communicatorChecks() {
  int fds[2][2];
  pid_t pids[2];
  for (int r = 0; r < 2; ++r) {
    if (pipe(fds[r]) != 0) return 1;
    pids[r] = fork();
    if (pids[r] == 0) {
      close(fds[r][1]);
      std::fflush(stdout);
      int code = 1;
      try {
        code = commRank(r, fds[r][0]);
      } catch (const std::exception& e) {
        std::printf("FAIL rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      std::_Exit(code == 0 ? 0 : 1);
    }
    close(fds[r][0]);
  }
  chorus::UniqueId ids[2] = {chorus::getUniqueId(), chorus::getUniqueId()};
  for (int r = 0; r < 2; ++r) {
    for (auto& id : ids)
      if (write(fds[r][1], id.bytes.data(), id.bytes.size()) < 0) std::perror("write");
    close(fds[r][1]);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed;
}

// Rank 0's channel to rank 1 (a) and rank 1's to rank 0 (b) on one device, connected.
struct ChannelPair {
  std::unique_ptr<chorus::ib::IbChannel> a, b;
};
ChannelPair connectedPair(chorus::ib::IbDevice& dev, const chorus::ib::IbConfig& cfg) {
  ChannelPair pair;
  pair.a = std::make_unique<chorus::ib::IbChannel>(0, 1, std::vector<chorus::ib::IbDevice*>{&dev},
                                                   cfg, std::vector<ibv_comp_channel*>{nullptr});
  pair.b = std::make_unique<chorus::ib::IbChannel>(1, 0, std::vector<chorus::ib::IbDevice*>{&dev},
                                                   cfg, std::vector<ibv_comp_channel*>{nullptr});
  pair.a->connect(pair.b->localInfo());
  pair.b->connect(pair.a->localInfo());
  return pair;
}

void channelChecks(chorus::ib::IbDevice& dev) {
  chorus::ib::IbConfig cfg = chorus::ib::IbConfig::fromEnv();
  cfg.qps = 4;
  cfg.block = 4096;
  cfg.ring = 64 << 10;
  cfg.timeout = 8;  // ~1 ms ack timeout, one retry: the loss is seen fast
  cfg.retryCnt = 1;
  ChannelPair pair = connectedPair(dev, cfg);
  auto& a = pair.a;
  auto& b = pair.b;
  // 1 MiB of a counting pattern through a 64 KiB ring, in odd-sized pieces.
  std::vector<uint32_t> out(1 << 18), in(out.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint32_t>(i * 2654435761u);
  const auto* src = reinterpret_cast<const std::byte*>(out.data());
  auto* dst = reinterpret_cast<std::byte*>(in.data());
  const size_t total = out.size() * 4;
  size_t sent = 0, got = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (got < total && std::chrono::steady_clock::now() < until) {
    if (sent < total) sent += a->trySend(src + sent, std::min<size_t>(total - sent, 12345));
    auto span = b->peek();
    size_t n = std::min(span.size(), size_t{7777});
    std::memcpy(dst + got, span.data(), n);
    b->consume(n);
    got += n;
    b->flushCredits();
  }
  check(got == total && in == out, "1 MiB striped over 4 QPs arrives complete and in order");

  // Grants before a sleep only when the sender may be short of room (grantBeforeSleep):
  // the receiver takes 10 KiB of a full ring (less than the ring/4 that consume() grants
  // at) and then only sleeps (flushBeforeSleep) until 10 KiB more arrive; the sender,
  // out of room, can send them only once that grant comes. (A pair of its own: this one
  // stays full.)
  {
    ChannelPair full = connectedPair(dev, cfg);
    auto& a = full.a;
    auto& b = full.b;
    const size_t ring = cfg.ring, step = 10 << 10;
    size_t queued = 0, taken = 0;
    auto by = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (queued < ring + step && std::chrono::steady_clock::now() < by) {
      queued += a->trySend(src + queued % total, std::min<size_t>(ring + step - queued, 4096));
      if (taken < step) {
        auto span = b->peek();
        const size_t n = std::min(span.size(), step - taken);
        b->consume(n);
        taken += n;
      }
      b->progress();
      b->flushBeforeSleep();
    }
    check(queued == ring + step,
          "a sender out of room gets the grant the receiver makes before it sleeps");
  }

  b.reset();  // the peer vanishes
  bool named = false;
  until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  try {
    while (std::chrono::steady_clock::now() < until) a->trySend(src, 4096);
  } catch (const chorus::PeerError& e) {
    std::printf("     got: %s\n", e.what());
    named = e.peer() == 1 && std::string(e.what()).find("rank 1") != std::string::npos;
  }
  check(named, "a vanished peer gives PeerError naming it (from the QP, retry exceeded)");
}

// Calls read() until it reports completion; -1 at the deadline.
long readAll(chorus::PeerMemory& m, std::span<const std::byte> blob, size_t offset, void* dst,
             size_t bytes) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    if (size_t n = m.read(1, blob, offset, dst, bytes)) return static_cast<long>(n);
  }
  return -1;
}

// Calls write() until it reports completion; -1 at the deadline.
long writeAll(chorus::PeerMemory& m, std::span<const std::byte> blob, size_t offset,
              const void* src, size_t bytes) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    if (size_t n = m.write(1, blob, offset, src, bytes)) return static_cast<long>(n);
  }
  return -1;
}

void peerMemoryChecks(chorus::ib::IbDevice& dev) {
  chorus::ib::IbConfig cfg = chorus::ib::IbConfig::fromEnv();
  cfg.qps = 4;
  cfg.block = 4096;
  cfg.ring = 64 << 10;
  cfg.timeout = 8;
  cfg.retryCnt = 1;
  ChannelPair pair = connectedPair(dev, cfg);
  auto& a = pair.a;
  auto& b = pair.b;
  // Rank 1 (b) exposes 512 KiB inside a 1 MiB registered buffer; rank 0 (a) reads from it.
  chorus::ib::IbPeerMemory reader({&dev}, 16 << 10,
                                  [&](int) -> chorus::ib::IbChannel& { return *a; });
  chorus::ib::IbPeerMemory owner({&dev}, 16 << 10,
                                 [&](int) -> chorus::ib::IbChannel& { return *b; });
  std::vector<uint32_t> exposed(1 << 18);
  for (size_t i = 0; i < exposed.size(); ++i)
    exposed[i] = static_cast<uint32_t>(i * 2246822519u + 7);
  const auto* base = reinterpret_cast<const std::byte*>(exposed.data());
  chorus::LocalRegion region{base, exposed.size() * 4};
  const size_t at = 4096, bytes = 512 << 10;
  std::vector<std::byte> blob = owner.describe(region, base + at, bytes);
  check(owner.map(0, blob) == nullptr, "a peer's memory is never mapped over ib");
  const size_t offset = 1000, len = 300000;  // odd offset and size: 19 pieces on 4 QPs
  std::vector<std::byte> into(len + 16, std::byte{0x5a});
  long got = readAll(reader, blob, offset, into.data() + 8, len);
  check(got == static_cast<long>(len) &&
            std::memcmp(into.data() + 8, base + at + offset, len) == 0 &&
            into[7] == std::byte{0x5a} && into[len + 8] == std::byte{0x5a},
        "RDMA READ of an exposed range into unregistered memory lands exact (landing buffer)");
  // Into a buffer the reader exposes itself: the READ lands there directly.
  std::vector<std::byte> mine(len + 16, std::byte{0x5a});
  reader.describe(chorus::LocalRegion{mine.data(), mine.size()}, mine.data(), mine.size());
  const auto landingsBefore = dev.cache().stats().misses;
  got = readAll(reader, blob, offset, mine.data() + 8, len);
  check(got == static_cast<long>(len) &&
            std::memcmp(mine.data() + 8, base + at + offset, len) == 0 &&
            mine[7] == std::byte{0x5a} && mine[len + 8] == std::byte{0x5a} &&
            dev.cache().stats().misses == landingsBefore,
        "RDMA READ into an exposed buffer lands exact, straight there (no new registration)");
  bool refused = false;
  try {
    reader.read(1, blob, bytes - 8, into.data(), 16);
  } catch (const chorus::Error&) {
    refused = true;
  }
  check(refused, "a read beyond the exposed range is refused");
  // PeerWrite: the reader writes into the owner's exposed range, first from memory it never
  // exposed (copied into a landing buffer), then from its own exposed buffer (in place).
  const size_t wOffset = 5000, wLen = 200004;  // odd: 13 pieces on 4 QPs
  std::vector<std::byte> before(base, base + exposed.size() * 4);
  std::vector<std::byte> source(wLen);
  for (size_t i = 0; i < wLen; ++i) source[i] = static_cast<std::byte>(i * 131 + 17);
  // Per QP, bytes written and read before the write: each QP that carries a piece must
  // also carry one flush read of one byte, and no other QP any.
  const auto* paths = a->stats().paths.get();
  const size_t qps = a->stats().pathNames.size();
  std::vector<uint64_t> writtenBefore, readBefore;
  for (size_t q = 0; q < qps; ++q) {
    writtenBefore.push_back(paths[q].written.load());
    readBefore.push_back(paths[q].read.load());
  }
  const uint64_t flushesBefore = reader.flushReads();
  long wrote = writeAll(reader, blob, wOffset, source.data(), wLen);
  std::vector<std::byte> expect = before;
  std::memcpy(expect.data() + at + wOffset, source.data(), wLen);
  check(wrote == static_cast<long>(wLen) && std::memcmp(base, expect.data(), expect.size()) == 0,
        "RDMA WRITE from unregistered memory lands exact in the exposed range, nothing around it");
  uint64_t carried = 0;
  bool oneFlushEach = true;
  for (size_t q = 0; q < qps; ++q) {
    const bool wroteOn = paths[q].written.load() > writtenBefore[q];
    carried += wroteOn;
    oneFlushEach &= paths[q].read.load() - readBefore[q] == (wroteOn ? 1u : 0u);
  }
  std::printf("     the write's pieces took %llu of %zu QPs; flush reads %llu\n",
              static_cast<unsigned long long>(carried), qps,
              static_cast<unsigned long long>(reader.flushReads() - flushesBefore));
  check(
      carried >= 1 && oneFlushEach && reader.flushReads() - flushesBefore == carried,
      "a write ends with one one-byte flush READ on each QP that carried a piece, none elsewhere");
  std::vector<std::byte> push(bytes + 16);
  for (size_t i = 0; i < push.size(); ++i) push[i] = static_cast<std::byte>(i * 7 + 3);
  reader.describe(chorus::LocalRegion{push.data(), push.size()}, push.data(), push.size());
  const auto missesBefore = dev.cache().stats().misses;
  wrote = writeAll(reader, blob, 0, push.data() + 8, bytes);
  std::memcpy(expect.data() + at, push.data() + 8, bytes);
  check(wrote == static_cast<long>(bytes) && std::memcmp(base, expect.data(), expect.size()) == 0 &&
            dev.cache().stats().misses == missesBefore,
        "RDMA WRITE from an exposed buffer (no new registration) fills the whole exposed range");
  refused = false;
  try {
    reader.write(1, blob, bytes - 8, source.data(), 16);
  } catch (const chorus::Error&) {
    refused = true;
  }
  check(refused && std::memcmp(base, expect.data(), expect.size()) == 0,
        "a write beyond the exposed range is refused, and writes nothing");
  std::vector<std::byte> wrong = blob;
  wrong[16] ^= std::byte{0x5a};  // rail 0's rkey (Blob: addr, bytes, rkey[])
  bool named = false;
  try {
    readAll(reader, wrong, 0, into.data(), 4096);
  } catch (const chorus::PeerError& e) {
    std::printf("     got: %s\n", e.what());
    named = e.peer() == 1 && std::string(e.what()).find("rank 1") != std::string::npos;
  }
  check(named, "a read with a wrong rkey gives PeerError naming the peer");
}

// Polls `done` until it holds; false at the deadline (30 s).
template <class F>
bool pollUntil(F done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until)
    if (done()) return true;
  return false;
}

void rendezvousChecks(chorus::ib::IbDevice& dev) {
  chorus::ib::IbConfig cfg = chorus::ib::IbConfig::fromEnv();
  cfg.qps = 2;
  cfg.block = 4096;
  cfg.ring = 64 << 10;
  cfg.rendezvous = 1024;
  cfg.bounce = 256 << 10;  // transfer 6 (> the ring) makes the bounce buffer grow
  ChannelPair pair = connectedPair(dev, cfg);
  auto& a = pair.a;
  auto& b = pair.b;
  using Answer = chorus::DirectTransfer::Answer;
  const size_t bytes = 40000;  // 10 pieces of at most a block, over 2 QPs
  std::vector<uint32_t> source(bytes / 4);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint32_t>(i * 2654435761u + 3);
  const auto* src = reinterpret_cast<const std::byte*>(source.data());
  const chorus::LocalRegion srcRegion{src, bytes};
  std::vector<std::byte> dst1(bytes, std::byte{0x5a}), dst2(bytes, std::byte{0x5a}),
      dst3(bytes, std::byte{0x5a});
  const chorus::LocalRegion dst1Region{dst1.data(), bytes}, dst2Region{dst2.data(), bytes},
      dst3Region{dst3.data(), bytes};
  // Transfer 1: cleared to send before its offer; the offer says "stream".
  b->receiving();
  bool cleared = pollUntil([&] { return b->offer(&dst1Region, dst1.data(), bytes); });
  a->sending();  // its offer goes out unregistered: the sender never asks for the answer
  b->withdraw();
  // Transfer 2: cleared to send before its offer, then sent directly.
  b->receiving();
  cleared = cleared && pollUntil([&] { return b->offer(&dst2Region, dst2.data(), bytes); });
  a->sending();
  Answer answer = Answer::None;
  bool put = cleared && pollUntil([&] { return (answer = a->answer()) != Answer::None; }) &&
             answer == Answer::Accepted &&
             pollUntil([&] { return a->put(srcRegion, src, 0, bytes) == bytes; }) &&
             pollUntil([&] { return a->putDone(bytes); }) &&
             pollUntil([&] { return b->landed(bytes); });
  check(put && std::memcmp(dst2.data(), src, bytes) == 0 &&
            std::all_of(dst1.begin(), dst1.end(), [](std::byte x) { return x == std::byte{0x5a}; }),
        "clear to send: transfer 2 lands exact in its own destination after transfer 1 "
        "(cleared, then streamed) was withdrawn");
  // Transfer 3: the offer first, then the answer (the old order).
  a->sending();
  b->receiving();
  put = pollUntil([&] { return b->offer(&dst3Region, dst3.data(), bytes); }) &&
        pollUntil([&] { return (answer = a->answer()) != Answer::None; }) &&
        answer == Answer::Accepted &&
        pollUntil([&] { return a->put(srcRegion, src, 0, bytes) == bytes; }) &&
        pollUntil([&] { return a->putDone(bytes); }) && pollUntil([&] { return b->landed(bytes); });
  check(put && std::memcmp(dst3.data(), src, bytes) == 0,
        "answer after the offer: transfer 3 lands exact");
  // Transfer 4: into the receiver's bounce buffer (a RecvReduce that cannot fold in its
  // destination), cleared before its offer; then transfer 5 in the old order, again there.
  check(b->bounceBytes() == cfg.bounce && b->bounce(cfg.bounce + 1) == nullptr,
        "the bounce buffer takes transfers up to CHORUS_IB_BOUNCE");
  for (int t = 4; t <= 5; ++t) {
    b->receiving();
    if (t == 4) put = pollUntil([&] { return b->offerBounce(bytes); });
    a->sending();
    if (t == 5) put = pollUntil([&] { return b->offerBounce(bytes); });
    put = put && pollUntil([&] { return (answer = a->answer()) != Answer::None; }) &&
          answer == Answer::Accepted && pollUntil([&] {
            return a->put(srcRegion, src + (t - 4) * 8, 0, bytes - 8) == bytes - 8;
          }) &&
          pollUntil([&] { return a->putDone(bytes - 8); }) &&
          pollUntil([&] { return b->landed(bytes - 8); });
    const std::byte* landing = b->bounce(bytes);
    check(put && landing != nullptr && std::memcmp(landing, src + (t - 4) * 8, bytes - 8) == 0,
          t == 4 ? "bounce: transfer 4, cleared to send, lands exact in the bounce buffer"
                 : "bounce: transfer 5, answered after its offer, lands exact there too");
  }
  // Transfer 6: larger than the ring (the buffer's first size): the buffer grows to it, is
  // registered on the way, and the transfer lands exact.
  const size_t large = 200000;  // 49 pieces of at most a block
  std::vector<uint32_t> largeSource(large / 4);
  for (size_t i = 0; i < largeSource.size(); ++i)
    largeSource[i] = static_cast<uint32_t>(i * 2246822519u + 7);
  const auto* largeSrc = reinterpret_cast<const std::byte*>(largeSource.data());
  const chorus::LocalRegion largeRegion{largeSrc, large};
  b->receiving();
  put = pollUntil([&] { return b->offerBounce(large); });
  a->sending();
  put = put && pollUntil([&] { return (answer = a->answer()) != Answer::None; }) &&
        answer == Answer::Accepted &&
        pollUntil([&] { return a->put(largeRegion, largeSrc, 0, large) == large; }) &&
        pollUntil([&] { return a->putDone(large); }) && pollUntil([&] { return b->landed(large); });
  const std::byte* grown = b->bounce(large);
  check(put && grown != nullptr && std::memcmp(grown, largeSrc, large) == 0,
        "bounce: transfer 6, larger than the ring, lands exact in the grown bounce buffer");
}

}  // namespace

void probeChecks(chorus::ib::IbDevice& dev) {
  using namespace std::chrono_literals;
  chorus::ib::IbConfig cfg = chorus::ib::IbConfig::fromEnv();
  cfg.timeout = 8;  // ~1 ms ack timeout, one retry: a gone peer's probe fails fast
  cfg.retryCnt = 1;
  ChannelPair pair = connectedPair(dev, cfg);
  auto pollFor = [&](std::chrono::milliseconds span) {  // a's engine, waiting; b never polls
    const auto until = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < until) {
      pair.a->progress();
      std::this_thread::sleep_for(20ms);
    }
  };
  pair.a->probe(true);
  pollFor(2500ms);  // probes at 0, 1 and 2 s
  check(!pair.a->silence().has_value(), "the probes of a peer that never polls are answered");
  pair.b.reset();
  pollFor(2500ms);
  const auto quiet = pair.a->silence();
  check(quiet && quiet->unanswered >= 1 && quiet->since >= 2s,
        "a probe of a peer whose QPs are gone goes unanswered");
  if (quiet)
    std::printf("     %d unanswered, the last answer %lld ms ago\n", quiet->unanswered,
                static_cast<long long>(quiet->since.count()));
  pair.a->probe(false);

  // A channel the engine's steps do not use is progressed only by silence() (the engine
  // probes every peer when the store is silent): its probes must go on and be reaped there.
  // The default ack timeout (~4 s a try): the probe QP keeps going, as in a job.
  ChannelPair idle = connectedPair(dev, chorus::ib::IbConfig::fromEnv());
  auto askFor = [&](std::chrono::milliseconds span) {  // silence() only, as the engine asks
    const auto until = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < until) {
      (void)idle.a->silence();
      std::this_thread::sleep_for(100ms);
    }
  };
  idle.a->probe(true);
  askFor(2500ms);
  check(!idle.a->silence().has_value(),
        "an idle channel's probes are answered (reaped in silence)");
  idle.b.reset();
  askFor(4500ms);
  const auto cut = idle.a->silence();
  check(cut && cut->cutOff(),
        "an idle channel's peer gone: probes go on, three in a row unanswered");
  if (cut) std::printf("     idle: %d unanswered\n", cut->unanswered);
  idle.a->probe(false);
}

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // Fork the ranks before this process opens the device (no fork after verbs set-up).
  int commFailures = communicatorChecks();
  check(commFailures == 0, "two communicators in a row over ib (2 ranks)");
  try {
    auto dev = chorus::ib::IbDevice::open(chorus::ib::IbConfig::fromEnv());
    std::printf("device: %s\n", dev->describe().c_str());
    cacheChecks(*dev);
    channelChecks(*dev);
    peerMemoryChecks(*dev);
    rendezvousChecks(*dev);
    probeChecks(*dev);
  } catch (const std::exception& e) {
    std::printf("FAIL %s\n", e.what());
    ++gFailures;
  }
  std::printf("%s: %d failed\n", gFailures ? "FAIL" : "PASS", gFailures);
  return gFailures ? 1 : 0;
}
