// The bookkeeping every PeerMemory that registers memory with a device shares (ib's
// RegCache handles, ucx's ucp_mem_h): which registered regions this rank has exposed to
// its peers, keyed by start address, each with the transport's handle for it.
//
// A region is the same buffer only if its start, length and serial match (memAlloc's
// serial tells a new allocation at an old address apart); anything else at an overlapping
// range is an old buffer whose registration maps freed pages, and must go before the new
// one is registered. The transport's handle releases its registration when it is erased
// (a destructor, or the callback of eraseOverlapping).
#pragma once

#include "memory/shared_memory.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

namespace chorus {

template <class Handle>
class ExposedRegions {
 public:
  // The handle of exactly this region (start, bytes and serial), or nullptr.
  Handle* find(const LocalRegion& region) {
    auto it = regions_.find(reinterpret_cast<uintptr_t>(region.base));
    if (it == regions_.end() || it->second.bytes != region.bytes ||
        it->second.serial != region.serial)
      return nullptr;
    return &it->second.handle;
  }

  // Records `handle` for `region`; the caller has erased what overlapped it.
  Handle& insert(const LocalRegion& region, Handle handle) {
    Entry e{region.bytes, region.serial, std::move(handle)};
    return regions_.insert_or_assign(reinterpret_cast<uintptr_t>(region.base), std::move(e))
        .first->second.handle;
  }

  // The handle of the region holding all of [data, data + bytes), or nullptr.
  const Handle* containing(const void* data, size_t bytes) const {
    const auto start = reinterpret_cast<uintptr_t>(data);
    auto it = regions_.upper_bound(start);
    if (it == regions_.begin()) return nullptr;
    --it;
    return start + bytes <= it->first + it->second.bytes ? &it->second.handle : nullptr;
  }

  // Erases every region overlapping [data, data + bytes), calling release(handle) first.
  template <class Release>
  void eraseOverlapping(const void* data, size_t bytes, Release&& release) {
    const auto start = reinterpret_cast<uintptr_t>(data);
    for (auto it = regions_.begin(); it != regions_.end();) {
      if (it->first < start + bytes && start < it->first + it->second.bytes) {
        release(it->second.handle);
        it = regions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  void eraseOverlapping(const void* data, size_t bytes) {
    eraseOverlapping(data, bytes, [](Handle&) {});
  }

  template <class F>
  void forEach(F&& f) {
    for (auto& [start, e] : regions_) f(e.handle);
  }
  size_t size() const { return regions_.size(); }

 private:
  struct Entry {
    size_t bytes;
    uint64_t serial;
    Handle handle;
  };
  std::map<uintptr_t, Entry> regions_;  // by start address
};

// Throws InternalError, "<transport>: <doing> bytes [a, b) of the N bytes rank P
// exposed", when [offset, offset + bytes) is not inside a peer's exposed `exposedBytes`.
void checkExposedRange(const char* transport, int peer, const char* doing, uint64_t exposedBytes,
                       size_t offset, size_t bytes);

}  // namespace chorus
