#include "striping/stripe_receiver.hpp"

#include "errors.hpp"

#include <algorithm>
#include <cstring>

namespace chorus::stripe {

StripeReceiver::StripeReceiver(int peer, int paths, size_t ringBytes, PathIo& io,
                               ChannelStats* stats, size_t maxChunk)
    : peer_(peer),
      io_(io),
      stats_(stats),
      ringSize_(ringBytes),
      maxChunk_(std::clamp<size_t>(maxChunk, 8, UINT32_MAX)),  // as StripeSender clamps
      paths_(static_cast<size_t>(paths)),
      assembly_(paths, maxChunk_) {
  if (ringBytes < 8 || ringBytes % 8 != 0)
    throwInvalid("striping: ring of " + std::to_string(ringBytes) + " bytes");
  size_t bytes = (ringSize_ + 4095) & ~size_t{4095};
  ring_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, bytes)));
  if (!ring_) throw Error(Result::SystemError, "striping: out of memory for the receive ring");
}

bool StripeReceiver::wantsRead(int path) const {
  const Path& p = paths_[path];
  return p.error == 0 && !(assembly_.inPiece(path) && assembly_.position(path) >= window());
}

void StripeReceiver::pull(int index) {
  Path& p = paths_[index];
  while (p.error == 0) {
    drainStage(index);
    const bool inChunk = assembly_.inPiece(index);
    if (p.stageBegin < p.stageEnd && inChunk) return;  // staged payload waits for room
    // Payload straight into the ring; the stage catches what follows the chunk.
    iovec iov[3];
    int count = 0;
    size_t direct = 0;
    bool wholeChunk = true;
    if (inChunk) {
      const uint64_t pos = assembly_.position(index), end = assembly_.pieceEnd(index);
      uint64_t to = std::min(end, window());
      count = ringPieces(pos, to, iov);
      if (count == 0) return;  // no room in the ring
      direct = to - pos;
      wholeChunk = to == end;
    }
    if (wholeChunk) iov[count++] = iovec{p.stage.get() + p.stageEnd, kStage - p.stageEnd};
    ssize_t n = io_.read(index, iov, count);
    if (n > 0) {
      size_t got = static_cast<size_t>(n);
      size_t inRing = std::min(got, direct);
      if (inRing > 0) advance(index, inRing);
      p.stageEnd += got - inRing;
      size_t asked = direct + (wholeChunk ? iov[count - 1].iov_len : 0);
      drainStage(index);  // places what came, opening the chunk whose header it holds
      io_.transferred(index, p.pieceBytes);
      if (got < asked) return;  // drained for now: spare the EAGAIN call
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
    if (!assembly_.inPiece(index)) {
      if (have < sizeof(ChunkHeader)) break;
      ChunkHeader h;
      std::memcpy(&h, p.stage.get() + p.stageBegin, sizeof(h));
      p.stageBegin += sizeof(h);
      const char* why = h.intact() ? assembly_.reject(index, h.offset, h.length)
                                   : "its check word does not match";
      if (why) {
        if (!badChunk_) badChunk_ = why;
        fail(p, EPROTO);
        return;
      }
      assembly_.open(index, h.offset, h.length);
      p.pieceBytes = h.length;
      continue;
    }
    const uint64_t pos = assembly_.position(index);
    size_t room = pos < window() ? window() - pos : 0;
    size_t take = std::min({have, assembly_.pieceEnd(index) - pos, room});
    if (take == 0) break;
    place(index, p.stage.get() + p.stageBegin, take);
    p.stageBegin += take;
    advance(index, take);
  }
  if (p.stageBegin == p.stageEnd) {
    p.stageBegin = p.stageEnd = 0;
  } else if (!assembly_.inPiece(index) && p.stageBegin > 0) {  // a partial header: to the front
    std::memmove(p.stage.get(), p.stage.get() + p.stageBegin, p.stageEnd - p.stageBegin);
    p.stageEnd -= p.stageBegin;
    p.stageBegin = 0;
  }
}

void StripeReceiver::place(int path, const std::byte* data, size_t bytes) {
  iovec iov[2];
  const uint64_t pos = assembly_.position(path);
  int count = ringPieces(pos, pos + bytes, iov);
  for (int i = 0; i < count; ++i) {
    std::memcpy(iov[i].iov_base, data, iov[i].iov_len);
    data += iov[i].iov_len;
  }
}

void StripeReceiver::advance(int path, size_t bytes) {
  stats_->paths[path].received.fetch_add(bytes, std::memory_order_relaxed);
  assembly_.arrived(path, bytes);
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
  const uint64_t contiguous = assembly_.contiguous();
  if (contiguous == consumed_) {
    // Nothing to hand out. A broken path loses data; a closed one only matters once
    // every path is closed (a peer that exits closes them in no particular order).
    int closed = 0;
    for (const Path& p : paths_) {
      if (p.error > 0) {
        const std::string rank = "rank " + std::to_string(peer_);
        if (p.error == EPROTO)
          throw PeerError(peer_, rank + " sent a bad chunk header (" + badChunk_ + ")");
        if (p.error == ETIMEDOUT)
          throw PeerError::unreachable(
              peer_, rank + " cannot be reached (no answer from its host for CHORUS_KEEPALIVE)");
        if (p.error == ENETUNREACH || p.error == EHOSTUNREACH)
          throw PeerError::unreachable(
              peer_, rank + " cannot be reached (" + std::strerror(p.error) + ")");
        throw PeerError(peer_, "connection to " + rank + " reset: " + std::strerror(p.error));
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
          static_cast<size_t>(std::min(contiguous - consumed_, ringSize_ - offset))};
}

void StripeReceiver::consume(size_t bytes) {
  if (bytes > assembly_.contiguous() - consumed_)
    throwInvalid("striping: consume(" + std::to_string(bytes) + ") beyond the received data");
  consumed_ += bytes;
}

void StripeReceiver::fail(Path& p, int error) {
  if (p.error == 0) p.error = error;
}

}  // namespace chorus::stripe
