#include "striping/stream_assembly.hpp"

#include "errors.hpp"

#include <algorithm>
#include <iterator>
#include <string>

namespace chorus::stripe {

StreamAssembly::StreamAssembly(int paths, uint64_t maxPiece)
    : maxPiece_(maxPiece), paths_(static_cast<size_t>(paths)) {
  if (paths < 1 || paths > 64)
    throwInvalid("striping: 1 to 64 paths, not " + std::to_string(paths));
}

// The sender cuts the stream in order and gives each piece to one path, so a piece starts
// after everything received in order, after its path's previous piece, and overlaps no
// piece that another path has (partly) delivered.
const char* StreamAssembly::reject(int path, uint64_t begin, uint64_t length,
                                   uint64_t limit) const {
  const Path& p = paths_[path];
  if (p.inPiece) return "a new piece before the path's previous one ended";
  if (length == 0) return "an empty piece";
  if (length > maxPiece_) return "a piece longer than the sender's pieces";
  if (begin > limit || length > limit - begin) return "a piece beyond the receiver's window";
  const uint64_t end = begin + length;
  if (begin < contiguous_) return "a piece over bytes that already arrived";
  if (begin < p.end) return "a piece before the path's previous one (out of order)";
  auto next = done_.lower_bound(begin);
  if (next != done_.end() && next->first < end) return "a piece over another piece";
  if (next != done_.begin() && std::prev(next)->second > begin) return "a piece over another piece";
  for (const Path& other : paths_)
    if (&other != &p && other.inPiece && other.start < end && begin < other.end)
      return "a piece over another path's piece";
  return nullptr;
}

void StreamAssembly::open(int path, uint64_t begin, uint64_t length) {
  Path& p = paths_[path];
  p.inPiece = true;
  p.start = p.pos = begin;
  p.end = begin + length;
}

void StreamAssembly::arrived(int path, uint64_t bytes) {
  Path& p = paths_[path];
  if (!p.inPiece || bytes > p.end - p.pos)
    throwInvalid("striping: " + std::to_string(bytes) + " bytes beyond the piece on path " +
                 std::to_string(path));
  p.pos += bytes;
  const bool extends = p.start <= contiguous_;
  if (p.pos == p.end) {
    p.inPiece = false;
    if (p.start > contiguous_) done_.emplace(p.start, p.end);
  }
  if (extends) {
    // Other paths' pieces may follow on from this one.
    contiguous_ = std::max(contiguous_, p.pos);
    extendContiguous();
  }
}

const char* StreamAssembly::place(int path, uint64_t begin, uint64_t length, uint64_t limit) {
  if (const char* why = reject(path, begin, length, limit)) return why;
  open(path, begin, length);
  arrived(path, length);
  return nullptr;
}

void StreamAssembly::extendContiguous() {
  for (bool moved = true; moved;) {
    moved = false;
    while (!done_.empty() && done_.begin()->first <= contiguous_) {
      contiguous_ = std::max(contiguous_, done_.begin()->second);
      done_.erase(done_.begin());
      moved = true;
    }
    for (const Path& p : paths_) {
      if (p.inPiece && p.start <= contiguous_ && p.pos > contiguous_) {
        contiguous_ = p.pos;
        moved = true;
      }
    }
  }
}

}  // namespace chorus::stripe
