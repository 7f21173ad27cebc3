#include "striping/chunk_header.hpp"

#include <zlib.h>

#include <cstring>

namespace chorus::stripe {

uint32_t ChunkHeader::seal(uint64_t offset, uint32_t length) {
  unsigned char bytes[16];  // magic | offset | length, in the host's (little-endian) order
  const uint32_t magic = kMagic;
  std::memcpy(bytes, &magic, 4);
  std::memcpy(bytes + 4, &offset, 8);
  std::memcpy(bytes + 12, &length, 4);
  return static_cast<uint32_t>(crc32_z(0, bytes, sizeof(bytes)));
}

}  // namespace chorus::stripe
