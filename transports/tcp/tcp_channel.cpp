#include "transports/tcp/tcp_channel.hpp"

#include "log.hpp"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>

namespace chorus::tcp {

TcpChannel::TcpChannel(int rank, int peer, std::vector<net::Socket> sockets,
                       std::vector<std::string> names, const TcpConfig& config)
    : sockets_(std::move(sockets)),
      stats_(stripe::registerChannel("tcp", rank, peer, std::move(names))),
      sender_(peer, streams(), config.block, *this, stats_.get()),
      receiver_(peer, streams(), config.buffer, *this, stats_.get(), config.block) {}

TcpChannel::~TcpChannel() {
  if (streams() > 1) stripe::logChannelReport(*stats_);
}

size_t TcpChannel::trySend(const void* data, size_t bytes) { return sender_.send(data, bytes); }

std::span<const std::byte> TcpChannel::peek() { return receiver_.peek(); }

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

int64_t TcpChannel::backlog(int path) {
  int queued = 0;  // sent but not acknowledged yet, plus not sent yet
  if (::ioctl(sockets_[path].fd(), SIOCOUTQ, &queued) != 0) return -1;
  return queued;
}

}  // namespace chorus::tcp
