// A rank's inbound FIFOs: one memfd segment per rank (no name in /dev/shm, so nothing is
// left behind however a rank ends), mapped by a peer only when it first sends to this
// rank (peers open it through /proc/<pid>/fd). The FIFO from peer P is carved out of the
// segment when P first sends (P claims it: only P writes its descriptor), sized from this
// rank's budget: the first peers get the full size, later ones share what is left, never
// less than a floor. Pages are only touched as bytes pass, so shared memory grows with
// the peers that actually send here, not with the number of ranks.
#pragma once

#include "transports/shm/fifo.hpp"

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace chorus::shm {

// How inbound FIFOs are sized: `full` bytes each while the rank's `budget` lasts (half of
// what is left at most), never less than `floor`. All powers of two, at least 4 KiB.
struct FifoSizing {
  size_t full = size_t{1} << 20;
  size_t floor = size_t{64} << 10;
  size_t budget = size_t{8} << 20;
  // CHORUS_SHM_FIFO_BYTES when set: exactly that for every FIFO. Else `full` is 1 MiB up
  // to 32 ranks and 32 MiB / nranks beyond (as when every pair had its FIFO, so that no
  // FIFO is larger than it was then), at least the floor; the budget is 8 MiB.
  static FifoSizing fromSettings(int nranks);
  size_t capacityAfter(uint64_t used) const;
  // The most the FIFOs of `nranks - 1` peers can take.
  size_t regionBytes(int nranks) const;
};

class FifoSegment {
 public:
  FifoSegment() = default;
  FifoSegment(FifoSegment&& o) noexcept { *this = std::move(o); }
  FifoSegment& operator=(FifoSegment&& o) noexcept;
  FifoSegment(const FifoSegment&) = delete;
  FifoSegment& operator=(const FifoSegment&) = delete;
  ~FifoSegment();

  // This rank's own segment: a memfd named "chorus-<token>-<rank>" (what /proc/*/maps
  // shows); the descriptor stays open for peers to open.
  static FifoSegment create(const char* name, int nranks, const FifoSizing& sizing);
  // Rank `peer`'s segment (process `pid`, descriptor `fd` there, `bytes` long). Throws
  // PeerError naming the rank when its process is gone.
  static FifoSegment map(int peer, pid_t pid, int fd, size_t bytes, int nranks);

  // Receiver: the FIFO from `from`, once that peer has claimed it.
  std::optional<Fifo> inbound(int from) const;
  // Sender `from`: claims its FIFO here (sized by the budget) and returns it.
  Fifo claim(int from, const FifoSizing& sizing);

  int fd() const { return fd_; }
  size_t bytes() const { return bytes_; }
  // Shared memory this segment takes now (its pages touched so far), in bytes.
  size_t residentBytes() const;

 private:
  struct Header;
  Header* header() const { return static_cast<Header*>(base_); }
  Fifo fifoAt(int from, uint64_t descriptor) const;
  std::atomic<uint64_t>& descriptor(int from) const;

  void* base_ = nullptr;
  size_t bytes_ = 0;
  int nranks_ = 0;
  int fd_ = -1;  // own segment only
};

}  // namespace chorus::shm
