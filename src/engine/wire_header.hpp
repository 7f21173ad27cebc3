// The fingerprint of a call that travels ahead of an op's first message to each peer:
// ranks that called different collectives, counts, types, ops, roots or algorithms at
// the same point get an error that says who called what, instead of a hang or garbage.
// 32 bytes (the stream stays 8-byte aligned); both ends run the same binary format.
#pragma once

#include "engine/op_state.hpp"

#include <cstring>
#include <optional>
#include <string>

namespace chorus::detail {

struct WireHeader {
  static constexpr uint32_t kMagic = 0x31524843;  // "CHR1"
  uint32_t magic = kMagic;
  uint8_t collective = 0, type = 0, op = 0, algorithm = 0xff;
  int32_t root = 0;
  uint32_t countsHash = 0;  // the v-collectives' per-rank counts (FNV-1a), else 0
  uint64_t count = 0;
  uint64_t sequence = 0;
};
static_assert(sizeof(WireHeader) == 32);

inline WireHeader headerOf(const OpState& op) {
  WireHeader h;
  h.collective = static_cast<uint8_t>(op.collective);
  h.type = static_cast<uint8_t>(op.type);
  h.op = static_cast<uint8_t>(op.op);
  h.algorithm = static_cast<uint8_t>(op.algorithmIndex);
  h.root = op.root;
  h.count = op.count;
  h.countsHash = op.countsHash;
  h.sequence = op.sequence;
  return h;
}

// "allGather #7 (512 x float, ring)" for a peer's header.
std::string describeHeader(const WireHeader& h);

// Empty when `theirs` (from `peer`) matches this op; else what is wrong, for the error.
std::optional<std::string> mismatch(const OpState& mine, const WireHeader& theirs, int peer);

}  // namespace chorus::detail
