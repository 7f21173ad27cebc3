// The 16 bytes in front of every chunk on a path: where the chunk's payload belongs in
// the peer's byte stream. The check word catches a desynchronised or foreign stream.
#pragma once

#include <cstdint>

namespace chorus::stripe {

struct ChunkHeader {
  uint64_t offset = 0;  // stream offset of the first payload byte
  uint32_t length = 0;  // payload bytes that follow on the same path, > 0
  uint32_t check = 0;

  static constexpr uint32_t kMagic = 0x43485253;  // "CHRS"
  static ChunkHeader make(uint64_t offset, uint32_t length) {
    return {offset, length, seal(offset, length)};
  }
  bool valid() const { return length > 0 && check == seal(offset, length); }

 private:
  static uint32_t seal(uint64_t offset, uint32_t length) {
    return kMagic ^ static_cast<uint32_t>(offset) ^ static_cast<uint32_t>(offset >> 32) ^
           (length * 0x9e3779b9u);
  }
};
static_assert(sizeof(ChunkHeader) == 16);

}  // namespace chorus::stripe
