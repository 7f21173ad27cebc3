// What the verbs rendezvous (ib_channel.hpp, transport.hpp's DirectTransfer) puts on the
// wire besides the data: the receiver's answer, a 64-byte SEND on QP 0 into one of the
// slots its receives post there (the destination's key on each rail, so that the pieces
// may go over every rail, and the number of the transfer it answers), and the immediate
// of the data's RDMA WRITEs, which tells the receiver's completion queue a rendezvous
// piece from a stream block. Pure data and the sender's matching of answers to its
// transfers, unit-tested on the host (tests/rdma/ib_config_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>

namespace chorus::ib {

// Rails a rendezvous spreads over (more rails: the first eight carry the pieces).
constexpr int kRendezvousRails = 8;

// Transfers are numbered 1, 2, ... in each direction of a channel, alike on both ends
// (the sender counts the offers it announces, the receiver the announced messages its
// steps take, in the same order). The answer names its transfer: a receiver may answer
// before it has read the offer (clear to send), and when that offer then says the data
// keeps the stream (the sender's source is not registered) the sender drops the answer.
struct RendezvousAnswer {
  static constexpr uint32_t kMagic = 0x33534e41;  // "ANS3"
  uint32_t magic = kMagic;
  uint32_t rails = 0;  // keys given: rkey[0, rails); 0 with addr 0: refused
  uint64_t addr = 0;   // where the transfer lands; 0: refused, send through the stream
  uint64_t bytes = 0;  // of the transfer
  uint32_t rkey[kRendezvousRails] = {};  // the destination's key on rail i's device
  uint64_t transfer = 0;                 // the number of the transfer answered (from 1)
  bool accepted() const { return addr != 0; }
};
static_assert(sizeof(RendezvousAnswer) == 64);
constexpr size_t kControlSlot = 64;  // bytes of one receive slot for answers

// The answer in a received slot of `len` bytes, when it is one.
inline std::optional<RendezvousAnswer> parseAnswer(const std::byte* slot, size_t len) {
  RendezvousAnswer a;
  if (len != sizeof a) return std::nullopt;
  std::memcpy(&a, slot, sizeof a);
  if (a.magic != RendezvousAnswer::kMagic || a.rails > kRendezvousRails) return std::nullopt;
  if (a.accepted() && a.rails == 0) return std::nullopt;
  if (a.transfer == 0) return std::nullopt;
  return a;
}

// The sender's answer for its transfer `transfer` among those received (oldest first):
// answers to earlier transfers are dropped (their offers said the data keeps the stream,
// so nothing uses them); Ahead: the front answers a later transfer (a protocol error:
// the receiver answers in order, after finishing the transfer before).
enum class AnswerMatch { None, Found, Ahead };
inline AnswerMatch matchAnswer(std::deque<RendezvousAnswer>& answers, uint64_t transfer) {
  while (!answers.empty() && answers.front().transfer < transfer) answers.pop_front();
  if (answers.empty()) return AnswerMatch::None;
  return answers.front().transfer == transfer ? AnswerMatch::Found : AnswerMatch::Ahead;
}

// Whether the receiver of a stream grants what it consumed before its engine sleeps, given
// the bytes the peer wrote beyond the last grant (`written`, what arrived: received minus
// granted) and the ring: only when the peer may run short of room, past half the ring. A
// writer with room keeps writing, and each write that lands wakes the receiver, which
// asks again; a writer out of room has written the whole ring since the last grant, past
// the threshold. So no grant waits on traffic that cannot come, and a stream of small
// messages (a rendezvous' offers) costs no grant, no work request and no wake-up of the
// peer, at each sleep. (consume() still grants every ring/4 consumed.)
inline bool grantBeforeSleep(uint64_t written, uint64_t ring) { return written > ring / 2; }

// Immediate of a write: a stream block carries its offset in the receiver's ring (< 2 GiB,
// the ring's bound; its length is the completion's byte_len), a rendezvous piece its
// offset in the transfer's written middle, modulo 2^31, with the top bit set (its length
// is byte_len too; PieceLanding places it).
constexpr uint32_t kPieceBit = 0x80000000u;
constexpr size_t kMaxPiece = kPieceBit - 1;
inline uint32_t pieceImmediate(uint64_t offset) {
  return kPieceBit | static_cast<uint32_t>(offset & kMaxPiece);
}
inline bool isPiece(uint32_t imm) { return (imm & kPieceBit) != 0; }
inline uint32_t immediateOffset(uint32_t imm) { return imm & ~kPieceBit; }
inline uint32_t ringOffset(uint32_t imm) { return imm; }  // of a stream block

}  // namespace chorus::ib
