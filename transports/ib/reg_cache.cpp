#include "transports/ib/reg_cache.hpp"

#include "errors.hpp"

#include <cstdlib>
#include <cstring>

namespace chorus::ib {
namespace {
constexpr uintptr_t kPage = 4096;
}

RegCache::Handle& RegCache::Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    reset();
    cache_ = o.cache_;
    entry_ = o.entry_;
    o.entry_ = nullptr;
  }
  return *this;
}

void RegCache::Handle::reset() {
  if (entry_) cache_->release(entry_);
  entry_ = nullptr;
}

uint32_t RegCache::Handle::lkey() const { return entry_->mr->lkey; }
uint32_t RegCache::Handle::rkey() const { return entry_->mr->rkey; }

RegCache::RegCache(ibv_pd* pd, size_t capacity, int access)
    : pd_(pd), capacity_(capacity), access_(access) {}

RegCache::~RegCache() {
  for (auto& [start, e] : byStart_) {
    ibv_dereg_mr(e->mr);
    delete e;
  }
}

RegCache::Handle RegCache::acquire(const void* addr, size_t len) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard lock(mutex_);
  // Entries may overlap; any one starting at or before `a` that reaches a + len will do.
  for (auto it = byStart_.upper_bound(a); it != byStart_.begin();) {
    Entry* e = (--it)->second;
    if (e->end >= a + len) {
      if (e->pins++ == 0) idle_.erase(e->idle);
      ++stats_.hits;
      return Handle(this, e);
    }
  }
  const uintptr_t start = a & ~(kPage - 1);
  const uintptr_t end = (a + len + kPage - 1) & ~(kPage - 1);
  ibv_mr* mr = ibv_reg_mr(pd_, reinterpret_cast<void*>(start), end - start, access_);
  if (mr == nullptr)
    throwSystemError("ib: ibv_reg_mr of " + std::to_string(end - start) +
                     " bytes (locked-memory limit? see ulimit -l)");
  auto* e = new Entry{start, end, mr, 1, {}};
  byStart_.emplace(start, e);
  ++stats_.misses;
  stats_.registeredBytes += end - start;
  ++stats_.entries;
  evictLocked();
  return Handle(this, e);
}

void RegCache::release(Entry* e) {
  std::lock_guard lock(mutex_);
  if (--e->pins > 0) return;
  idle_.push_front(e);
  e->idle = idle_.begin();
  evictLocked();
}

void RegCache::evictLocked() {
  while (stats_.registeredBytes > capacity_ && !idle_.empty()) {
    Entry* e = idle_.back();
    idle_.pop_back();
    dropLocked(e);
    ++stats_.evictions;
  }
}

void RegCache::dropLocked(Entry* e) {
  ibv_dereg_mr(e->mr);
  stats_.registeredBytes -= e->end - e->start;
  --stats_.entries;
  for (auto it = byStart_.find(e->start); it != byStart_.end() && it->first == e->start; ++it) {
    if (it->second == e) {
      byStart_.erase(it);
      break;
    }
  }
  delete e;
}

void RegCache::forget(const void* addr, size_t len) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard lock(mutex_);
  for (auto it = idle_.begin(); it != idle_.end();) {
    Entry* e = *it;
    if (e->start < a + len && a < e->end) {
      it = idle_.erase(it);
      dropLocked(e);
    } else {
      ++it;
    }
  }
}

RegStats RegCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

BufferPool::Buffer::Buffer(Buffer&& o) noexcept
    : pool_(o.pool_), data_(o.data_), size_(o.size_), reg_(std::move(o.reg_)) {
  o.data_ = nullptr;
}

BufferPool::Buffer& BufferPool::Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    this->~Buffer();
    new (this) Buffer(std::move(o));
  }
  return *this;
}

BufferPool::Buffer::~Buffer() {
  reg_.reset();  // unpin first: the pool may free the memory
  if (data_) pool_->put(data_, size_);
  data_ = nullptr;
}

BufferPool::~BufferPool() {
  for (auto [data, size] : idle_) freeLocked(data, size);
}

BufferPool::Buffer BufferPool::get(size_t bytes) {
  const size_t size = (bytes + kPage - 1) & ~(kPage - 1);
  Buffer b;
  {
    std::lock_guard lock(mutex_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if (it->second == size) {
        b.data_ = it->first;
        idle_.erase(it);
        idleBytes_ -= size;
        break;
      }
    }
  }
  if (b.data_ == nullptr) {
    b.data_ = static_cast<std::byte*>(std::aligned_alloc(kPage, size));
    if (b.data_ == nullptr) throw Error(Result::SystemError, "ib: out of memory for a buffer");
  }
  b.pool_ = this;
  b.size_ = size;
  std::memset(b.data_, 0, size);
  b.reg_ = cache_.acquire(b.data_, size);
  return b;
}

void BufferPool::put(std::byte* data, size_t size) {
  std::lock_guard lock(mutex_);
  idle_.emplace_front(data, size);
  idleBytes_ += size;
  while (idleBytes_ > idleLimit_) {
    auto [d, s] = idle_.back();
    idle_.pop_back();
    idleBytes_ -= s;
    freeLocked(d, s);
  }
}

void BufferPool::freeLocked(std::byte* data, size_t size) {
  cache_.forget(data, size);
  std::free(data);
}

}  // namespace chorus::ib
