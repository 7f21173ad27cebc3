// The 16 bytes in front of every chunk on a path: where the chunk's payload belongs in
// the peer's byte stream, and a check word.
//
// The check is a CRC-32 (zlib) of a magic, the offset and the length. It is for framing
// integrity: a desynchronised stream (reading payload as a header), a corrupted header or
// a foreign stream fails it, except with odds of 2^-32 for random bytes. It is not a MAC,
// on purpose: the connection was authenticated with the job's token at set-up
// (security/handshake.hpp), and an attacker able to inject into an established TCP
// connection could change the payload, which no header check covers, just as well.
// Where a chunk may go (bounds, overlaps) is the receiver's to check (stripe_receiver.cpp).
#pragma once

#include <cstdint>

namespace chorus::stripe {

struct ChunkHeader {
  uint64_t offset = 0;  // stream offset of the first payload byte
  uint32_t length = 0;  // payload bytes that follow on the same path, > 0
  uint32_t check = 0;

  static constexpr uint32_t kMagic = 0x43485253;  // "CHRS"
  // The stream never gets near 2^63 bytes; a chunk ending beyond is malformed.
  static constexpr uint64_t kMaxOffset = uint64_t{1} << 63;

  static ChunkHeader make(uint64_t offset, uint32_t length) {
    return {offset, length, seal(offset, length)};
  }
  // The check matches, the chunk is not empty and its end fits in the stream.
  bool intact() const {
    return length > 0 && offset <= kMaxOffset - length && check == seal(offset, length);
  }

 private:
  static uint32_t seal(uint64_t offset, uint32_t length);  // chunk_header.cpp
};
static_assert(sizeof(ChunkHeader) == 16);

}  // namespace chorus::stripe
