// What the verbs rendezvous (ib_channel.hpp, transport.hpp's DirectTransfer) puts on the
// wire besides the data: the receiver's answer, a 24-byte SEND on QP 0 into one of the
// slots its receives post there, and the immediate of the data's RDMA WRITEs, which tells
// the receiver's completion queue a rendezvous piece from a stream block. Pure data,
// unit-tested on the host (tests/rdma/ib_config_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace chorus::ib {

struct RendezvousAnswer {
  static constexpr uint32_t kMagic = 0x31534e41;  // "ANS1"
  uint32_t magic = kMagic;
  uint32_t rkey = 0;   // the destination's key on rail 0; 0 with addr 0: refused
  uint64_t addr = 0;   // where the transfer lands; 0: refused, send through the stream
  uint64_t bytes = 0;  // of the transfer
  bool accepted() const { return addr != 0; }
};
static_assert(sizeof(RendezvousAnswer) == 24);
constexpr size_t kControlSlot = 32;  // bytes of one receive slot for answers

// The answer in a received slot of `len` bytes, when it is one.
inline std::optional<RendezvousAnswer> parseAnswer(const std::byte* slot, size_t len) {
  RendezvousAnswer a;
  if (len != sizeof a) return std::nullopt;
  std::memcpy(&a, slot, sizeof a);
  if (a.magic != RendezvousAnswer::kMagic) return std::nullopt;
  return a;
}

// Immediate of a write: a stream block carries its length (< 2 GiB, the ring's bound), a
// rendezvous piece its length with the top bit set.
constexpr uint32_t kPieceBit = 0x80000000u;
constexpr size_t kMaxPiece = kPieceBit - 1;
inline uint32_t pieceImmediate(uint32_t len) { return kPieceBit | len; }
inline bool isPiece(uint32_t imm) { return (imm & kPieceBit) != 0; }
inline uint32_t immediateLength(uint32_t imm) { return imm & ~kPieceBit; }

}  // namespace chorus::ib
