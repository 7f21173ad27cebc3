#include "striping/stripe_receiver.hpp"

#include "errors.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace chorus::stripe {

StripeReceiver::StripeReceiver(int peer, int paths, size_t ringBytes, PathIo& io,
                               ChannelStats* stats, size_t maxChunk)
    : peer_(peer),
      io_(io),
      stats_(stats),
      ringSize_(ringBytes),
      maxChunk_(std::clamp<size_t>(maxChunk, 8, UINT32_MAX)),  // as StripeSender clamps
      paths_(static_cast<size_t>(paths)) {
  if (ringBytes < 8 || ringBytes % 8 != 0)
    throwInvalid("striping: ring of " + std::to_string(ringBytes) + " bytes");
  size_t bytes = (ringSize_ + 4095) & ~size_t{4095};
  ring_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, bytes)));
  if (!ring_) throw Error(Result::SystemError, "striping: out of memory for the receive ring");
}

bool StripeReceiver::wantsRead(int path) const {
  const Path& p = paths_[path];
  return p.error == 0 && !(p.inChunk && p.chunkPos >= window());
}

void StripeReceiver::pull(int index) {
  Path& p = paths_[index];
  while (p.error == 0) {
    drainStage(index);
    if (p.stageBegin < p.stageEnd && p.inChunk) return;  // staged payload waits for room
    // Payload straight into the ring; the stage catches what follows the chunk.
    iovec iov[3];
    int count = 0;
    size_t direct = 0;
    bool wholeChunk = true;
    if (p.inChunk) {
      uint64_t to = std::min(p.chunkEnd, window());
      count = ringPieces(p.chunkPos, to, iov);
      if (count == 0) return;  // no room in the ring
      direct = to - p.chunkPos;
      wholeChunk = to == p.chunkEnd;
    }
    if (wholeChunk) iov[count++] = iovec{p.stage.get() + p.stageEnd, kStage - p.stageEnd};
    ssize_t n = io_.read(index, iov, count);
    if (n > 0) {
      size_t got = static_cast<size_t>(n);
      size_t inRing = std::min(got, direct);
      if (inRing > 0) advance(index, inRing);
      p.stageEnd += got - inRing;
      size_t asked = direct + (wholeChunk ? iov[count - 1].iov_len : 0);
      if (got < asked) {  // drained for now: place what came, spare the EAGAIN call
        drainStage(index);
        return;
      }
    } else if (n == 0) {
      fail(p, -1);
    } else if (n != PathIo::kWouldBlock && n != -EINTR) {
      fail(p, static_cast<int>(-n));
    } else if (n == PathIo::kWouldBlock) {
      return;
    }
  }
}

void StripeReceiver::drainStage(int index) {
  Path& p = paths_[index];
  while (p.stageBegin < p.stageEnd && p.error == 0) {
    size_t have = p.stageEnd - p.stageBegin;
    if (!p.inChunk) {
      if (have < sizeof(ChunkHeader)) break;
      ChunkHeader h;
      std::memcpy(&h, p.stage.get() + p.stageBegin, sizeof(h));
      p.stageBegin += sizeof(h);
      if (!h.intact() || !placeable(h, p)) {
        fail(p, EPROTO);
        return;
      }
      p.inChunk = true;
      p.chunkStart = p.chunkPos = h.offset;
      p.chunkEnd = p.pathEnd = h.offset + h.length;
      continue;
    }
    size_t room = p.chunkPos < window() ? window() - p.chunkPos : 0;
    size_t take = std::min({have, p.chunkEnd - p.chunkPos, room});
    if (take == 0) break;
    place(p, p.stage.get() + p.stageBegin, take);
    p.stageBegin += take;
    advance(index, take);
  }
  if (p.stageBegin == p.stageEnd) {
    p.stageBegin = p.stageEnd = 0;
  } else if (!p.inChunk && p.stageBegin > 0) {  // a partial header: to the front
    std::memmove(p.stage.get(), p.stage.get() + p.stageBegin, p.stageEnd - p.stageBegin);
    p.stageEnd -= p.stageBegin;
    p.stageBegin = 0;
  }
}

