// The shm transport's FIFO segment (transports/shm/fifo_segment.hpp): FIFOs carved out on
// first send from a per-rank budget, and shared memory that grows only with the bytes
// that pass. One process plays the owner and every sender (the segment is one memfd).
#include "transports/shm/fifo_segment.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace chorus::shm {
namespace {

constexpr size_t K = 1024, M = K * K;

TEST(ShmFifoSegment, SizesByBudget) {
  FifoSizing s;  // 1 MiB full, 64 KiB floor, 8 MiB budget
  std::vector<size_t> caps;
  uint64_t used = 0;
  for (int peer = 0; peer < 127; ++peer) {
    caps.push_back(s.capacityAfter(used));
    used += caps.back();
  }
  // (8 - used) / 2 >= 1 MiB while used <= 6 MiB: seven full FIFOs, then 512K, 256K, 128K,
  // then the floor for everyone else.
  for (int i = 0; i < 7; ++i) EXPECT_EQ(caps[i], M) << i;
  EXPECT_EQ(caps[7], 512 * K);
  EXPECT_EQ(caps[8], 256 * K);
  EXPECT_EQ(caps[9], 128 * K);
  for (size_t i = 10; i < caps.size(); ++i) EXPECT_EQ(caps[i], 64 * K) << i;
  EXPECT_LE(used, s.regionBytes(128));
  // Fixed by CHORUS_SHM_FIFO_BYTES-like settings: every FIFO the same, region exact.
  FifoSizing fixed{256 * K, 256 * K, 0};
  EXPECT_EQ(fixed.capacityAfter(0), 256 * K);
  EXPECT_EQ(fixed.capacityAfter(10 * M), 256 * K);
  EXPECT_EQ(fixed.regionBytes(5), 4 * 256 * K);
}

// The byte at `offset` of a test stream.
std::byte streamByte(uint64_t offset) { return std::byte((offset * 7 + 3) ^ (offset >> 13)); }

// Passes `bytes` more of the test stream (from `offset`) through the FIFO in writes of at
// most `chunk`, reading everything out after each write; counts the wrong bytes read.
size_t passThrough(Fifo& out, Fifo& in, uint64_t& offset, size_t bytes, size_t chunk) {
  std::vector<std::byte> buffer(chunk);
  size_t wrong = 0;
  for (size_t done = 0; done < bytes;) {
    const size_t ask = std::min(chunk, bytes - done);
    for (size_t i = 0; i < ask; ++i) buffer[i] = streamByte(offset + done + i);
    const size_t n = out.write(buffer.data(), ask);
    EXPECT_GT(n, 0u) << "an empty FIFO takes bytes";
    if (n == 0) return wrong + 1;
    for (size_t got = 0; got < n;) {
      auto span = in.readable();
      for (size_t i = 0; i < span.size(); ++i)
        wrong += span[i] != streamByte(offset + done + got + i);
      got += span.size();
      in.release(span.size());
    }
    done += n;
  }
  offset += bytes;
  return wrong;
}

// One FIFO of a 4-rank segment: rank 0 owns the segment, rank `from` sends through its
// own mapping of it (as a peer process would); `empty` is what the segment took before.
struct OneFifo {
  FifoSegment own, peerView;
  size_t empty = 0;
  Fifo out, in;
  OneFifo(int from, const FifoSizing& sizing)
      : own(FifoSegment::create("chorus-unit-segment", 4, sizing)),
        peerView(FifoSegment::map(0, getpid(), own.fd(), own.bytes(), 4)),
        empty(own.residentBytes()),
        out(peerView.claim(from, sizing)),
        in(own.inbound(from).value()) {}  // claimed just now: there (else the test fails)
  size_t taken() const { return own.residentBytes() - empty; }
};

TEST(ShmFifoSegment, ClaimedOnFirstSendAndResidentByUse) {
  const int n = 64;
  FifoSizing s;
  s.full = 512 * K;  // what 64 ranks get
  FifoSegment own = FifoSegment::create("chorus-unit-segment", n, s);
  const size_t empty = own.residentBytes();
  EXPECT_LT(empty, 64 * K) << "only the headers are touched at creation";
  EXPECT_FALSE(own.inbound(5).has_value()) << "no FIFO before its sender claims it";

  // Rank 5 sends, through its own mapping of the segment (as a peer process would).
  FifoSegment peerView = FifoSegment::map(0, getpid(), own.fd(), own.bytes(), n);
  Fifo out = peerView.claim(5, s);
  EXPECT_EQ(out.capacity(), 512 * K);
  auto in = own.inbound(5);
  ASSERT_TRUE(in.has_value());
  // Writes of 1 MiB grow the window to the whole 512 KiB (then the FIFO is full).
  uint64_t offset = 0;
  EXPECT_EQ(passThrough(out, *in, offset, 3 * M, M), 0u);
  EXPECT_EQ(out.window(), 512 * K);
  const size_t oneFifo = own.residentBytes() - empty;
  EXPECT_GE(oneFifo, 512 * K);
  EXPECT_LT(oneFifo, 512 * K + 64 * K);

  // Every other peer claims its FIFO but sends nothing: no memory taken.
  for (int from = 1; from < n; ++from)
    if (from != 5) peerView.claim(from, s);
  EXPECT_LT(own.residentBytes(), empty + oneFifo + 64 * K);
  EXPECT_FALSE(own.inbound(0).has_value()) << "rank 0 (the owner) never sends to itself";
}

// Small messages stay in the first window (64 KiB of a 1 MiB FIFO): the same cache lines
// and pages, and the memory of one window, however many pass.
TEST(ShmFifoSegment, SmallMessagesStayInTheFirstWindow) {
  OneFifo f(1, FifoSizing{});
  EXPECT_EQ(f.out.capacity(), M);
  uint64_t offset = 0;
  for (int message = 0; message < 2000; ++message)
    ASSERT_EQ(passThrough(f.out, f.in, offset, 2000 + message % 7, 8 * K), 0u) << message;
  EXPECT_EQ(f.out.window(), Fifo::kFirstWindow);
  EXPECT_GE(f.taken(), 64 * K);
  EXPECT_LT(f.taken(), 64 * K + 8 * K);
}

// When a write found the FIFO full, the window widens once the FIFO is empty again, in one
// step, to room for four of the largest write asked (a power of two), and no further for
// writes of that size; never while bytes are still unread; never past the capacity.
TEST(ShmFifoSegment, WindowWidensOnceToRoomForFourOfTheLargestWrite) {
  OneFifo f(2, FifoSizing{});
  Fifo &out = f.out, &in = f.in;
  std::vector<std::byte> data(2 * M, std::byte{5});
  auto readAll = [&] {  // what is there, across the window's end
    size_t total = 0;
    for (auto span = in.readable(); !span.empty(); span = in.readable()) {
      total += span.size();
      in.release(span.size());
    }
    return total;
  };
  auto fillWith = [&](size_t ask) {  // writes of `ask` until one finds no room
    size_t total = 0;
    for (size_t n = ask; n == ask; total += n) n = out.write(data.data(), ask);
    return total;
  };
  // 40 KiB writes fill the first 64 KiB window. One byte read, the rest still there: the
  // window stays. All read: 4 x 40 KiB = 160 KiB, so 256 KiB, in one step.
  EXPECT_EQ(fillWith(40 * K), 64 * K);
  ASSERT_FALSE(in.readable().empty());
  in.release(1);
  EXPECT_EQ(out.write(data.data(), 40 * K), 1u);
  EXPECT_EQ(out.window(), 64 * K) << "not while bytes are unread";
  EXPECT_EQ(readAll(), 64 * K);
  EXPECT_EQ(out.write(data.data(), 40 * K), 40 * K);
  EXPECT_EQ(out.window(), 256 * K);
  // Full again with writes of the same size: wide enough already.
  EXPECT_EQ(fillWith(40 * K) + 40 * K, 256 * K);
  EXPECT_EQ(readAll(), 256 * K);
  EXPECT_EQ(out.write(data.data(), 40 * K), 40 * K);
  EXPECT_EQ(out.window(), 256 * K) << "no wider than four of the largest write";
  EXPECT_EQ(readAll(), 40 * K);
  // A 300 KiB write fills it; four of those would be 1.2 MiB: the whole 1 MiB capacity.
  EXPECT_EQ(out.write(data.data(), 300 * K), 256 * K);
  EXPECT_EQ(readAll(), 256 * K);
  EXPECT_EQ(out.write(data.data(), 300 * K), 300 * K);
  EXPECT_EQ(out.window(), M);
  EXPECT_EQ(readAll(), 300 * K);
  EXPECT_EQ(out.write(data.data(), 2 * M), M) << "never past the capacity";
  EXPECT_EQ(out.window(), M);
}

// copyReadable copies what is there across the window's end, where readable() stops, and
// releases nothing (the engine reads a stray call's whole 32-byte header with it).
TEST(ShmFifoSegment, CopyReadableCrossesTheWindowsEnd) {
  OneFifo f(1, FifoSizing{});
  uint64_t offset = 0;
  ASSERT_EQ(passThrough(f.out, f.in, offset, Fifo::kFirstWindow - 16, 8 * K), 0u);
  std::vector<std::byte> header(32);
  for (size_t i = 0; i < header.size(); ++i) header[i] = streamByte(offset + i);
  ASSERT_EQ(f.out.write(header.data(), header.size()), header.size());
  EXPECT_EQ(f.in.readable().size(), 16u) << "readable() stops at the window's end";
  std::vector<std::byte> copy(64, std::byte{0});
  EXPECT_EQ(f.in.copyReadable(copy.data(), copy.size()), 32u);
  EXPECT_TRUE(std::equal(header.begin(), header.end(), copy.begin()));
  EXPECT_EQ(f.in.copyReadable(copy.data(), 20), 20u);
  EXPECT_EQ(f.in.readable().size(), 16u) << "nothing released";
  f.in.release(16);
  const auto rest = f.in.readable();  // the other 16, at the window's start
  ASSERT_EQ(rest.size(), 16u);
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), header.begin() + 16));
  f.in.release(16);
  EXPECT_EQ(f.in.copyReadable(copy.data(), copy.size()), 0u) << "empty";
}

