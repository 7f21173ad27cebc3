// One-sided access between ranks of one host (transport.hpp's PeerMemory): a memAlloc
// buffer is described by its memfd and mapped by the peer (the peer opens
// /proc/<pid>/fd/<fd>, or takes the descriptor with pidfd_getfd); registered ordinary
// memory is described by its address and read with process_vm_readv (CMA).
#pragma once

#include "transports/transport.hpp"

#include <sys/types.h>

#include <map>
#include <vector>

namespace chorus::shm {

class ShmPeerMemory : public PeerMemory {
 public:
  explicit ShmPeerMemory(std::vector<pid_t> pids) : pids_(std::move(pids)) {}
  ~ShmPeerMemory() override;
  std::vector<std::byte> describe(const LocalRegion& region, const void* data,
                                  size_t bytes) override;
  const std::byte* map(int peer, std::span<const std::byte> blob) override;
  size_t read(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
              size_t bytes) override;
  std::byte* mapWritable(int peer, std::span<const std::byte> blob) override;
  bool writes() const override { return true; }
  size_t write(int peer, std::span<const std::byte> blob, size_t offset, const void* src,
               size_t bytes) override;
  void checkMapped(int peer, std::span<const std::byte> blob) override;

 private:
  struct Mapping {
    void* base;
    size_t bytes;
    uint64_t lastUse;
  };
  static void requireCanary(int peer, const Mapping& mapping, uint64_t serial);
  static void cma(int peer, pid_t pid, uint64_t remote, void* local, size_t bytes, bool write);
  std::vector<pid_t> pids_;
  std::map<std::pair<int, uint64_t>, Mapping> mappings_;  // (peer, serial)
  uint64_t uses_ = 0;
};

}  // namespace chorus::shm
