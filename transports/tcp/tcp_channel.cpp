#include "transports/tcp/tcp_channel.hpp"

#include "errors.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace chorus::tcp {

TcpChannel::TcpChannel(int peer, std::vector<net::Socket> sockets, const TcpConfig& config)
    : peer_(peer), block_(config.block), ringSize_(config.buffer) {
  // Block and ring sizes are multiples of 8, so the wrap point never splits an aligned
  // 8-byte unit of the stream.
  size_t bytes = (ringSize_ + 4095) & ~size_t{4095};
  ring_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, bytes)));
  if (!ring_) throw Error(Result::SystemError, "tcp: out of memory for the receive buffer");
  streams_.resize(sockets.size());
  for (size_t s = 0; s < sockets.size(); ++s) {
    streams_[s].socket = std::move(sockets[s]);
    streams_[s].recvPos = s * block_;
  }
}

size_t TcpChannel::trySend(const void* data, size_t bytes) {
  if (!failure_.empty()) throw PeerError(peer_, failure_);
  auto* p = static_cast<const char*>(data);
  size_t sent = 0;
  const auto S = streams_.size();
  while (sent < bytes) {
    Stream& s = streams_[(sendPos_ / block_) % S];
    size_t len = std::min<uint64_t>(bytes - sent, blockEnd(sendPos_) - sendPos_);
    ssize_t n = ::send(s.socket.fd(), p + sent, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        s.sendBlocked = true;
        break;
      }
      fail(s, errno);
      throw PeerError(peer_, s.failure);
    }
    sent += static_cast<size_t>(n);
    sendPos_ += static_cast<uint64_t>(n);
    s.sendBlocked = static_cast<size_t>(n) < len;
    if (s.sendBlocked) break;
  }
  return sent;
}

std::span<const std::byte> TcpChannel::peek() {
  for (auto& s : streams_) pull(s);
  uint64_t end = received();
  if (end == consumed_) {
    // Nothing left to hand out: a broken connection only matters once the next byte
    // needed is the one it would have carried.
    const Stream& owner = streams_[(end / block_) % streams_.size()];
    if (!owner.failure.empty()) throw PeerError(peer_, owner.failure);
    return {};
  }
  uint64_t offset = consumed_ % ringSize_;
  return {ring_.get() + offset, static_cast<size_t>(std::min(end - consumed_, ringSize_ - offset))};
}

void TcpChannel::consume(size_t bytes) {
  if (bytes > received() - consumed_)
    throwInvalid("tcp: consume(" + std::to_string(bytes) + ") beyond the received data");
  consumed_ += bytes;
}

void TcpChannel::appendPollFds(std::vector<pollfd>& fds) const {
  for (const Stream& s : streams_) {
    short events = 0;
    if (s.failure.empty()) {
      if (s.recvPos < consumed_ + ringSize_) events |= POLLIN;  // room in the ring
      if (s.sendBlocked) events |= POLLOUT;
    }
    fds.push_back(pollfd{events != 0 ? s.socket.fd() : -1, events, 0});
  }
}

void TcpChannel::onPolled(const pollfd* fds) {
  for (size_t i = 0; i < streams_.size(); ++i) {
    short revents = fds[i].revents;
    // Woken once for a short send; the engine retries, and a new short send re-arms it.
    if (revents & (POLLOUT | POLLERR | POLLHUP)) streams_[i].sendBlocked = false;
    if (revents & (POLLIN | POLLERR | POLLHUP)) pull(streams_[i]);
  }
}

void TcpChannel::pull(Stream& s) {
  const uint64_t stride = streams_.size() * block_;  // from one block of s to its next
  const uint64_t window = consumed_ + ringSize_;     // the ring has room up to here
  while (s.failure.empty()) {
    // One recvmsg fills this connection's next few blocks, split where the ring wraps.
    iovec iov[kMaxIov];
    int count = 0;
    size_t len = 0;
    for (uint64_t pos = s.recvPos; pos < window && count < kMaxIov;) {
      uint64_t end = std::min(blockEnd(pos), window);
      uint64_t offset = pos % ringSize_;
      size_t piece = std::min(end - pos, ringSize_ - offset);
      iov[count++] = iovec{ring_.get() + offset, piece};
      len += piece;
      pos += piece;
      if (pos % block_ == 0) pos += stride - block_;
    }
    if (count == 0) return;  // the ring is full up to this connection's next block
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    ssize_t n = ::recvmsg(s.socket.fd(), &msg, MSG_DONTWAIT);
    if (n > 0) {
      advance(s, static_cast<uint64_t>(n));
      if (static_cast<size_t>(n) < len) return;  // drained for now; saves an EAGAIN call
    } else if (n == 0) {
      fail(s, 0);
    } else if (errno != EINTR) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) fail(s, errno);
      return;
    }
  }
}

void TcpChannel::advance(Stream& s, uint64_t bytes) {
  while (bytes > 0) {
    uint64_t step = std::min(bytes, blockEnd(s.recvPos) - s.recvPos);
    s.recvPos += step;
    bytes -= step;
    if (s.recvPos % block_ == 0) s.recvPos += (streams_.size() - 1) * block_;
  }
}

void TcpChannel::fail(Stream& s, int err) {
  std::string p = std::to_string(peer_);
  s.failure = err == 0 ? "rank " + p + " closed the connection (process died?)"
                       : "connection to rank " + p + " reset: " + std::strerror(err);
  if (failure_.empty()) failure_ = s.failure;
}

uint64_t TcpChannel::received() const {
  // Every byte before the lowest per-connection position has arrived.
  uint64_t end = UINT64_MAX;
  for (const Stream& s : streams_) end = std::min(end, s.recvPos);
  return end;
}

}  // namespace chorus::tcp