// A producer and a consumer thread pass 48 MiB in writes and reads of sizes from a fixed
// seed (1 B to 1.5 MiB), so that the window grows while the other side runs: every byte
// arrives, in order.
TEST(ShmFifoSegment, StreamStaysExactWhileTheWindowGrowsUnderAConcurrentReader) {
  OneFifo f(3, FifoSizing{});
  Fifo &out = f.out, &in = f.in;
  constexpr uint64_t kTotal = 48 * M;
  std::thread producer([&] {
    std::mt19937_64 random(20261206);
    std::vector<std::byte> buffer(1536 * K);
    for (uint64_t offset = 0; offset < kTotal;) {
      const size_t ask = std::min<uint64_t>(1 + random() % buffer.size(), kTotal - offset);
      for (size_t i = 0; i < ask; ++i) buffer[i] = streamByte(offset + i);
      size_t done = 0;
      while (done < ask) {
        const size_t n = out.write(buffer.data() + done, ask - done);
        if (n == 0) std::this_thread::yield();
        done += n;
      }
      offset += ask;
    }
  });
  std::mt19937_64 random(7);
  uint64_t offset = 0, wrong = 0;
  while (offset < kTotal) {
    auto span = in.readable();
    if (span.empty()) {
      std::this_thread::yield();
      continue;
    }
    const size_t take = std::min<size_t>(span.size(), 1 + random() % (256 * K));
    for (size_t i = 0; i < take; ++i) wrong += span[i] != streamByte(offset + i);
    in.release(take);
    offset += take;
  }
  producer.join();
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(out.window(), M) << "writes larger than the window grew it to the capacity";
}

