// Host-side checks of the verbs transport's pure decisions (no RDMA device needed):
// CHORUS_IB_HCA parsing as NCCL_IB_HCA, the RoCE GID choice, the connection record.
#include "transports/ib/ib_config.hpp"
#include "engine/rendezvous.hpp"
#include "kernels/reduce.hpp"
#include "transports/ib/ib_qp.hpp"
#include "transports/ib/ib_rendezvous.hpp"
#include "transports/ib/piece_landing.hpp"

#include <gtest/gtest.h>
#include <chorus/chorus.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace chorus::ib;

// Before sleeping, the receiver grants only when the sender may run short: past half the
// ring written since the last grant (a sender out of room has written all of it).
TEST(IbCredits, GrantBeforeSleepOnlyWhenTheSenderMayRunShort) {
  using chorus::ib::grantBeforeSleep;
  EXPECT_FALSE(grantBeforeSleep(0, 2 << 20));
  EXPECT_FALSE(grantBeforeSleep(48, 2 << 20));  // a rendezvous' fingerprint and offer
  EXPECT_FALSE(grantBeforeSleep(1 << 20, 2 << 20));
  EXPECT_TRUE(grantBeforeSleep((1 << 20) + 1, 2 << 20));
  EXPECT_TRUE(grantBeforeSleep(2 << 20, 2 << 20));  // out of room
}

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
  bytes.push_back(std::byte{0});
  EXPECT_NO_THROW(PeerInfo::decode(bytes, 3));
  // The ethernet flag is a 32-bit word on the wire: anything but 0 or 1 is malformed (a
  // soak of the ib_record fuzzer found 0x00070300 read as 0, a different record).
  bytes[12] = std::byte{2};
  EXPECT_THROW(PeerInfo::decode(bytes, 3), chorus::Error);
  bytes[12] = std::byte{0};
  bytes[14] = std::byte{7};
  EXPECT_THROW(PeerInfo::decode(bytes, 3), chorus::Error);
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

// The receiver's answer: 64 bytes "ANS3", rails, address, size, one rkey per rail, the
// transfer's number; anything else in a control slot is not taken for one. A zero
// address is a refusal.
TEST(IbRendezvous, AnswerWireFormat) {
  chorus::ib::RendezvousAnswer a;
  a.rails = 2;
  a.rkey[0] = 0x11223344;
  a.rkey[1] = 0x55667788;
  a.addr = 0x7f0000001000;
  a.bytes = 4 << 20;
  a.transfer = 0x0102;
  std::byte raw[64];
  std::memcpy(raw, &a, sizeof a);
  EXPECT_EQ(static_cast<char>(raw[0]), 'A');
  EXPECT_EQ(static_cast<char>(raw[3]), '3');
  EXPECT_EQ(static_cast<uint8_t>(raw[4]), 2);
  EXPECT_EQ(static_cast<uint8_t>(raw[24]), 0x44);
  EXPECT_EQ(static_cast<uint8_t>(raw[28]), 0x88);
  EXPECT_EQ(static_cast<uint8_t>(raw[56]), 0x02);
  EXPECT_EQ(static_cast<uint8_t>(raw[57]), 0x01);
  auto back = chorus::ib::parseAnswer(raw, sizeof raw);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->accepted());
  EXPECT_EQ(back->addr, a.addr);
  EXPECT_EQ(back->rails, 2u);
  EXPECT_EQ(back->rkey[0], a.rkey[0]);
  EXPECT_EQ(back->rkey[1], a.rkey[1]);
  EXPECT_EQ(back->bytes, a.bytes);
  EXPECT_EQ(back->transfer, a.transfer);
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, 63).has_value());
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, 56).has_value());  // the old 56-byte answer
  raw[56] = std::byte{0};
  raw[57] = std::byte{0};  // transfer 0: none is numbered so
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, sizeof raw).has_value());
  raw[56] = std::byte{1};
  raw[4] = std::byte{0};  // accepted with no keys
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, sizeof raw).has_value());
  raw[4] = std::byte{9};  // more keys than a slot holds
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, sizeof raw).has_value());
  raw[4] = std::byte{2};
  raw[0] = std::byte{0};
  EXPECT_FALSE(chorus::ib::parseAnswer(raw, sizeof raw).has_value());
  EXPECT_FALSE(chorus::ib::RendezvousAnswer{}.accepted());
}

