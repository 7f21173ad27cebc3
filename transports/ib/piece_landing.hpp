// Where the pieces of the verbs rendezvous transfer being received have landed
// (ib_channel.hpp). The sender cuts the transfer's written middle into pieces of at most
// a block and gives each to the QP its scheduler picks, on any rail; each RDMA WRITE with
// immediate carries the piece's offset in the middle (modulo 2^31: the top bit marks a
// piece, ib_rendezvous.hpp), its length is the completion's byte_len. RC keeps each QP in
// order, the QPs complete in any order relative to each other: a stripe::StreamAssembly
// (paths = QPs) checks every piece and knows the contiguous prefix, which the receiver
// folds or copies out while later pieces are still in flight. Pure bookkeeping,
// unit-tested on the host (tests/rdma/ib_config_test.cpp).
#pragma once

#include "striping/stream_assembly.hpp"
#include "transports/ib/ib_rendezvous.hpp"

#include <cstdint>

namespace chorus::ib {

class PieceLanding {
 public:
  PieceLanding(int qps, uint64_t maxPiece)
      : qps_(qps), maxPiece_(maxPiece), pieces_(qps, maxPiece) {}

  // A new transfer into a destination of `bytes` (the middle lies inside): nothing landed.
  void reset(uint64_t bytes) {
    pieces_ = stripe::StreamAssembly(qps_, maxPiece_);
    total_ = 0;
    limit_ = bytes;
  }
  // A piece landed on QP q: `immediate` (host order, a piece's: isPiece) and its `bytes`.
  // nullptr, or why the piece cannot be one of this transfer's (past the destination,
  // over another, out of order on its QP). Its offset is the one in [prefix, prefix +
  // 2^31) with the immediate's low 31 bits: every piece below the prefix landed, and the
  // sender has far less than 2 GiB in flight (its send queues' depth in blocks). (So a
  // piece repeated below the prefix reads as one 2 GiB on: past a smaller destination.)
  const char* land(int q, uint32_t immediate, uint32_t bytes) {
    const uint64_t prefix = pieces_.contiguous();
    const uint64_t offset = prefix + ((immediateOffset(immediate) - prefix) & kMaxPiece);
    if (const char* why = pieces_.place(q, offset, bytes, limit_)) return why;
    total_ += bytes;
    return nullptr;
  }
  // Bytes [0, prefix()) of the middle have landed.
  uint64_t prefix() const { return pieces_.contiguous(); }
  // Bytes landed in all (the prefix and the pieces beyond it).
  uint64_t total() const { return total_; }

 private:
  int qps_;
  uint64_t maxPiece_;
  stripe::StreamAssembly pieces_;
  uint64_t total_ = 0;
  uint64_t limit_ = 0;
};

}  // namespace chorus::ib
