// A single-producer single-consumer byte FIFO living in shared memory. Head and tail are
// free-running byte counters on their own cache lines; capacity is a power of two.
//
// The bytes in use are a window at the start of the capacity, a power of two, 64 KiB at
// first: small messages keep cycling through the same few cache lines and pages. When a
// write found the FIFO full, the producer widens the window, once the FIFO is empty again,
// to room for four of the largest write it was asked (up to the capacity). In one step, so
// that a new message size pays its first pass through new pages in its first calls rather
// than at each of several doublings; and no wider, since each new page costs each process
// on its first touch (here 5-15 us for the writer, 1-8 for the reader: a paravirtualized VM).
// The producer changes the window only while the FIFO is empty, and publishes it with the
// head (the consumer reads it after the head): no byte is ever read under another window
// than it was written under.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace chorus::shm {

struct alignas(64) FifoHeader {
  alignas(64) std::atomic<uint64_t> head{0};  // bytes ever written (producer)
  std::atomic<uint64_t> window{0};            // bytes in use (producer; 0: nothing written)
  alignas(64) std::atomic<uint64_t> tail{0};  // bytes ever read (consumer)
};

class Fifo {
 public:
  // The first window (or the capacity, when smaller).
  static constexpr size_t kFirstWindow = size_t{64} << 10;
  // How many of the largest write a widened window holds. Four: the engine writes at most
  // a slice (256 KiB) at a time, so streams get the whole 1 MiB as before (np 4, 4-64 MiB:
  // 7% faster than with the window doubled up to it; with room for two, 512 KiB, 9% slower
  // at 4-16 MiB); 128 KiB messages get 512 KiB.
  static constexpr size_t kWritesInWindow = 4;

  Fifo() = default;
  Fifo(FifoHeader* header, std::byte* data, size_t capacity)
      : header_(header), data_(data), capacity_(capacity) {}

  // Producer side.
  size_t write(const void* src, size_t bytes) {
    uint64_t head = header_->head.load(std::memory_order_relaxed);
    uint64_t tail = header_->tail.load(std::memory_order_acquire);
    if (window_ == 0)  // this process's window, where a remade channel claimed the FIFO again
      window_ = header_->window.load(std::memory_order_relaxed);
    largestAsk_ = std::max(largestAsk_, std::min(bytes, capacity_));
    if (head == tail && bytes > 0 && (window_ == 0 || wasFull_)) {
      const size_t want =
          window_ == 0 ? kFirstWindow : std::bit_ceil(kWritesInWindow * largestAsk_);
      window_ = std::max(window_, std::min(want, capacity_));
      wasFull_ = false;
      header_->window.store(window_, std::memory_order_relaxed);  // published by the head
    }
    if (window_ == 0) return 0;  // nothing asked, nothing written yet
    size_t n = std::min<size_t>(bytes, window_ - (head - tail));
    if (n < bytes) wasFull_ = true;
    if (n == 0) return 0;
    size_t at = head & (window_ - 1);
    if (mapped_ < window_) mapThrough(at + n, window_, MADV_POPULATE_WRITE);
    size_t first = std::min(n, window_ - at);
    std::memcpy(data_ + at, src, first);
    if (n > first) std::memcpy(data_, static_cast<const std::byte*>(src) + first, n - first);
    header_->head.store(head + n, std::memory_order_release);
    return n;
  }

  // Consumer side: contiguous readable bytes (up to the wrap point).
  std::span<const std::byte> readable() const {
    const Unread u = unread();
    if (u.bytes == 0) return {};
    const size_t n = std::min(u.bytes, u.window - u.at);
    if (mapped_ < u.window) mapThrough(u.at + n, u.window, MADV_POPULATE_READ);
    return {data_ + u.at, n};
  }
  // Consumer side: copies up to `max` readable bytes into `out`, across the window's end
  // (where readable() stops), releasing none; returns how many.
  size_t copyReadable(std::byte* out, size_t max) const {
    const Unread u = unread();
    const size_t n = std::min(u.bytes, max);
    if (n == 0) return 0;
    const size_t first = std::min(n, u.window - u.at);
    std::memcpy(out, data_ + u.at, first);
    std::memcpy(out + first, data_, n - first);
    return n;
  }
  void release(size_t bytes) {
    header_->tail.store(header_->tail.load(std::memory_order_relaxed) + bytes,
                        std::memory_order_release);
  }

  size_t capacity() const { return capacity_; }
  // Producer side: the window its next bytes go to (0 before the first write).
  size_t window() const { return window_; }

 private:
  // Consumer side: the bytes written and not yet released, where the first of them is in
  // the window, and the window they were written under (none: all zero).
  struct Unread {
    size_t at = 0, bytes = 0, window = 0;
  };
  Unread unread() const {
    const uint64_t tail = header_->tail.load(std::memory_order_relaxed);
    const uint64_t head = header_->head.load(std::memory_order_acquire);
    if (head == tail) return {};
    // At least as new as the head just read, and no newer: the producer changes it only
    // when the FIFO is empty, which it is not until these bytes are released.
    const size_t window = header_->window.load(std::memory_order_relaxed);
    return {static_cast<size_t>(tail & (window - 1)), static_cast<size_t>(head - tail), window};
  }

  // Bytes are first written, and read, a page at a time: each page's first touch is a
  // fault in each process (the writer's also allocates it). So each side maps, with one
  // system call, the pages from the last it mapped through the one holding the last byte
  // a write or a read touches, and no further: memory grows with the bytes that pass, as
  // by faults (64 ranks' all-to-all touches one page of most FIFOs; mapping 64 KiB ahead
  // instead took 307 MB of shared memory there against 98). MADV_POPULATE_*: Linux 5.14;
  // where refused, the pages come by faults as before.
  static constexpr size_t kPage = 4096;
  void mapThrough(size_t end, size_t window, int advice) const {
    const size_t to = std::min(window, (end + kPage - 1) / kPage * kPage);
    if (to <= mapped_) return;
    mapped_ = ::madvise(data_ + mapped_, to - mapped_, advice) == 0 ? to : capacity_;
  }

  FifoHeader* header_ = nullptr;
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  size_t window_ = 0;          // producer: the window in use (0 before the first write)
  size_t largestAsk_ = 0;      // producer: the most bytes one write was asked (<= capacity)
  bool wasFull_ = false;       // producer: a write found no room since the window last grew
  mutable size_t mapped_ = 0;  // bytes of data mapped ahead in this process (mapThrough)
};

}  // namespace chorus::shm
