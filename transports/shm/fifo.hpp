// A single-producer single-consumer byte FIFO living in shared memory. Head and tail are
// free-running byte counters on their own cache lines; capacity is a power of two.
#pragma once

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
    return {data_ + at, n};
  }
  void release(size_t bytes) {
    header_->tail.store(header_->tail.load(std::memory_order_relaxed) + bytes,
                        std::memory_order_release);
  }

 private:
  FifoHeader* header_ = nullptr;
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace chorus::shm
