#include "transports/tcp/tcp_channel.hpp"

#include "log.hpp"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <limits>

namespace chorus::tcp {
namespace {

// Linux enters delayed-ACK "pingpong" mode on a socket that sends soon after receiving
// (every exchange of a collective) and then holds the ACK of a last part-segment for a
// reply to carry, 40 ms at least. A sender short of window waits that out: 7-9% of the
// netns bed's 3x2 calls were held 20-180 ms (docs/sim.md, sim10). TCP_QUICKACK leaves
// the mode (and sends the ACKs held so far); it is not sticky, so it is re-armed after
// every read and write of a chunk of kQuickAckSegments segments or more. Smaller chunks
// are left alone: there the ACK rides on the reply, and a pure ACK of its own per message
// made loopback messages of 8 B-32 KiB 1.4-1.6x slower (one segment each there: MSS 64 KiB).
constexpr size_t kQuickAckSegments = 4;

size_t quickAckBytes(const net::Socket& socket) {
  int mss = 0;
  socklen_t length = sizeof(mss);
  if (::getsockopt(socket.fd(), IPPROTO_TCP, TCP_MAXSEG, &mss, &length) != 0 || mss <= 0)
    return std::numeric_limits<size_t>::max();  // unknown: never re-arm
  return kQuickAckSegments * static_cast<size_t>(mss);
}

std::vector<size_t> quickAckBytes(const std::vector<net::Socket>& sockets) {
  std::vector<size_t> bytes;
  for (const net::Socket& socket : sockets) bytes.push_back(quickAckBytes(socket));
  return bytes;
}

}  // namespace

TcpChannel::TcpChannel(int rank, int peer, std::vector<net::Socket> sockets,
                       std::vector<std::string> names, const TcpConfig& config)
    : sockets_(std::move(sockets)),
      quickAckBytes_(quickAckBytes(sockets_)),
      stats_(stripe::registerChannel("tcp", rank, peer, std::move(names))),
      sender_(peer, streams(), config.block, *this, stats_.get()),
      receiver_(peer, streams(), config.buffer, *this, stats_.get(), config.block),
      unansweredLimit_(config.unansweredLimit) {}

TcpChannel::~TcpChannel() {
  if (streams() > 1) stripe::logChannelReport(*stats_);
}

size_t TcpChannel::trySend(const void* data, size_t bytes) { return sender_.send(data, bytes); }

std::span<const std::byte> TcpChannel::peek() { return receiver_.peek(); }

void TcpChannel::probe(bool on) {
  for (net::Socket& socket : sockets_) socket.probeEachSecond(on, unansweredLimit_);
}

std::optional<PeerSilence> TcpChannel::silence() const {
  std::optional<PeerSilence> worst;
  for (const net::Socket& socket : sockets_) {
    const auto quiet = socket.unanswered();
    if (quiet && (!worst || quiet->unanswered > worst->unanswered))
      worst = PeerSilence{quiet->since, quiet->unanswered};
  }
  return worst;
}

void TcpChannel::appendPollFds(std::vector<pollfd>& fds) const {
  for (int s = 0; s < streams(); ++s) {
    short events = 0;
    if (receiver_.wantsRead(s)) events |= POLLIN;
    if (sender_.wantsWrite(s)) events |= POLLOUT;
    fds.push_back(pollfd{events != 0 ? sockets_[s].fd() : -1, events, 0});
  }
}

void TcpChannel::onPolled(const pollfd* fds) {
  for (int s = 0; s < streams(); ++s) {
    short revents = fds[s].revents;
    // Woken once for a full path; the engine retries, and a new short send re-arms it.
    if (revents & (POLLOUT | POLLERR | POLLHUP)) sender_.onWritable(s);
    if (revents & (POLLIN | POLLERR | POLLHUP)) receiver_.pull(s);
  }
}

ssize_t TcpChannel::write(int path, const iovec* iov, int count) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(count);
  for (;;) {
    ssize_t n = ::sendmsg(sockets_[path].fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno != EINTR) return errno == EWOULDBLOCK ? kWouldBlock : -errno;
  }
}

ssize_t TcpChannel::read(int path, const iovec* iov, int count) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(count);
  for (;;) {
    ssize_t n = ::recvmsg(sockets_[path].fd(), &msg, MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno != EINTR) return errno == EWOULDBLOCK ? kWouldBlock : -errno;
  }
}

void TcpChannel::transferred(int path, size_t chunkBytes) {
  if (chunkBytes < quickAckBytes_[path]) return;
  int one = 1;  // a failure only loses the speed-up
  ::setsockopt(sockets_[path].fd(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

int64_t TcpChannel::backlog(int path) {
  int queued = 0;  // sent but not acknowledged yet, plus not sent yet
  if (::ioctl(sockets_[path].fd(), SIOCOUTQ, &queued) != 0) return -1;
  return queued;
}

}  // namespace chorus::tcp
