// A single-producer single-consumer byte FIFO living in shared memory. Head and tail are
// free-running byte counters on their own cache lines; capacity is a power of two.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace chorus::shm {

struct alignas(64) FifoHeader {
  alignas(64) std::atomic<uint64_t> head{0};  // bytes ever written (producer)
  alignas(64) std::atomic<uint64_t> tail{0};  // bytes ever read (consumer)
};

class Fifo {
 public:
  Fifo() = default;
  Fifo(FifoHeader* header, std::byte* data, size_t capacity)
      : header_(header), data_(data), capacity_(capacity) {}

  // Producer side.
  size_t write(const void* src, size_t bytes) {
    uint64_t head = header_->head.load(std::memory_order_relaxed);
    uint64_t tail = header_->tail.load(std::memory_order_acquire);
    size_t n = std::min<size_t>(bytes, capacity_ - (head - tail));
    if (n == 0) return 0;
    size_t at = head & (capacity_ - 1);
    if (mapped_ < capacity_) mapThrough(at + n, MADV_POPULATE_WRITE);
    size_t first = std::min(n, capacity_ - at);
    std::memcpy(data_ + at, src, first);
    if (n > first) std::memcpy(data_, static_cast<const std::byte*>(src) + first, n - first);
    header_->head.store(head + n, std::memory_order_release);
    return n;
  }

  // Consumer side: contiguous readable bytes (up to the wrap point).
  std::span<const std::byte> readable() const {
    uint64_t tail = header_->tail.load(std::memory_order_relaxed);
    uint64_t head = header_->head.load(std::memory_order_acquire);
    size_t at = tail & (capacity_ - 1);
    size_t n = std::min<size_t>(head - tail, capacity_ - at);
    if (mapped_ < capacity_ && n > 0) mapThrough(at + n, MADV_POPULATE_READ);
    return {data_ + at, n};
  }
  void release(size_t bytes) {
    header_->tail.store(header_->tail.load(std::memory_order_relaxed) + bytes,
                        std::memory_order_release);
  }

 private:
  // Bytes are first written, and read, a page at a time: each page's first touch is a
  // fault in each process (the writer's also allocates it), and on a VM with ranks
  // sharing cores the faults of the first pass through a 1 MiB FIFO held 2 KiB all-reduces
  // at np 8 to 4x their later time for ~500 calls. So each side maps the pages ahead of
  // it, kMapAhead at a time, one system call each; memory still grows only as bytes pass.
  // MADV_POPULATE_*: Linux 5.14; where refused, the pages come by faults as before.
  static constexpr size_t kMapAhead = size_t{64} << 10;
  void mapThrough(size_t end, int advice) const {
    const size_t to = end >= capacity_
                          ? capacity_
                          : std::min(capacity_, (end + kMapAhead - 1) / kMapAhead * kMapAhead);
    if (to <= mapped_) return;
    mapped_ = ::madvise(data_ + mapped_, to - mapped_, advice) == 0 ? to : capacity_;
  }

  FifoHeader* header_ = nullptr;
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  mutable size_t mapped_ = 0;  // bytes of data mapped ahead in this process (mapThrough)
};

}  // namespace chorus::shm