// Each side maps (the writer so allocates) the pages its bytes first touch, one system
// call per write, and no further: memory grows a page at a time as bytes pass.
TEST(ShmFifoSegment, PagesAreTakenAsBytesPassAndNoFurther) {
  FifoSizing small{256 * K, 256 * K, 0};  // window 64 KiB first
  OneFifo f(1, small);
  Fifo &out = f.out, &in = f.in;
  uint64_t offset = 0;
  ASSERT_EQ(passThrough(out, in, offset, 100, 100), 0u);
  EXPECT_EQ(f.taken(), 4 * K) << "100 bytes: one page";
  ASSERT_EQ(passThrough(out, in, offset, 40 * K, 40 * K), 0u);  // through 40 KiB + 100 B
  EXPECT_EQ(f.taken(), 44 * K);
  // A 70 KiB write fills the 64 KiB window; once read, the window widens to the whole
  // 256 KiB (room for four would be 280 KiB), and the write's last 6 KiB land at 104-110
  // KiB: the new part is mapped from 64 KiB through there, not further.
  ASSERT_EQ(passThrough(out, in, offset, 70 * K, 70 * K), 0u);
  EXPECT_EQ(out.window(), 256 * K);
  EXPECT_EQ(f.taken(), 112 * K);
  ASSERT_EQ(passThrough(out, in, offset, 100 * K, 8 * K), 0u);  // through 210 KiB + 100 B
  EXPECT_EQ(f.taken(), 212 * K);
}

}  // namespace
}  // namespace chorus::shm
