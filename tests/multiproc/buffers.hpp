// Host buffers with guard zones before and after the data, and "junk" fill patterns that
// can be regenerated to prove a region was left untouched.
#pragma once

#include "inputs.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace chorus_test {

// Fills [p, p + bytes) with a pattern that is a function of (seed, byte offset).
inline void fillJunk(unsigned char* p, size_t bytes, uint64_t seed) {
  size_t off = 0;
  for (uint64_t word = 0; off < bytes; ++word, off += 8) {
    uint64_t v = mix64(seed ^ (word * 0x9e3779b97f4a7c15ull));
    std::memcpy(p + off, &v, std::min<size_t>(8, bytes - off));
  }
}

// First byte offset where [p, p + bytes) differs from fillJunk(seed), or -1.
inline long firstJunkMismatch(const unsigned char* p, size_t bytes, uint64_t seed) {
  size_t off = 0;
  for (uint64_t word = 0; off < bytes; ++word, off += 8) {
    uint64_t v = mix64(seed ^ (word * 0x9e3779b97f4a7c15ull));
    size_t n = std::min<size_t>(8, bytes - off);
    if (std::memcmp(p + off, &v, n) != 0) {
      const auto* vb = reinterpret_cast<const unsigned char*>(&v);
      for (size_t k = 0; k < n; ++k) {
        if (p[off + k] != vb[k]) return static_cast<long>(off + k);
      }
    }
  }
  return -1;
}

class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 512;

  // `misalign`: bytes added to a 64-byte aligned start (a multiple of the element size).
  GuardedBuffer(size_t bytes, size_t misalign, uint64_t seed)
      : bytes_(bytes), seed_(mix64(seed ^ 0x6a09e667f3bcc908ull)) {
    total_ = kGuard + 64 + misalign + bytes + kGuard;
    mem_.reset(new unsigned char[total_]);
    auto base = reinterpret_cast<uintptr_t>(mem_.get()) + kGuard;
    base = (base + 63) & ~uintptr_t{63};
    data_ = reinterpret_cast<unsigned char*>(base) + misalign;
    fillJunk(mem_.get(), total_, seed_);
  }

  // First byte in [from, to) of the data that no longer holds the buffer's initial junk,
  // or -1: proves a region the collective must not write was left alone.
  long firstChangedDataByte(size_t from, size_t to) const {
    size_t before = static_cast<size_t>(data_ - mem_.get());
    for (size_t i = from; i < to; ++i) {
      if (data_[i] != junkByte(before + i)) return static_cast<long>(i);
    }
    return -1;
  }

  unsigned char* data() { return data_; }
  const unsigned char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

  // Byte offset relative to data() of the first modified guard byte (negative: before the
  // data), or false when both guards are intact.
  bool guardDamaged(long* where) const {
    const unsigned char* m = mem_.get();
    size_t before = static_cast<size_t>(data_ - m);
    // The guard pattern is the junk of the whole allocation, so compare zone by zone.
    for (size_t i = 0; i < before; ++i) {
      if (m[i] != junkByte(i)) {
        *where = static_cast<long>(i) - static_cast<long>(before);
        return true;
      }
    }
    for (size_t i = before + bytes_; i < total_; ++i) {
      if (m[i] != junkByte(i)) {
        *where = static_cast<long>(i - before);
        return true;
      }
    }
    return false;
  }

 private:
  unsigned char junkByte(size_t off) const {
    uint64_t v = mix64(seed_ ^ ((off / 8) * 0x9e3779b97f4a7c15ull));
    return static_cast<unsigned char>(v >> (8 * (off % 8)));
  }

  size_t bytes_;
  uint64_t seed_;
  size_t total_ = 0;
  std::unique_ptr<unsigned char[]> mem_;
  unsigned char* data_ = nullptr;
};

}  // namespace chorus_test
