// Memory registration, done once and reused. RegCache keeps registrations (page-aligned
// extents) by address and hands out a pinned handle for any range an entry covers;
// unpinned entries stay registered, least recently used first out, while more than
// `capacity` bytes are registered. BufferPool recycles page-aligned host buffers through
// the cache, so a communicator made after another one (re-init, shrink after a failure)
// gets its rings already registered instead of paying ibv_reg_mr again.
//
// Registered here: the rings and staging buffers, and the user's registered (or memAlloc)
// buffers that one-sided reads and the rendezvous reach (whole regions, so that later
// calls on the same buffer hit). Both classes are thread-safe: communicators in different
// threads share one device.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <vector>

namespace chorus::ib {

struct RegStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  size_t registeredBytes = 0;
  size_t entries = 0;
};

class RegCache {
  struct Entry;

 public:
  class Handle {  // pins one entry while alive
   public:
    Handle() = default;
    Handle(Handle&& o) noexcept : cache_(o.cache_), entry_(o.entry_) { o.entry_ = nullptr; }
    Handle& operator=(Handle&& o) noexcept;
    ~Handle() { reset(); }
    void reset();
    uint32_t lkey() const;
    uint32_t rkey() const;
    explicit operator bool() const { return entry_ != nullptr; }

   private:
    friend class RegCache;
    Handle(RegCache* c, Entry* e) : cache_(c), entry_(e) {}
    RegCache* cache_ = nullptr;
    Entry* entry_ = nullptr;
  };

  RegCache(ibv_pd* pd, size_t capacity, int access);
  ~RegCache();
  RegCache(const RegCache&) = delete;
  RegCache& operator=(const RegCache&) = delete;

  // A registration covering [addr, addr + len). Throws Error(SystemError) if
  // ibv_reg_mr fails (often RLIMIT_MEMLOCK: see `ulimit -l`).
  Handle acquire(const void* addr, size_t len);
  // Drops the unpinned entries overlapping the range; call before freeing such memory.
  void forget(const void* addr, size_t len);
  RegStats stats() const;

 private:
  struct Entry {
    uintptr_t start, end;
    ibv_mr* mr;
    int pins = 0;
    std::list<Entry*>::iterator idle;  // position in idle_ while pins == 0
  };
  void release(Entry* e);
  void evictLocked();
  void dropLocked(Entry* e);

  ibv_pd* pd_;
  size_t capacity_;
  int access_;
  mutable std::mutex mutex_;
  std::multimap<uintptr_t, Entry*> byStart_;  // owns the entries
  std::list<Entry*> idle_;                    // unpinned, most recently used first
  RegStats stats_;
};

class BufferPool {
 public:
  class Buffer {  // a registered buffer; goes back to the pool when destroyed
   public:
    Buffer() = default;
    Buffer(Buffer&& o) noexcept;
    Buffer& operator=(Buffer&& o) noexcept;
    ~Buffer();
    std::byte* data() const { return data_; }
    size_t size() const { return size_; }
    uint32_t lkey() const { return reg_.lkey(); }
    uint32_t rkey() const { return reg_.rkey(); }

   private:
    friend class BufferPool;
    BufferPool* pool_ = nullptr;
    std::byte* data_ = nullptr;
    size_t size_ = 0;
    RegCache::Handle reg_;
  };

  // Keeps at most `idleLimit` bytes of unused buffers.
  BufferPool(RegCache& cache, size_t idleLimit) : cache_(cache), idleLimit_(idleLimit) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A zeroed, page-aligned, registered buffer of at least `bytes`.
  Buffer get(size_t bytes);

 private:
  void put(std::byte* data, size_t size);
  void freeLocked(std::byte* data, size_t size);

  RegCache& cache_;
  size_t idleLimit_;
  std::mutex mutex_;
  std::list<std::pair<std::byte*, size_t>> idle_;  // most recently returned first
  size_t idleBytes_ = 0;
};

}  // namespace chorus::ib
