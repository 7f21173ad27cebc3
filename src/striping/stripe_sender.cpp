#include "striping/stripe_sender.hpp"

#include "errors.hpp"
#include "log.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace chorus::stripe {

StripeSender::StripeSender(int peer, int paths, size_t chunk, PathIo& io, ChannelStats* stats)
    : peer_(peer),
      chunk_(std::clamp<size_t>(chunk, 8, UINT32_MAX)),
      io_(io),
      stats_(stats),
      scheduler_(paths),
      blocked_(static_cast<size_t>(paths), 0),
      loggedWeights_(static_cast<size_t>(paths), 1.0 / paths) {
  if (paths < 1 || paths > 64)
    throwInvalid("striping: 1 to 64 paths, not " + std::to_string(paths));
}

size_t StripeSender::send(const void* data, size_t bytes) {
  if (!failure_.empty()) throwFailure();
  auto* p = static_cast<const std::byte*>(data);
  size_t taken = 0;
  while (taken < bytes) {
    if (openPath_ >= 0) {
      size_t n = continueChunk(p + taken, bytes - taken);
      taken += n;
      if (openPath_ >= 0) break;  // that path is full for now
      continue;
    }
    size_t len = std::min(bytes - taken, chunk_);
    if (len >= kSampleMin) sample();
    uint64_t usable = 0;
    for (size_t i = 0; i < blocked_.size(); ++i) {
      if (!blocked_[i]) usable |= uint64_t{1} << i;
    }
    int path = scheduler_.pick(len, usable);
    if (path < 0) break;  // every path is full for now
    openPath_ = path;
    openHeader_ = ChunkHeader::make(sendPos_, static_cast<uint32_t>(len));
    headerLeft_ = sizeof(ChunkHeader);
    payloadLeft_ = len;
    size_t n = continueChunk(p + taken, bytes - taken);
    taken += n;
    if (openPath_ >= 0 && headerLeft_ == sizeof(ChunkHeader)) {
      openPath_ = -1;  // nothing went out: the chunk may still go elsewhere
      continue;
    }
    if (openPath_ >= 0) break;
  }
  if (!failure_.empty() && taken == 0) throwFailure();
  return taken;
}

size_t StripeSender::continueChunk(const std::byte* data, size_t bytes) {
  const int path = openPath_;
  size_t len = std::min(bytes, payloadLeft_);
  iovec iov[2];
  int count = 0;
  if (headerLeft_ > 0) {
    auto* h = reinterpret_cast<std::byte*>(&openHeader_);
    iov[count++] = {h + sizeof(ChunkHeader) - headerLeft_, headerLeft_};
  }
  iov[count++] = {const_cast<std::byte*>(data), len};
  ssize_t n = io_.write(path, iov, count);
  if (n == PathIo::kWouldBlock) {
    blocked_[path] = true;
    return 0;
  }
  if (n <= 0) {
    fail(path, n);
    if (failure_.empty()) failure_ = "striping: write failed";
    throwFailure();
  }
  size_t wrote = static_cast<size_t>(n);
  size_t header = std::min(wrote, headerLeft_);
  headerLeft_ -= header;
  size_t payload = wrote - header;
  payloadLeft_ -= payload;
  sendPos_ += payload;
  scheduler_.onWritten(path, wrote);
  io_.transferred(path, openHeader_.length);
  stats_->paths[path].sent.fetch_add(payload, std::memory_order_relaxed);
  if (payloadLeft_ == 0 && headerLeft_ == 0) {
    openPath_ = -1;
  } else if (wrote < iov[0].iov_len + (count == 2 ? iov[1].iov_len : 0)) {
    blocked_[path] = true;  // a short write: the socket is full
  }
  return payload;
}

void StripeSender::throwFailure() const {
  if (unreachable_) throw PeerError::unreachable(peer_, failure_);
  throw PeerError(peer_, failure_);
}

void StripeSender::fail(int path, ssize_t err) {
  if (!failure_.empty()) return;
  std::string who = "rank " + std::to_string(peer_);
  unreachable_ = err == -ETIMEDOUT || err == -ENETUNREACH || err == -EHOSTUNREACH;
  if (err == -ETIMEDOUT)
    failure_ = who + " cannot be reached (no answer from its host for CHORUS_KEEPALIVE)";
  else if (unreachable_)  // its network or host went away
    failure_ = who + " cannot be reached (" + std::strerror(static_cast<int>(-err)) + ")";
  else if (err == -EPIPE || err == 0)
    failure_ = "connection to " + who + " closed (process died?)";
  else
    failure_ = "connection to " + who + " (path " + std::to_string(path) +
               ") failed: " + std::strerror(static_cast<int>(-err));
}

void StripeSender::sample() {
  auto now = Clock::now();
  if (now - lastSample_ < PathScheduler::kRateWindow / 2) return;
  lastSample_ = now;
  for (int p = 0; p < scheduler_.paths(); ++p) {
    int64_t backlog = io_.backlog(p);
    if (backlog >= 0) scheduler_.onBacklog(p, static_cast<uint64_t>(backlog), now);
  }
  publish();
}

void StripeSender::publish() {
  bool moved = false;
  for (int p = 0; p < scheduler_.paths(); ++p) {
    double w = scheduler_.weight(p);
    stats_->paths[p].weightPpm.store(static_cast<uint32_t>(w * 1e6), std::memory_order_relaxed);
    stats_->paths[p].rate.store(static_cast<uint64_t>(scheduler_.rate(p)),
                                std::memory_order_relaxed);
    moved = moved || std::abs(w - loggedWeights_[p]) > 0.1;
  }
  // Log when a weight moved by 10 points, at most every 200 ms per channel.
  auto now = lastSample_;
  if (moved && scheduler_.paths() > 1 && now - lastLog_ > std::chrono::milliseconds(200) &&
      logLevel() >= LogLevel::Info) {
    lastLog_ = now;
    for (int p = 0; p < scheduler_.paths(); ++p) loggedWeights_[p] = scheduler_.weight(p);
    logf(LogLevel::Info, "%s: rank %d -> %d path weights %s", stats_->transport.c_str(),
         stats_->rank, peer_, scheduler_.describe().c_str());
  }
}

}  // namespace chorus::stripe
