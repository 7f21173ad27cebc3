// Memory that peers can reach: buffers from chorus::memAlloc (memfd shared memory that a
// peer process maps) and buffers the user registered with Communicator::registerBuffer
// (ordinary memory that a peer reads through the kernel, CMA). A collective whose buffers
// are all in such memory can take the one-sided path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace chorus {

// Where a buffer lives, as a transport needs it to describe the buffer to a peer.
struct LocalRegion {
  const std::byte* base = nullptr;
  size_t bytes = 0;
  int fd = -1;          // memfd of a memAlloc buffer; -1: registered ordinary memory
  uint64_t serial = 0;  // process-unique id of a memAlloc buffer (fd numbers are reused)
  // Registered memory the kernel may back with transparent huge pages (THPeligible in
  // /proc/self/smaps when registered): CMA reads it at about memcpy speed, while on 4 KiB
  // pages it runs at 0.35-0.5x (perf/README.md) and does not pay.
  bool hugePages = false;
};

namespace memory {

// memAlloc's page kind: "hugetlb" (MFD_HUGETLB, 2 MiB pages reserved by the system),
// "thp" (transparent huge pages on shared memory) or "4k" (neither is available here).
std::string pageKind();
// The memAlloc buffer containing [data, data + bytes), if any.
std::optional<LocalRegion> allocatedRegion(const void* data, size_t bytes);

// Every memAlloc allocation ends in a canary: a non-zero word, a function of the
// allocation's serial, written by memAlloc into the last kCanaryBytes of the mapping (the
// page round-up, or one more page; never part of a buffer a caller can name). A process
// whose view of the memory stopped being the shared memfd (its mapping replaced or
// truncated) reads something else there, so the owner before exposing the buffer and
// each peer before reading it check the word: a broken mapping fails the call instead of
// moving zeroes or stale bytes as if they were data (the fault suite's shm `close`).
inline constexpr size_t kCanaryBytes = 8;
uint64_t canaryFor(uint64_t serial);
// Whether the canary at the end of `mapped` bytes starting at `base` is serial's.
bool canaryIntact(const std::byte* base, size_t mapped, uint64_t serial);

// One communicator's registrations (registerBuffer); not thread-safe beyond the
// communicator's own rules (calls on one communicator come from one thread at a time).
class Registrations {
 public:
  // Registers [data, data + bytes) and returns its handle. Throws Error(InvalidArgument)
  // for a null pointer, zero bytes, or a range that overlaps one already registered.
  void* add(const void* data, size_t bytes);
  // Throws Error(InvalidArgument) for a handle this communicator did not hand out (or
  // already deregistered).
  // Returns the range it covered.
  std::pair<const void*, size_t> remove(void* handle);
  // The registered or memAlloc region containing [data, data + bytes), if any.
  std::optional<LocalRegion> find(const void* data, size_t bytes) const;
  bool empty() const { return byStart_.empty(); }

 private:
  struct Entry {
    size_t bytes;
    uint64_t handle;
    bool hugePages;
  };
  std::map<uintptr_t, Entry> byStart_;
  uint64_t nextHandle_ = 1;
};

}  // namespace memory
}  // namespace chorus
