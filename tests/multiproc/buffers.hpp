// Host buffers with guard zones before and after the data, and "junk" fill patterns that
// can be regenerated to prove a region was left untouched.
#pragma once

#include "inputs.hpp"

#include <chorus/chorus.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace chorus_test {

// The junk pattern: byte `off` of the pattern `seed` is byte off % 8 of word off / 8.
inline uint64_t junkWord(uint64_t seed, uint64_t word) {
  return mix64(seed ^ (word * 0x9e3779b97f4a7c15ull));
}

// Writes bytes [from, from + bytes) of the junk pattern `seed` to out.
inline void fillJunk(unsigned char* out, size_t from, size_t bytes, uint64_t seed) {
  size_t done = 0;
  while (done < bytes) {
    size_t off = from + done;
    uint64_t v = junkWord(seed, off / 8);
    size_t k = off % 8;
    size_t n = std::min<size_t>(8 - k, bytes - done);
    std::memcpy(out + done, reinterpret_cast<const unsigned char*>(&v) + k, n);
    done += n;
  }
}

// Where buffers come from (--buffers): ordinary memory, ordinary memory registered with
// the communicator (registerBuffer) on every rank or on rank 0 only (its registered
// sources meet the others' unregistered destinations), or chorus::memAlloc; all but the
// first let collectives take the one-sided path.
enum class BufferMode { Malloc, Registered, RegisteredOnRank0, MemAlloc };
struct BufferSource {
  BufferMode mode = BufferMode::Malloc;
  chorus::Communicator* comm = nullptr;  // for Registered
};
inline BufferSource& bufferSource() {
  static BufferSource source;
  return source;
}

class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 512;
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  ~GuardedBuffer() {
    const BufferSource& source = bufferSource();
    if (handle_) source.comm->deregister(handle_);
    if (allocated_) chorus::memFree(mem_.release());
  }

  // `misalign`: bytes added to a 64-byte aligned start (a multiple of the element size).
  GuardedBuffer(size_t bytes, size_t misalign, uint64_t seed)
      : bytes_(bytes), seed_(mix64(seed ^ 0x6a09e667f3bcc908ull)) {
    total_ = kGuard + 64 + misalign + bytes + kGuard;
    const BufferSource& source = bufferSource();
    if (source.mode == BufferMode::MemAlloc) {
      allocated_ = static_cast<unsigned char*>(chorus::memAlloc(total_));
      mem_.reset(allocated_);
    } else {
      mem_.reset(new unsigned char[total_]);
      if (source.mode == BufferMode::Registered ||
          (source.mode == BufferMode::RegisteredOnRank0 && source.comm->rank() == 0))
        handle_ = source.comm->registerBuffer(mem_.get(), total_);
    }
    auto base = reinterpret_cast<uintptr_t>(mem_.get()) + kGuard;
    base = (base + 63) & ~uintptr_t{63};
    data_ = reinterpret_cast<unsigned char*>(base) + misalign;
    fillJunk(mem_.get(), 0, total_, seed_);
  }

  // Writes the buffer's initial junk for data bytes [from, to) to out: what a region the
  // collective must not write still holds.
  void initialData(unsigned char* out, size_t from, size_t to) const {
    fillJunk(out, offset() + from, to - from, seed_);
  }

  unsigned char* data() { return data_; }
  const unsigned char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

  // Byte offset relative to data() of the first modified guard byte (negative: before the
  // data), or false when both guards are intact.
  bool guardDamaged(long* where) const {
    const unsigned char* m = mem_.get();
    const size_t before = offset();
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
  size_t offset() const { return static_cast<size_t>(data_ - mem_.get()); }
  unsigned char junkByte(size_t off) const {
    return static_cast<unsigned char>(junkWord(seed_, off / 8) >> (8 * (off % 8)));
  }

  size_t bytes_;
  uint64_t seed_;
  size_t total_ = 0;
  unsigned char* allocated_ = nullptr;  // memAlloc'd: the destructor frees it
  void* handle_ = nullptr;              // registered: the destructor deregisters it
  std::unique_ptr<unsigned char[]> mem_;
  unsigned char* data_ = nullptr;
};

}  // namespace chorus_test