// Clear to send: the receiver answered transfers 1 and 2 before their offers, 1's offer
// then said "stream" (the sender never asked), so the sender, now at transfer 2, drops
// 1's answer and takes 2's; an answer to a later transfer than the sender's is an error.
TEST(IbRendezvous, AnswersMatchTheirTransfer) {
  using namespace chorus::ib;
  auto answer = [](uint64_t transfer, uint64_t addr) {
    RendezvousAnswer a;
    a.transfer = transfer;
    a.addr = addr;
    a.rails = 1;
    return a;
  };
  std::deque<RendezvousAnswer> answers;
  EXPECT_EQ(matchAnswer(answers, 1), AnswerMatch::None);
  answers.push_back(answer(1, 0x1000));
  answers.push_back(answer(2, 0x2000));
  EXPECT_EQ(matchAnswer(answers, 2), AnswerMatch::Found);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers.front().addr, 0x2000u);
  EXPECT_EQ(matchAnswer(answers, 2), AnswerMatch::Found);  // taken only by putDone
  answers.pop_front();
  answers.push_back(answer(3, 0x3000));  // stale for a sender at 4: dropped
  EXPECT_EQ(matchAnswer(answers, 4), AnswerMatch::None);
  EXPECT_TRUE(answers.empty());
  answers.push_back(answer(6, 0x6000));
  EXPECT_EQ(matchAnswer(answers, 5), AnswerMatch::Ahead);
  EXPECT_EQ(answers.size(), 1u);
}

// A piece's immediate has the top bit and its offset in the written middle, modulo 2^31; a
// stream block's never has the top bit (its ring offset is below the ring's 2 GiB bound),
// so the receiver tells them apart.
TEST(IbRendezvous, PieceImmediateCarriesItsOffset) {
  using namespace chorus::ib;
  EXPECT_TRUE(isPiece(pieceImmediate(131072)));
  EXPECT_EQ(immediateOffset(pieceImmediate(131072)), 131072u);
  EXPECT_EQ(immediateOffset(pieceImmediate(0)), 0u);
  EXPECT_TRUE(isPiece(pieceImmediate(0)));
  EXPECT_EQ(immediateOffset(pieceImmediate(kMaxPiece)), kMaxPiece);
  EXPECT_EQ(immediateOffset(pieceImmediate(uint64_t{kPieceBit} + 5)), 5u);  // modulo 2^31
  EXPECT_FALSE(isPiece(131072));
  EXPECT_FALSE(isPiece(0x7fffffff));
}

// Pieces land in order on each QP, in any order across QPs: the prefix grows only over
// bytes that all landed; a piece over one that landed, or before its QP's previous one,
// is refused.
TEST(IbRendezvous, PiecesLandOutOfOrderAcrossQps) {
  using namespace chorus::ib;
  PieceLanding land(3, 16);
  land.reset(100);
  // A 100-byte middle in pieces of 16 (the last 4), piece k on QP k % 3.
  const auto piece = [&](int k) {
    return land.land(k % 3, pieceImmediate(16u * k), k == 6 ? 4u : 16u);
  };
  EXPECT_EQ(piece(2), nullptr);
  EXPECT_EQ(land.prefix(), 0u);
  EXPECT_EQ(piece(1), nullptr);
  EXPECT_EQ(land.prefix(), 0u);
  EXPECT_EQ(piece(0), nullptr);
  EXPECT_EQ(land.prefix(), 48u);
  EXPECT_EQ(piece(5), nullptr);
  EXPECT_EQ(piece(4), nullptr);
  EXPECT_EQ(land.prefix(), 48u);
  EXPECT_NE(land.land(1, pieceImmediate(16), 16), nullptr);  // landed already
  EXPECT_EQ(piece(3), nullptr);
  EXPECT_EQ(land.prefix(), 96u);
  EXPECT_EQ(piece(6), nullptr);
  EXPECT_EQ(land.prefix(), 100u);
  EXPECT_EQ(land.total(), 100u);
  EXPECT_NE(land.land(0, pieceImmediate(100), 17), nullptr);  // longer than a piece

  land.reset(100);  // the next transfer
  EXPECT_EQ(land.prefix(), 0u);
  EXPECT_EQ(land.total(), 0u);
  EXPECT_EQ(land.land(0, pieceImmediate(48), 16), nullptr);
  EXPECT_NE(land.land(0, pieceImmediate(0), 16), nullptr);  // before QP 0's previous piece
}

// A middle past 2 GiB: the immediate's offset wraps, and the receiver takes the one at or
// past its prefix (the sender has far less than 2 GiB in flight).
TEST(IbRendezvous, PieceOffsetsPast2GiBWrap) {
  using namespace chorus::ib;
  constexpr uint32_t kGiB = 1u << 30;
  PieceLanding land(2, kGiB);
  land.reset(uint64_t{4} * kGiB);
  EXPECT_EQ(land.land(1, pieceImmediate(uint64_t{kGiB}), kGiB), nullptr);
  EXPECT_EQ(land.land(0, pieceImmediate(0), kGiB), nullptr);
  EXPECT_EQ(land.prefix(), uint64_t{2} * kGiB);
  EXPECT_EQ(land.land(1, pieceImmediate(uint64_t{3} * kGiB), kGiB), nullptr);  // 2^31 + 2^30
  EXPECT_EQ(land.prefix(), uint64_t{2} * kGiB);
  EXPECT_EQ(land.land(0, pieceImmediate(uint64_t{2} * kGiB), kGiB), nullptr);  // imm offset 0
  EXPECT_EQ(land.prefix(), uint64_t{4} * kGiB);
}

