#include "transports/shm/shm_peer_memory.hpp"

#include "errors.hpp"
#include "memory/shared_memory.hpp"
#include "transports/exposed_regions.hpp"
#include "transports/shm/peer_fd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

namespace chorus::shm {
namespace {

constexpr size_t kMaxMappings = 64;  // per transport; the least recently used goes first

enum class Kind : uint8_t { Memfd = 1, Cma = 2 };

struct Blob {
  Kind kind;
  uint8_t pad[3];
  int32_t pid;
  int32_t fd;
  uint32_t pad2;
  uint64_t serial;       // memfd: the allocation's serial
  uint64_t regionBytes;  // memfd: size of the whole allocation
  uint64_t where;        // memfd: offset of the data in it; CMA: its address
  uint64_t bytes;
};
static_assert(sizeof(Blob) <= PeerMemory::kMaxBlob);

Blob parse(std::span<const std::byte> blob) {
  Blob b;
  if (blob.size() != sizeof b) throw Error(Result::InternalError, "shm: malformed memory blob");
  std::memcpy(&b, blob.data(), sizeof b);
  return b;
}

[[noreturn]] void peerGone(int peer, pid_t pid, const char* what) {
  throw PeerError(peer, "rank " + std::to_string(peer) + " (pid " + std::to_string(pid) +
                            ") is gone: " + what + " failed (" + std::strerror(errno) + ")");
}

}  // namespace

ShmPeerMemory::~ShmPeerMemory() {
  for (auto& [key, m] : mappings_) munmap(m.base, m.bytes);
}

std::vector<std::byte> ShmPeerMemory::describe(const LocalRegion& region, const void* data,
                                               size_t bytes) {
  Blob b{};
  b.pid = static_cast<int32_t>(getpid());
  b.bytes = bytes;
  if (region.fd >= 0) {
    b.kind = Kind::Memfd;
    b.fd = region.fd;
    b.serial = region.serial;
    b.regionBytes = region.bytes;
    b.where = static_cast<uint64_t>(static_cast<const std::byte*>(data) - region.base);
  } else {
    b.kind = Kind::Cma;
    b.fd = -1;
    b.where = reinterpret_cast<uintptr_t>(data);
  }
  std::vector<std::byte> out(sizeof b);
  std::memcpy(out.data(), &b, sizeof b);
  return out;
}

const std::byte* ShmPeerMemory::map(int peer, std::span<const std::byte> blob) {
  const Blob b = parse(blob);
  if (b.pid != pids_.at(peer))
    throw Error(Result::InternalError,
                "shm: rank " + std::to_string(peer) + " described memory of another process");
  if (b.kind != Kind::Memfd) return nullptr;
  auto key = std::make_pair(peer, b.serial);
  auto it = mappings_.find(key);
  if (it == mappings_.end()) {
    if (mappings_.size() >= kMaxMappings) {
      auto oldest = mappings_.begin();
      for (auto m = mappings_.begin(); m != mappings_.end(); ++m)
        if (m->second.lastUse < oldest->second.lastUse) oldest = m;
      munmap(oldest->second.base, oldest->second.bytes);
      mappings_.erase(oldest);
    }
    const int fd = openPeerFd(peer, b.pid, b.fd, O_RDWR, "memAlloc buffer");
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != b.regionBytes) {
      ::close(fd);
      throw Error(Result::InternalError, "shm: rank " + std::to_string(peer) +
                                             "'s memAlloc buffer changed before it was mapped");
    }
    void* p = mmap(nullptr, b.regionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED)
      throwSystemError("shm: mmap of rank " + std::to_string(peer) + "'s buffer");
    it = mappings_.emplace(key, Mapping{p, b.regionBytes, 0}).first;
  }
  it->second.lastUse = ++uses_;
  if (b.where + b.bytes > b.regionBytes)
    throw Error(Result::InternalError, "shm: memory blob beyond its region");
  // One load: the data read from this mapping is the peer's only while the mapping is
  // still its memfd (memory::canaryIntact).
  requireCanary(peer, it->second, b.serial);
  return static_cast<const std::byte*>(it->second.base) + b.where;
}

