// Host-side checks of the verbs transport's pure decisions (no RDMA device needed):
// CHORUS_IB_HCA parsing as NCCL_IB_HCA, the RoCE GID choice, the connection record.
#include "transports/ib/ib_config.hpp"
#include "transports/ib/ib_qp.hpp"
#include "transports/ib/ib_rendezvous.hpp"

#include <gtest/gtest.h>
#include <chorus/chorus.hpp>

#include <cstdlib>

using namespace chorus::ib;

TEST(IbHca, EmptyAllowsEverything) {
  HcaFilter f("");
  EXPECT_TRUE(f.allows("mlx5_0", 1));
  EXPECT_TRUE(f.allows("rxe0", 2));
}

TEST(IbHca, PrefixAndPort) {
  HcaFilter f("mlx5_0:1,mlx5_1");
  EXPECT_TRUE(f.allows("mlx5_0", 1));
  EXPECT_FALSE(f.allows("mlx5_0", 2));
  EXPECT_TRUE(f.allows("mlx5_1", 2));
  EXPECT_TRUE(f.allows("mlx5_10", 1));  // prefix match, as NCCL
  EXPECT_FALSE(f.allows("rxe0", 1));
}

TEST(IbHca, ExactAndExclude) {
  EXPECT_FALSE(HcaFilter("=mlx5_1").allows("mlx5_10", 1));
  EXPECT_TRUE(HcaFilter("=mlx5_1").allows("mlx5_1", 1));
  HcaFilter ex("^mlx5_0");
  EXPECT_FALSE(ex.allows("mlx5_0", 1));
  EXPECT_TRUE(ex.allows("rxe0", 1));
  HcaFilter exExact("^=mlx5_1");
  EXPECT_FALSE(exExact.allows("mlx5_1", 1));
  EXPECT_TRUE(exExact.allows("mlx5_10", 1));
  HcaFilter exPort("^mlx5_0:2");
  EXPECT_TRUE(exPort.allows("mlx5_0", 1));
  EXPECT_FALSE(exPort.allows("mlx5_0", 2));
}

GidEntry gid(int index, GidType type, std::initializer_list<int> tail) {
  GidEntry e;
  e.index = index;
  e.type = type;
  int i = 16 - static_cast<int>(tail.size());
  for (int b : tail) e.raw[i++] = static_cast<uint8_t>(b);
  return e;
}

TEST(IbGid, PrefersRoceV2Ipv4Mapped) {
  std::vector<GidEntry> t = {
      gid(0, GidType::IbOrRoceV1, {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}),
      gid(1, GidType::RoceV2, {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}),
      gid(2, GidType::IbOrRoceV1, {0xff, 0xff, 10, 0, 0, 1}),
      gid(3, GidType::RoceV2, {0xff, 0xff, 10, 0, 0, 1})};
  EXPECT_EQ(pickGid(t, -1), 3);
  EXPECT_TRUE(isIpv4Mapped(t[3].raw));
  EXPECT_FALSE(isIpv4Mapped(t[1].raw));
  EXPECT_EQ(pickGid(t, 0), 0);   // forced
  EXPECT_EQ(pickGid(t, 7), -1);  // forced but absent
  t.pop_back();
  EXPECT_EQ(pickGid(t, -1), 1);  // RoCE v2 link-local
  EXPECT_EQ(pickGid({}, -1), -1);
}

TEST(IbConfig, RingIsAMultipleOfTheBlockAndHoldsTwoPerQp) {
  setenv("CHORUS_IB_QPS_PER_CONNECTION", "4", 1);
  setenv("CHORUS_IB_BLOCK", "100K", 1);
  setenv("CHORUS_IB_BUFFER", "1M", 1);
  IbConfig c = IbConfig::fromEnv();
  EXPECT_EQ(c.qps, 4);
  EXPECT_EQ(c.block % 4096, 0u);
  EXPECT_EQ(c.ring % c.block, 0u);
  EXPECT_GE(c.ring, 2 * 4 * c.block);
  setenv("CHORUS_IB_QPS_PER_CONNECTION", "0", 1);
  EXPECT_THROW(IbConfig::fromEnv(), chorus::Error);
  unsetenv("CHORUS_IB_QPS_PER_CONNECTION");
  unsetenv("CHORUS_IB_BLOCK");
  unsetenv("CHORUS_IB_BUFFER");
}

