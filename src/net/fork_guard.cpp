#include "net/fork_guard.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace chorus::net {
namespace {

// One bit per descriptor, in chunks allocated on first use and never freed, so that the
// child's handler reads them without a lock (a thread of the parent may have held any lock
// at the moment of the fork). Covers descriptors below kChunks * kChunkFds (4 Mi).
constexpr int kChunkFds = 1 << 16;
constexpr int kWords = kChunkFds / 64;
constexpr int kChunks = 64;
using Chunk = std::array<std::atomic<uint64_t>, kWords>;

std::array<std::atomic<Chunk*>, kChunks> chunks{};
std::atomic<int> placeholder{-1};  // /dev/null, opened once in the parent
size_t released = 0;               // written only in the child's handler

void releaseAllInChild() {
  const int into = placeholder.load(std::memory_order_acquire);
  size_t count = 0;
  for (auto& slot : chunks) {
    Chunk* chunk = slot.load(std::memory_order_acquire);
    if (!chunk) continue;
    const int base = int(&slot - chunks.data()) * kChunkFds;
    for (int w = 0; w < kWords; ++w) {
      uint64_t bits = (*chunk)[size_t(w)].exchange(0, std::memory_order_relaxed);
      while (bits) {
        const int fd = base + w * 64 + __builtin_ctzll(bits);
        bits &= bits - 1;
        // dup3 closes the socket copy and leaves /dev/null in its place (async-signal-safe).
        if (into < 0 || ::dup3(into, fd, O_CLOEXEC) < 0) ::close(fd);
        ++count;
      }
    }
  }
  released = count;
}

std::atomic<uint64_t>* wordOf(int fd, bool create) {
  if (fd < 0 || fd >= kChunks * kChunkFds) return nullptr;
  auto& slot = chunks[size_t(fd / kChunkFds)];
  Chunk* chunk = slot.load(std::memory_order_acquire);
  if (!chunk && create) {
    auto* fresh = new Chunk{};
    if (slot.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel))
      chunk = fresh;
    else
      delete fresh;  // another thread's chunk won; `chunk` now holds it
  }
  if (!chunk) return nullptr;
  return &(*chunk)[size_t(fd % kChunkFds / 64)];
}

}  // namespace

void releaseInForkedChildren(int fd) {
  static std::once_flag once;
  std::call_once(once, [] {
    placeholder.store(::open("/dev/null", O_RDONLY | O_CLOEXEC), std::memory_order_release);
    ::pthread_atfork(nullptr, nullptr, releaseAllInChild);
  });
  if (auto* word = wordOf(fd, true))
    word->fetch_or(uint64_t{1} << (fd % 64), std::memory_order_release);
}

void keepInForkedChildren(int fd) {
  if (auto* word = wordOf(fd, false))
    word->fetch_and(~(uint64_t{1} << (fd % 64)), std::memory_order_release);
}

size_t releasedAtFork() { return released; }

}  // namespace chorus::net
