// Where an accepted tcp connection goes by its hello (transports/tcp/tcp_hello.hpp), and
// that a peer started with other settings (nranks, CHORUS_TCP_STREAMS, CHORUS_TCP_BLOCK)
// fails loudly, naming them, instead of striping bytes into the wrong places.
#include "transports/tcp/tcp_hello.hpp"
#include "transports/tcp/tcp_listen.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace chorus::tcp {
namespace {

// A connection slot: false while empty (slotFor tests it as a bool).
struct Taken {
  bool on = false;
  explicit operator bool() const { return on; }
};
using Slots = std::vector<std::vector<Taken>>;

Hello hello(int rank, int stream, int streams, int nranks, uint64_t block) {
  return Hello{kHelloMagic, rank, stream, streams, nranks, block};
}

// The message of the InvalidUsage slotFor throws, or "" when it does not.
std::string refusal(const Hello& h, const TcpConfig& config, Slots& slots) {
  try {
    slotFor(h, 0, 3, config, slots);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::InvalidUsage) << e.what();
    return e.what();
  }
  return "";
}

TEST(TcpHello, OtherSettingsAreRefusedByName) {
  TcpConfig config;
  config.streams = 2;
  config.block = 128 << 10;
  Slots slots(3);
  std::string why = refusal(hello(1, 0, 2, 3, 64 << 10), config, slots);
  EXPECT_NE(why.find("CHORUS_TCP_BLOCK=65536"), std::string::npos) << why;
  EXPECT_NE(why.find("rank 1 uses"), std::string::npos) << why;
  why = refusal(hello(2, 0, 2, 4, 128 << 10), config, slots);
  EXPECT_NE(why.find("nranks=4"), std::string::npos) << why;
  // A peer with more NICs connects 2 streams per NIC: 4 is sane and sizes its slots (its
  // first hello does, even a refused one: rank 1's above sized them to 2)...
  slots = Slots(3);
  Taken* slot = slotFor(hello(1, 3, 4, 3, 128 << 10), 0, 3, config, slots);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slots[1].size(), 4u);
  slot->on = true;
  EXPECT_EQ(slotFor(hello(1, 3, 4, 3, 128 << 10), 0, 3, config, slots), nullptr) << "duplicate";
  Taken* first = slotFor(hello(1, 0, 4, 3, 128 << 10), 0, 3, config, slots);
  EXPECT_EQ(first, &slots[1][0]);
  // A count that is no multiple of ours (or absurdly large) sizes nothing and is refused.
  for (int streams : {3, 1, 64 * 2 + 2, 1 << 20}) {
    why = refusal(hello(2, 0, streams, 3, 128 << 10), config, slots);
    EXPECT_NE(why.find("CHORUS_TCP_STREAMS=" + std::to_string(streams)), std::string::npos) << why;
    EXPECT_TRUE(slots[2].empty()) << streams;
  }
  // ...after which the same peer announcing another count is refused.
  why = refusal(hello(1, 1, 2, 3, 128 << 10), config, slots);
  EXPECT_NE(why.find("CHORUS_TCP_STREAMS=2"), std::string::npos) << why;
}

TEST(TcpHello, StrangersAndNonsenseAreDropped) {
  TcpConfig config;
  Slots slots(3);
  const uint64_t block = config.block;
  Hello stranger = hello(1, 0, 2, 3, block);
  stranger.magic = 0;
  EXPECT_EQ(slotFor(stranger, 0, 3, config, slots), nullptr);
  EXPECT_EQ(slotFor(hello(0, 0, 2, 3, block), 0, 3, config, slots), nullptr) << "ourselves";
  EXPECT_EQ(slotFor(hello(3, 0, 2, 3, block), 0, 3, config, slots), nullptr) << "rank >= n";
  EXPECT_EQ(slotFor(hello(-1, 0, 2, 3, block), 0, 3, config, slots), nullptr);
  EXPECT_EQ(slotFor(hello(2, -1, 2, 3, block), 0, 3, config, slots), nullptr);
  EXPECT_TRUE(slots[1].empty() && slots[2].empty()) << "nothing sized by a dropped hello";
  Taken* second = slotFor(hello(2, 1, 2, 3, block), 0, 3, config, slots);
  EXPECT_EQ(second, &slots[2][1]);
}

}  // namespace
}  // namespace chorus::tcp