// The receiver's fold as pieces land (Engine::recvRendezvous): a RecvReduce of 1,000
// elements whose head (64 B) and tail (64 B) come through the stream and whose middle comes
// in pieces of 256 B over 4 QPs, the QPs completing in a fixed shuffled order. After each
// arrival it folds what landedReady says is in; bytes not landed yet are poison (NaN, or
// a marker for integers) that would show in the result. Exact against the reference, and
// folded in more than one pass.
TEST(IbRendezvous, FoldsTheLandedPrefixWhilePiecesLandOutOfOrder) {
  using namespace chorus::ib;
  constexpr size_t kCount = 1000, kEs = 4, kBytes = kCount * kEs, kHead = 64, kTail = 64;
  constexpr size_t kMiddle = kBytes - kHead - kTail, kBlock = 256;
  constexpr int kQps = 4;
  for (const auto [type, op] : {std::pair{chorus::DataType::Float32, chorus::RedOp::Sum},
                                std::pair{chorus::DataType::Int32, chorus::RedOp::Max}}) {
    std::vector<std::byte> local(kBytes), remote(kBytes), landing(kBytes), dst(kBytes),
        want(kBytes);
    for (size_t i = 0; i < kCount; ++i) {
      if (type == chorus::DataType::Float32) {
        const float a = 0.25f * static_cast<float>(i % 37), b = -1.5f * static_cast<float>(i % 11);
        std::memcpy(&local[i * kEs], &a, kEs);
        std::memcpy(&remote[i * kEs], &b, kEs);
      } else {
        const int32_t a = static_cast<int32_t>(i * 7919 % 1000) - 500,
                      b = static_cast<int32_t>(i * 104729 % 1000) - 500;
        std::memcpy(&local[i * kEs], &a, kEs);
        std::memcpy(&remote[i * kEs], &b, kEs);
      }
    }
    chorus::kernels::reduce(type, op, want.data(), local.data(), remote.data(), kCount);
    std::memset(landing.data(), 0xff, kBytes);  // NaN as float32, -1 as int32: poison
    // The pieces of each QP, in order (piece k on QP k % kQps).
    std::vector<std::vector<size_t>> perQp(kQps);
    for (size_t at = 0, k = 0; at < kMiddle; at += kBlock, ++k) perQp[k % kQps].push_back(at);
    std::mt19937 pick(7);
    PieceLanding land(kQps, kBlock);
    land.reset(kMiddle);
    size_t elements = 0, passes = 0, streamed = 0;
    bool middleLanded = false;
    const auto fold = [&] {
      const size_t ready =
          chorus::detail::landedReady(kBytes, kHead, kTail, streamed, land.prefix(), middleLanded);
      const size_t to = std::min(kCount, ready / kEs);
      if (to <= elements) return;
      chorus::kernels::reduce(type, op, &dst[elements * kEs], &local[elements * kEs],
                              &landing[elements * kEs], to - elements);
      elements = to;
      ++passes;
    };
    std::memcpy(landing.data(), remote.data(), kHead);  // the head, from the stream
    streamed = kHead;
    fold();
    std::vector<size_t> next(kQps, 0);
    for (size_t left = (kMiddle + kBlock - 1) / kBlock; left > 0; --left) {
      int q;
      do q = static_cast<int>(pick() % kQps);
      while (next[q] == perQp[q].size());
      const size_t at = perQp[q][next[q]++];
      const size_t len = std::min(kBlock, kMiddle - at);
      std::memcpy(&landing[kHead + at], &remote[kHead + at], len);
      ASSERT_EQ(land.land(q, pieceImmediate(at), static_cast<uint32_t>(len)), nullptr);
      fold();
    }
    EXPECT_EQ(land.prefix(), kMiddle);
    middleLanded = true;
    std::memcpy(&landing[kBytes - kTail], &remote[kBytes - kTail], kTail);  // the tail
    streamed = kHead + kTail;
    fold();
    EXPECT_EQ(elements, kCount);
    EXPECT_GT(passes, 4u);
    EXPECT_EQ(std::memcmp(dst.data(), want.data(), kBytes), 0);
  }
}