std::byte* ShmPeerMemory::mapWritable(int peer, std::span<const std::byte> blob) {
  // map()'s mappings are writable (PROT_WRITE on a descriptor opened O_RDWR).
  return const_cast<std::byte*>(map(peer, blob));
}

size_t ShmPeerMemory::write(int peer, std::span<const std::byte> blob, size_t offset,
                            const void* src, size_t bytes) {
  const Blob b = parse(blob);
  checkExposedRange("shm", peer, "writing", b.bytes, offset, bytes);
  if (std::byte* mapped = mapWritable(peer, blob)) {
    std::memcpy(mapped + offset, src, bytes);
    return bytes;
  }
  cma(peer, b.pid, b.where + offset, const_cast<void*>(src), bytes, /*write=*/true);
  return bytes;
}

// Checked when a mapping is handed out (map) and again once a step has read through it
// (checkMapped): a mapping replaced between the two loses the canary as well.
void ShmPeerMemory::requireCanary(int peer, const Mapping& mapping, uint64_t serial) {
  if (!memory::canaryIntact(static_cast<const std::byte*>(mapping.base), mapping.bytes, serial))
    throw Error(Result::SystemError,
                "shm: this process's mapping of rank " + std::to_string(peer) +
                    "'s memAlloc memory lost its canary (the mapping was replaced or the "
                    "memory cut short), so what it reads there is not rank " +
                    std::to_string(peer) + "'s data");
}

void ShmPeerMemory::checkMapped(int peer, std::span<const std::byte> blob) {
  const Blob b = parse(blob);
  if (b.kind != Kind::Memfd) return;
  // Gone from the cache only when more than kMaxMappings were mapped since: unmapped, so
  // nothing reads through it any more.
  auto it = mappings_.find(std::make_pair(peer, b.serial));
  if (it != mappings_.end()) requireCanary(peer, it->second, b.serial);
}

size_t ShmPeerMemory::read(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
                           size_t bytes) {
  const Blob b = parse(blob);
  checkExposedRange("shm", peer, "reading", b.bytes, offset, bytes);
  if (const std::byte* mapped = map(peer, blob)) {
    std::memcpy(dst, mapped + offset, bytes);
    return bytes;
  }
  cma(peer, b.pid, b.where + offset, dst, bytes, /*write=*/false);
  return bytes;
}

// Moves `bytes` between `local` and address `remote` of the peer's process with CMA
// (process_vm_readv, or process_vm_writev when `write`), throwing what went wrong.
void ShmPeerMemory::cma(int peer, pid_t pid, uint64_t remote, void* local, size_t bytes,
                        bool write) {
  const char* call = write ? "process_vm_writev" : "process_vm_readv";
  size_t done = 0;
  while (done < bytes) {
    iovec mine{static_cast<std::byte*>(local) + done, bytes - done};
    iovec theirs{reinterpret_cast<void*>(remote + done), bytes - done};
    ssize_t n = write ? process_vm_writev(pid, &mine, 1, &theirs, 1, 0)
                      : process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (errno == ESRCH) peerGone(peer, pid, call);
    if (errno == EPERM)
      throw Error(Result::SystemError,
                  std::string("shm: ") + (write ? "writing" : "reading") + " rank " +
                      std::to_string(peer) + "'s registered buffer with " + call +
                      " is not permitted (ranks must run as one user; kernel.yama.ptrace_scope "
                      "must be 0); use memAlloc buffers or leave the buffers unregistered");
    throwSystemError(std::string("shm: ") + call + (write ? " to" : " from") + " rank " +
                     std::to_string(peer));
  }
}

}  // namespace chorus::shm