// The sender cuts the stream in order and gives each chunk to one path, so a chunk starts
// after everything received in order, after its path's previous chunk, and overlaps no
// chunk that another path has (partly) delivered.
bool StripeReceiver::placeable(const ChunkHeader& h, const Path& p) const {
  const uint64_t begin = h.offset, end = h.offset + h.length;  // intact(): no overflow
  if (h.length > maxChunk_ || begin < contiguous_ || begin < p.pathEnd) return false;
  auto next = done_.lower_bound(begin);  // done_: complete chunks beyond the prefix
  if (next != done_.end() && next->first < end) return false;
  if (next != done_.begin() && std::prev(next)->second > begin) return false;
  for (const Path& other : paths_)
    if (&other != &p && other.inChunk && other.chunkStart < end && begin < other.chunkEnd)
      return false;
  return true;
}

void StripeReceiver::place(Path& p, const std::byte* data, size_t bytes) {
  iovec iov[2];
  int count = ringPieces(p.chunkPos, p.chunkPos + bytes, iov);
  for (int i = 0; i < count; ++i) {
    std::memcpy(iov[i].iov_base, data, iov[i].iov_len);
    data += iov[i].iov_len;
  }
}

void StripeReceiver::advance(int index, size_t bytes) {
  Path& p = paths_[index];
  stats_->paths[index].received.fetch_add(bytes, std::memory_order_relaxed);
  p.chunkPos += bytes;
  bool extends = p.chunkStart <= contiguous_;
  if (p.chunkPos == p.chunkEnd) endChunk(p);
  if (extends) {
    // Other paths' chunks may follow on from this one.
    contiguous_ = std::max(contiguous_, p.chunkPos);
    advanceContiguous();
  }
}

void StripeReceiver::endChunk(Path& p) {
  p.inChunk = false;
  if (p.chunkStart > contiguous_) done_.emplace(p.chunkStart, p.chunkEnd);
}

void StripeReceiver::advanceContiguous() {
  for (bool moved = true; moved;) {
    moved = false;
    while (!done_.empty() && done_.begin()->first <= contiguous_) {
      contiguous_ = std::max(contiguous_, done_.begin()->second);
      done_.erase(done_.begin());
      moved = true;
    }
    for (const Path& p : paths_) {
      if (p.inChunk && p.chunkStart <= contiguous_ && p.chunkPos > contiguous_) {
        contiguous_ = p.chunkPos;
        moved = true;
      }
    }
  }
}

int StripeReceiver::ringPieces(uint64_t from, uint64_t to, iovec* iov) const {
  int count = 0;
  while (from < to) {
    uint64_t offset = from % ringSize_;
    size_t piece = static_cast<size_t>(std::min(to - from, ringSize_ - offset));
    iov[count++] = iovec{ring_.get() + offset, piece};
    from += piece;
  }
  return count;
}

std::span<const std::byte> StripeReceiver::peek() {
  for (int i = 0; i < static_cast<int>(paths_.size()); ++i) pull(i);
  if (contiguous_ == consumed_) {
    // Nothing to hand out. A broken path loses data; a closed one only matters once
    // every path is closed (a peer that exits closes them in no particular order).
    int closed = 0;
    for (const Path& p : paths_) {
      if (p.error > 0) {
        throw PeerError(peer_, p.error == EPROTO
                                   ? "rank " + std::to_string(peer_) + " sent a bad chunk header"
                                   : "connection to rank " + std::to_string(peer_) +
                                         " reset: " + std::strerror(p.error));
      }
      closed += p.error < 0;
    }
    if (closed == static_cast<int>(paths_.size()))
      throw PeerError(peer_,
                      "rank " + std::to_string(peer_) + " closed the connection (process died?)");
    return {};
  }
  uint64_t offset = consumed_ % ringSize_;
  return {ring_.get() + offset,
          static_cast<size_t>(std::min(contiguous_ - consumed_, ringSize_ - offset))};
}

void StripeReceiver::consume(size_t bytes) {
  if (bytes > contiguous_ - consumed_)
    throwInvalid("striping: consume(" + std::to_string(bytes) + ") beyond the received data");
  consumed_ += bytes;
}

void StripeReceiver::fail(Path& p, int error) {
  if (p.error == 0) p.error = error;
}

}  // namespace chorus::stripe
