// Striping chunk headers as a hostile or broken peer could send them: every header that
// fails its CRC, overflows, lands before what arrived, over another path's chunk, out of
// order on its path or longer than the sender's chunks breaks the stream with a PeerError
// naming the peer, and nothing of it reaches the ring. Well-formed chunks in any order
// across paths reassemble (the reference: the bytes written).
#include "errors.hpp"
#include "striping/chunk_header.hpp"
#include "striping/stripe_receiver.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <vector>

namespace chorus::stripe {
namespace {

constexpr int kPeer = 5;
constexpr size_t kMaxChunk = 4096;

// Byte queues the test fills by hand, one per path.
class Paths final : public PathIo {
 public:
  explicit Paths(int n) : queues_(size_t(n)) {}
  void put(int path, const void* data, size_t n) {
    auto* b = static_cast<const std::byte*>(data);
    queues_[size_t(path)].insert(queues_[size_t(path)].end(), b, b + n);
  }
  void chunk(int path, ChunkHeader h, uint8_t fill, size_t payload) {
    put(path, &h, sizeof(h));
    std::vector<uint8_t> bytes(payload, fill);
    put(path, bytes.data(), bytes.size());
  }
  ssize_t write(int, const iovec*, int) override { return kWouldBlock; }
  ssize_t read(int path, const iovec* iov, int count) override {
    auto& q = queues_[size_t(path)];
    if (q.empty()) return kWouldBlock;
    size_t n = 0;
    for (int i = 0; i < count && !q.empty(); ++i) {
      size_t take = std::min(iov[i].iov_len, q.size());
      std::copy_n(q.begin(), take, static_cast<std::byte*>(iov[i].iov_base));
      q.erase(q.begin(), q.begin() + ptrdiff_t(take));
      n += take;
    }
    return ssize_t(n);
  }
  int64_t backlog(int) override { return 0; }

 private:
  std::vector<std::deque<std::byte>> queues_;
};

struct Receiver {
  explicit Receiver(int paths)
      : io(paths),
        stats(registerChannel("fake", 0, kPeer, std::vector<std::string>(size_t(paths), "p"))),
        receiver(kPeer, paths, 1 << 16, io, stats.get(), kMaxChunk) {}
  // Everything in order so far, consumed.
  std::vector<uint8_t> drain() {
    auto span = receiver.peek();
    std::vector<uint8_t> out(reinterpret_cast<const uint8_t*>(span.data()),
                             reinterpret_cast<const uint8_t*>(span.data()) + span.size());
    receiver.consume(span.size());
    return out;
  }
  Paths io;
  std::shared_ptr<ChannelStats> stats;
  StripeReceiver receiver;
};

// The receiver refuses the stream with a PeerError naming the peer's bad header.
void expectRefused(Receiver& r, const char* what) {
  try {
    r.drain();
    ADD_FAILURE() << what << ": accepted";
  } catch (const PeerError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 5 sent a bad chunk header"), std::string::npos)
        << what << ": " << e.what();
  }
}

}  // namespace

TEST(ChunkHeader, CrcCatchesEveryBitFlip) {
  ChunkHeader good = ChunkHeader::make(123456789, 1000);
  EXPECT_TRUE(good.intact());
  for (size_t bit = 0; bit < 8 * sizeof(good); ++bit) {
    ChunkHeader h = good;
    reinterpret_cast<uint8_t*>(&h)[bit / 8] ^= uint8_t(1u << (bit % 8));
    EXPECT_FALSE(h.intact()) << "bit " << bit;
  }
  // The old XOR check let offset and length errors cancel; a CRC does not.
  EXPECT_FALSE(ChunkHeader::make(0, 0).intact());  // empty chunk
  ChunkHeader wraps = ChunkHeader::make(ChunkHeader::kMaxOffset - 10, 11);
  EXPECT_FALSE(wraps.intact());  // would end past the stream's end
  EXPECT_TRUE(ChunkHeader::make(ChunkHeader::kMaxOffset - 11, 11).intact());
}

TEST(ChunkHeader, ChunksInAnyOrderAcrossPathsReassemble) {
  Receiver r(3);
  // Stream bytes 0..299 as three chunks; path 2's arrives first, path 0's last.
  r.io.chunk(2, ChunkHeader::make(200, 100), 0xcc, 100);
  r.io.chunk(1, ChunkHeader::make(100, 100), 0xbb, 100);
  EXPECT_TRUE(r.drain().empty());
  r.io.chunk(0, ChunkHeader::make(0, 100), 0xaa, 100);
  auto got = r.drain();
  ASSERT_EQ(got.size(), 300u);
  for (size_t i = 0; i < 300; ++i) ASSERT_EQ(got[i], uint8_t(0xaa + 0x11 * (i / 100))) << i;
}

TEST(ChunkHeader, BadChecksAreRefused) {
  Receiver r(1);
  ChunkHeader h = ChunkHeader::make(0, 16);
  h.check ^= 1;
  r.io.chunk(0, h, 1, 16);
  expectRefused(r, "wrong check");
}

TEST(ChunkHeader, ChunksWhereNoneCanBeAreRefused) {
  {  // longer than the sender's chunks
    Receiver r(1);
    r.io.chunk(0, ChunkHeader::make(0, kMaxChunk + 1), 1, 16);
    expectRefused(r, "longer than a chunk");
  }
  {  // before what already arrived in order
    Receiver r(1);
    r.io.chunk(0, ChunkHeader::make(0, 64), 1, 64);
    EXPECT_EQ(r.drain().size(), 64u);
    r.io.chunk(0, ChunkHeader::make(32, 64), 2, 64);
    expectRefused(r, "behind the prefix");
  }
  {  // over a complete chunk another path delivered out of order
    Receiver r(2);
    r.io.chunk(1, ChunkHeader::make(100, 50), 1, 50);
    EXPECT_TRUE(r.drain().empty());
    r.io.chunk(0, ChunkHeader::make(60, 50), 2, 50);  // 60..110 overlaps 100..150
    expectRefused(r, "over a done chunk");
  }
  {  // over a chunk another path is still delivering
    Receiver r(2);
    r.io.chunk(1, ChunkHeader::make(100, 50), 1, 10);  // 40 payload bytes still to come
    EXPECT_TRUE(r.drain().empty());
    r.io.chunk(0, ChunkHeader::make(120, 50), 2, 50);
    expectRefused(r, "over an open chunk");
  }
  {  // out of order on its own path (the sender cuts in order)
    Receiver r(1);
    r.io.chunk(0, ChunkHeader::make(100, 10), 1, 10);
    r.io.chunk(0, ChunkHeader::make(50, 10), 2, 10);
    expectRefused(r, "backwards on a path");
  }
}

}  // namespace chorus::stripe