// The connection record carries one address and ring key per rail; a record cut short
// or with no rail is refused with an error naming the peer.
TEST(IbPeerInfo, RailsRoundTrip) {
  PeerInfo p;
  p.from = 3;
  p.to = 1;
  p.ethernet = 1;
  p.block = 16384;
  p.ring = 1 << 20;
  p.ringAddr = 0x7f0012345000;
  for (int r = 0; r < 2; ++r) {
    RailAddress a;
    a.gid[15] = static_cast<uint8_t>(10 + r);
    a.lid = static_cast<uint16_t>(100 + r);
    a.mtu = 3;
    a.rkey = 0xabc0 + r;
    p.rails.push_back(a);
  }
  p.qps = {{11, 21}, {12, 22}, {13, 23}, {14, 24}};
  auto bytes = p.encode();
  PeerInfo q = PeerInfo::decode(bytes, 3);
  EXPECT_EQ(q.from, 3);
  EXPECT_EQ(q.to, 1);
  EXPECT_EQ(q.ringAddr, p.ringAddr);
  ASSERT_EQ(q.rails.size(), 2u);
  EXPECT_EQ(q.rails[1].gid[15], 11);
  EXPECT_EQ(q.rails[1].lid, 101);
  EXPECT_EQ(q.rails[1].rkey, 0xabc1u);
  ASSERT_EQ(q.qps.size(), 4u);
  EXPECT_EQ(q.qps[3].qpn, 14u);
  EXPECT_EQ(q.qps[3].psn, 24u);

  bytes.pop_back();
  try {
    PeerInfo::decode(bytes, 3);
    FAIL() << "a short record was accepted";
  } catch (const chorus::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
  }
  p.rails.clear();
  EXPECT_THROW(PeerInfo::decode(p.encode(), 3), chorus::Error);
}

// The rendezvous threshold travels in the connection record (ends that differ fail at
// connect instead of misreading each other's streams).
TEST(IbPeerInfo, RendezvousThresholdRoundTrips) {
  PeerInfo p;
  p.rendezvous = 65536;
  p.rails.resize(1);
  p.qps = {{1, 2}};
  EXPECT_EQ(PeerInfo::decode(p.encode(), 0).rendezvous, 65536u);
}

// The receiver's answer: 56 bytes "ANS2", rails, address, size, one rkey per rail;
// anything else in a control slot is not taken for one. A zero address is a refusal.
TEST(IbRendezvous, AnswerWireFormat) {
  chorus::ib::RendezvousAnswer a;
  a.rails = 2;
  a.rkey[0] = 0x11223344;
  a.rkey[1] = 0x55667788;
  a.addr = 0x7f0000001000;
  a.bytes = 4 << 20;
  std::byte raw[56];
  std::memcpy(raw, &a, sizeof a);
  EXPECT_EQ(static_cast<char>(raw[0]), 'A');
  EXPECT_EQ(static_cast<char>(raw[3]), '2');
  EXPECT_EQ(static_cast<uint8_t>(raw[4]), 2);
  EXPECT_EQ(static_cast<uint8_t>(raw[24]), 0x44);
  EXPECT_EQ(static_cast<uint8_t>(raw[28]), 0x88);
  auto back = chorus::ib::parseAnswer(raw, sizeof raw);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->accepted());
  EXPECT_EQ(back->addr, a.addr);
  EXPECT_EQ(back->rails, 2u);
  EXPECT_EQ(back->rkey[0], a.rkey[0]);
  EXPECT_EQ(back->rkey[1], a.rkey[1]);
  EXPECT_EQ(back->bytes, a.bytes);
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, 55).has_value());
  raw[4] = std::byte{0};  // accepted with no keys
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, sizeof raw).has_value());
  raw[4] = std::byte{9};  // more keys than a slot holds
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, sizeof raw).has_value());
  raw[4] = std::byte{2};
  raw[0] = std::byte{0};
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, sizeof raw).has_value());
  EXPECT_FALSE(chorus::ib::RendezvousAnswer{}.accepted());
}

// A piece's immediate has the top bit; a stream block's never does (its ring offset is
// below the ring's 2 GiB bound), so the receiver tells them apart.
TEST(IbRendezvous, PieceImmediateIsNoStreamLength) {
  using namespace chorus::ib;
  EXPECT_TRUE(isPiece(pieceImmediate(131072)));
  EXPECT_EQ(immediateLength(pieceImmediate(131072)), 131072u);
  EXPECT_EQ(immediateLength(pieceImmediate(kMaxPiece)), kMaxPiece);
  EXPECT_FALSE(isPiece(131072));
  EXPECT_FALSE(isPiece(0x7fffffff));
}
