#include "transports/shm/fifo_segment.hpp"

#include "errors.hpp"
#include "settings/settings.hpp"
#include "transports/shm/peer_fd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <new>

namespace chorus::shm {
namespace {

constexpr uint32_t kMagic = 0x43484649;  // "CHFI"
constexpr size_t kPage = 4096;

size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

// At offset 0; then FifoHeader[nranks], the descriptors, and the data from dataStart().
// A descriptor is 0 until its sender claims the FIFO, then offset | log2(capacity) (the
// offset is a multiple of 4 KiB).
struct FifoSegment::Header {
  uint32_t magic;
  uint32_t nranks;
  uint64_t regionBytes;
  alignas(64) std::atomic<uint64_t> used{0};  // bytes of the region claimed so far
};

namespace {

constexpr size_t kHeaderBytes = 128;
size_t fifoHeadersAt() { return kHeaderBytes; }
size_t descriptorsAt(int nranks) { return fifoHeadersAt() + sizeof(FifoHeader) * size_t(nranks); }
size_t dataStart(int nranks) {
  return roundUp(descriptorsAt(nranks) + sizeof(uint64_t) * size_t(nranks), kPage);
}

}  // namespace

FifoSizing FifoSizing::fromSettings(int nranks) {
  FifoSizing s;
  if (!settings::isSet("CHORUS_SHM_FIFO_BYTES")) {
    const size_t share =
        std::bit_floor((size_t{32} << 20) / static_cast<size_t>(std::max(nranks, 1)));
    s.full = std::max(s.floor, std::min(s.full, share));
    return s;
  }
  const size_t set = std::bit_ceil(static_cast<size_t>(
      std::max<int64_t>(int64_t(kPage), settings::integer("CHORUS_SHM_FIFO_BYTES"))));
  s.full = s.floor = set;
  s.budget = 0;  // every FIFO the same size
  return s;
}

size_t FifoSizing::capacityAfter(uint64_t used) const {
  if (used >= budget) return floor;
  return std::clamp(std::bit_floor(static_cast<size_t>(budget - used) / 2), floor, full);
}

size_t FifoSizing::regionBytes(int nranks) const {
  const size_t peers = static_cast<size_t>(std::max(nranks - 1, 0));
  return std::min(peers * full, budget + peers * floor);
}

FifoSegment& FifoSegment::operator=(FifoSegment&& o) noexcept {
  std::swap(base_, o.base_);
  std::swap(bytes_, o.bytes_);
  std::swap(nranks_, o.nranks_);
  std::swap(fd_, o.fd_);
  return *this;
}

FifoSegment::~FifoSegment() {
  if (base_) munmap(base_, bytes_);
  if (fd_ >= 0) ::close(fd_);
}

FifoSegment FifoSegment::create(const char* name, int nranks, const FifoSizing& sizing) {
  FifoSegment s;
  s.nranks_ = nranks;
  s.fd_ = memfd_create(name, MFD_CLOEXEC);
  if (s.fd_ < 0) throwSystemError(std::string("shm: memfd_create(") + name + ")");
  const size_t region = sizing.regionBytes(nranks);
  s.bytes_ = dataStart(nranks) + region;
  if (ftruncate(s.fd_, static_cast<off_t>(s.bytes_)) != 0)
    throwSystemError(std::string("shm: ftruncate of ") + name);
  s.base_ = mmap(nullptr, s.bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_, 0);
  if (s.base_ == MAP_FAILED) {
    s.base_ = nullptr;
    throwSystemError(std::string("shm: mmap of ") + name);
  }
  static_assert(sizeof(Header) <= kHeaderBytes && sizeof(FifoHeader) % 64 == 0);
  new (s.base_) Header{kMagic, static_cast<uint32_t>(nranks), region};
  auto* fifos = reinterpret_cast<FifoHeader*>(static_cast<std::byte*>(s.base_) + fifoHeadersAt());
  for (int i = 0; i < nranks; ++i) {
    new (fifos + i) FifoHeader();
    new (&s.descriptor(i)) std::atomic<uint64_t>(0);
  }
  return s;
}

FifoSegment FifoSegment::map(int peer, pid_t pid, int fd, size_t bytes, int nranks) {
  FifoSegment s;
  s.nranks_ = nranks;
  const int mine = openPeerFd(peer, pid, fd, O_RDWR, "FIFO segment");
  struct stat st {};
  if (fstat(mine, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    ::close(mine);
    throw Error(Result::InternalError, "shm: rank " + std::to_string(peer) +
                                           "'s FIFO segment is not the size it published");
  }
  s.base_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mine, 0);
  ::close(mine);
  if (s.base_ == MAP_FAILED) {
    s.base_ = nullptr;
    throwSystemError("shm: mmap of rank " + std::to_string(peer) + "'s FIFO segment");
  }
  s.bytes_ = bytes;
  if (s.header()->magic != kMagic || s.header()->nranks != static_cast<uint32_t>(nranks))
    throw Error(Result::InternalError,
                "shm: rank " + std::to_string(peer) + "'s FIFO segment is not ours");
  return s;
}

std::atomic<uint64_t>& FifoSegment::descriptor(int from) const {
  auto* at =
      static_cast<std::byte*>(base_) + descriptorsAt(nranks_) + sizeof(uint64_t) * size_t(from);
  return *reinterpret_cast<std::atomic<uint64_t>*>(at);
}

Fifo FifoSegment::fifoAt(int from, uint64_t d) const {
  auto* fifos = reinterpret_cast<FifoHeader*>(static_cast<std::byte*>(base_) + fifoHeadersAt());
  const uint64_t offset = d & ~uint64_t{kPage - 1};
  const size_t capacity = size_t{1} << (d & 63);
  if (offset < dataStart(nranks_) || offset + capacity > bytes_)
    throw Error(Result::InternalError, "shm: corrupt FIFO descriptor");
  return Fifo(fifos + from, static_cast<std::byte*>(base_) + offset, capacity);
}

std::optional<Fifo> FifoSegment::inbound(int from) const {
  const uint64_t d = descriptor(from).load(std::memory_order_acquire);
  if (d == 0) return std::nullopt;
  return fifoAt(from, d);
}

Fifo FifoSegment::claim(int from, const FifoSizing& sizing) {
  if (const uint64_t d = descriptor(from).load(std::memory_order_acquire); d != 0)
    return fifoAt(from, d);  // claimed before (by this process: the channel was remade)
  auto& used = header()->used;
  uint64_t at = used.load(std::memory_order_relaxed);
  size_t capacity = 0;
  do {
    capacity = sizing.capacityAfter(at);
  } while (!used.compare_exchange_weak(at, at + capacity, std::memory_order_relaxed));
  if (at + capacity > header()->regionBytes)
    throw Error(Result::InternalError, "shm: FIFO region exhausted");
  const uint64_t d = (dataStart(nranks_) + at) | uint64_t(std::countr_zero(capacity));
  descriptor(from).store(d, std::memory_order_release);
  return fifoAt(from, d);
}

size_t FifoSegment::residentBytes() const {
  struct stat st {};
  if (fd_ < 0 || fstat(fd_, &st) != 0) return 0;
  return static_cast<size_t>(st.st_blocks) * 512;
}

}  // namespace chorus::shm
