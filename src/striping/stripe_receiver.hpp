// The receiving half of a striped byte stream: reads each path's chunks (ChunkHeader,
// payload) and puts every payload byte at its stream offset in a ring buffer, so chunks
// may arrive on any path in any order; peek() hands out the contiguous prefix. Large
// payloads are read straight into the ring; headers and small payloads come through a
// small per-path stage, so a small message costs one read. A path reads only what fits
// in the ring (consumed + ring size): a slow path's missing chunk stops the others
// (TCP flow control), never overflows memory. A header that fails its check, or places
// its chunk where no chunk can be (before what has arrived, over another chunk, out of
// order on its path, longer than the sender's chunks: StreamAssembly's checks), breaks
// the path: peek() then throws PeerError naming the peer. Not thread-safe.
#pragma once

#include "striping/chunk_header.hpp"
#include "striping/path_io.hpp"
#include "striping/stream_assembly.hpp"
#include "striping/stripe_stats.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace chorus::stripe {

class StripeReceiver {
 public:
  static constexpr size_t kStage = 4096;

  // ringBytes: a multiple of 8 (the wrap point never splits an aligned 8-byte unit).
  // maxChunk: the sender's chunk size (StripeSender's `chunk`); a longer chunk is malformed.
  StripeReceiver(int peer, int paths, size_t ringBytes, PathIo& io, ChannelStats* stats,
                 size_t maxChunk = UINT32_MAX);

  // Reads what `path` has and the ring has room for; never throws (failures are raised
  // by peek once nothing is left to hand out).
  void pull(int path);
  // Whether reading `path` could make progress now (for poll).
  bool wantsRead(int path) const;
  // Pulls every path, then returns the contiguous bytes not consumed yet. Throws
  // PeerError when nothing is left and the peer is gone.
  std::span<const std::byte> peek();
  void consume(size_t bytes);

 private:
  struct Path {
    std::unique_ptr<std::byte[]> stage{new std::byte[kStage]};
    size_t stageBegin = 0, stageEnd = 0;  // bytes read ahead, not placed yet
    int error = 0;                        // errno once broken; -1: end of stream
    size_t pieceBytes = 0;                // length of the chunk opened last
  };
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };

  uint64_t window() const { return consumed_ + ringSize_; }
  void drainStage(int path);  // parses headers, copies staged payload into the ring
  void place(int path, const std::byte* data, size_t bytes);  // at the path's position
  void advance(int path, size_t bytes);  // the path received `bytes` of payload in place
  int ringPieces(uint64_t from, uint64_t to, iovec* iov) const;  // at most 2
  void fail(Path& p, int error);

  int peer_;
  PathIo& io_;
  ChannelStats* stats_;
  uint64_t ringSize_;
  uint64_t maxChunk_;
  std::unique_ptr<std::byte, Free> ring_;
  std::vector<Path> paths_;
  StreamAssembly assembly_;         // which chunks arrived; the contiguous prefix
  const char* badChunk_ = nullptr;  // why a chunk was refused, for the error
  uint64_t consumed_ = 0;
};

}  // namespace chorus::stripe
