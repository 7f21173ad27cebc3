// A per-rank doorbell in shared memory: peers ring it after writing to or reading from a
// FIFO that this rank uses; the rank sleeps on it with a futex. Ringing costs a syscall
// only while the owner is asleep.
#pragma once

#include "clock.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>

namespace chorus::shm {

struct alignas(64) Doorbell {
  std::atomic<uint32_t> rings{0};
  std::atomic<uint32_t> sleeping{0};

  void ring() {
    rings.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping.load(std::memory_order_seq_cst))
      syscall(SYS_futex, &rings, FUTEX_WAKE, 1, nullptr, nullptr, 0);
  }
  // Owner: announce the sleep, then re-check for work, then sleep(token).
  uint32_t prepare() {
    sleeping.store(1, std::memory_order_seq_cst);
    return rings.load(std::memory_order_seq_cst);
  }
  void sleep(uint32_t token, Deadline deadline) {
    auto left = deadline - Clock::now();
    if (left > std::chrono::nanoseconds(0)) {
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
      syscall(SYS_futex, &rings, FUTEX_WAIT, token, &ts, nullptr, 0);
    }
    sleeping.store(0, std::memory_order_relaxed);
  }
};

}  // namespace chorus::shm
