// Where the pieces of a striped byte stream have arrived. The sender cuts the stream in
// order and gives each piece to one path; a path delivers its pieces in order, the paths
// in any order relative to each other. The assembly checks each piece announced on a path
// (bounds, overlap, order on its path), records its bytes as they arrive and knows the
// contiguous prefix: every byte before it has arrived. Pure bookkeeping, no bytes: the
// caller places them (StripeReceiver copies them into its ring; a verbs RDMA WRITE has
// put them there already, IbChannel). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace chorus::stripe {

class StreamAssembly {
 public:
  // maxPiece: the sender's longest piece (its chunk or block size); longer is malformed.
  explicit StreamAssembly(int paths, uint64_t maxPiece = UINT32_MAX);

  // Why [begin, begin + length) cannot be the next piece on `path`, or nullptr when it
  // can: not empty, at most maxPiece, ending at or before `limit` (the receiver's
  // window), starting at or after the contiguous prefix and the path's previous piece,
  // overlapping no piece that arrived or is arriving. The path must have no open piece.
  const char* reject(int path, uint64_t begin, uint64_t length, uint64_t limit = UINT64_MAX) const;
  // Opens a piece that reject() accepted; its bytes then come in order by arrived().
  void open(int path, uint64_t begin, uint64_t length);
  // `bytes` more of the path's open piece arrived (at most what is left of it).
  void arrived(int path, uint64_t bytes);
  // A whole piece at once: reject(), then open() and arrived(length) when it is accepted.
  const char* place(int path, uint64_t begin, uint64_t length, uint64_t limit = UINT64_MAX);

  uint64_t contiguous() const { return contiguous_; }
  bool inPiece(int path) const { return paths_[path].inPiece; }
  uint64_t position(int path) const { return paths_[path].pos; }  // next byte of the open piece
  uint64_t pieceEnd(int path) const { return paths_[path].end; }
  int paths() const { return static_cast<int>(paths_.size()); }

 private:
  struct Path {
    bool inPiece = false;
    uint64_t start = 0, pos = 0, end = 0;  // the open (or last) piece, stream offsets
  };
  void extendContiguous();

  uint64_t maxPiece_;
  std::vector<Path> paths_;
  std::map<uint64_t, uint64_t> done_;  // complete pieces beyond the contiguous prefix
  uint64_t contiguous_ = 0;
};

}  // namespace chorus::stripe
