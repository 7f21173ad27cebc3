// The shm transport's FIFO segment (transports/shm/fifo_segment.hpp): FIFOs carved out on
// first send from a per-rank budget, and shared memory that grows only with the bytes
// that pass. One process plays the owner and every sender (the segment is one memfd).
#include "transports/shm/fifo_segment.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <numeric>
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
  std::vector<std::byte> data(512 * K);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 7 + 3);
  ASSERT_EQ(out.write(data.data(), data.size()), data.size());
  EXPECT_EQ(out.write(data.data(), 1), 0u) << "full at 512 KiB";
  auto in = own.inbound(5);
  ASSERT_TRUE(in.has_value());
  auto span = in->readable();
  ASSERT_EQ(span.size(), data.size());
  EXPECT_EQ(std::memcmp(span.data(), data.data(), data.size()), 0);
  const size_t oneFifo = own.residentBytes() - empty;
  EXPECT_GE(oneFifo, 512 * K);
  EXPECT_LT(oneFifo, 512 * K + 64 * K);

  // Every other peer claims its FIFO but sends nothing: no memory taken.
  for (int from = 1; from < n; ++from)
    if (from != 5) peerView.claim(from, s);
  EXPECT_LT(own.residentBytes(), empty + oneFifo + 64 * K);
  EXPECT_FALSE(own.inbound(0).has_value()) << "rank 0 (the owner) never sends to itself";
}

// The writer maps (and so allocates) its FIFO's pages 64 KiB ahead of its bytes, one
// system call per 64 KiB instead of a fault per page, and no further: memory still grows
// only as bytes pass. A write across the end maps the rest.
TEST(ShmFifoSegment, WriterMapsPagesAheadInChunksAsBytesPass) {
  FifoSegment own = FifoSegment::create("chorus-unit-segment", 4, FifoSizing{});
  FifoSegment peerView = FifoSegment::map(0, getpid(), own.fd(), own.bytes(), 4);
  const size_t empty = own.residentBytes();
  Fifo out = peerView.claim(1, FifoSizing{});
  auto in = own.inbound(1);
  ASSERT_TRUE(in.has_value());
  auto taken = [&] { return own.residentBytes() - empty; };
  std::vector<std::byte> data(100 * K, std::byte{7});
  ASSERT_EQ(out.write(data.data(), 100), 100u);
  EXPECT_GE(taken(), 64 * K) << "the first write maps the first 64 KiB";
  EXPECT_LT(taken(), 64 * K + 8 * K);
  ASSERT_EQ(out.write(data.data(), 64 * K), 64 * K);  // through 64 KiB + 100 B
  EXPECT_GE(taken(), 128 * K);
  EXPECT_LT(taken(), 128 * K + 8 * K);
  // The reader maps ahead too (its own mapping; nothing more is allocated) and reads
  // what was written.
  auto span = in->readable();
  ASSERT_EQ(span.size(), 64 * K + 100);
  EXPECT_EQ(span[64 * K + 99], std::byte{7});
  in->release(span.size());
  EXPECT_LT(taken(), 128 * K + 8 * K);
  // Up to the end (1 MiB) and across it: everything is mapped.
  size_t written = 64 * K + 100;
  while (written < M + 10) {
    const size_t n = out.write(data.data(), std::min(data.size(), M + 10 - written));
    ASSERT_GT(n, 0u);
    written += n;
    auto r = in->readable();
    in->release(r.size());
  }
  EXPECT_GE(taken(), M);
  EXPECT_LT(taken(), M + 8 * K);
}

}  // namespace
}  // namespace chorus::shm
