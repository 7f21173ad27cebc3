// The shm transport's directory: one small shared segment per communicator, mapped by
// every rank at set-up, holding what a peer needs before it maps anything else: each
// rank's pid, where its FIFO segment is (a descriptor in its process, and its size), and
// its doorbell. So a rank maps only the FIFO segments of the peers it sends to, and still
// rings any peer's doorbell and checks any peer's liveness.
#pragma once

#include "transports/shm/doorbell.hpp"

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace chorus::shm {

struct alignas(64) DirectoryEntry {
  int32_t pid;
  int32_t fd;  // of the rank's FIFO segment, in its process
  uint64_t bytes;
  Doorbell doorbell;
};

class Directory {
 public:
  Directory() = default;
  Directory(Directory&& o) noexcept { *this = std::move(o); }
  Directory& operator=(Directory&& o) noexcept;
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;
  ~Directory();

  // Rank 0 creates it (before the others open it); the name must not start with "chorus-"
  // (the fault trials pick FIFO segments by that prefix). Unlinking is the caller's.
  static Directory create(const std::string& name, int nranks);
  static Directory open(const std::string& name, int nranks);

  DirectoryEntry& entry(int rank) const { return static_cast<DirectoryEntry*>(base_)[rank]; }
  size_t bytes() const { return bytes_; }

 private:
  static Directory map(int fd, size_t bytes, const std::string& name);
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace chorus::shm
