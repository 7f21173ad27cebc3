#include "transports/tcp/tcp_connect.hpp"

#include "errors.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace chorus::tcp {
namespace {

// Waits for the non-blocking connect of `fd`; returns its errno (0: connected).
int finishConnect(int fd, Deadline deadline) {
  for (;;) {
    auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return ETIMEDOUT;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    pollfd p{fd, POLLOUT, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (n < 0 && errno != EINTR) return errno;
    if (n > 0) break;
  }
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

}  // namespace

net::Socket connectFrom(const net::SocketAddress& to, const net::SocketAddress* from,
                        Deadline deadline) {
  if (from == nullptr) return net::Socket::connect(to, deadline);
  auto backoff = std::chrono::milliseconds(5);
  std::string where = from->toString() + " -> " + to.toString();
  for (;;) {
    net::Socket s(::socket(to.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s) throwSystemError("socket() for " + where);
    net::SocketAddress source = *from;
    source.setPort(0);
    if (::bind(s.fd(), reinterpret_cast<const sockaddr*>(&source.storage), source.length) != 0)
      throwSystemError("tcp: bind " + where);
    int err = 0;
    if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&to.storage), to.length) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) err = finishConnect(s.fd(), deadline);
    }
    if (err == 0) {
      s.setNonBlocking(false);
      return s;
    }
    bool transient = err == ECONNREFUSED || err == ECONNRESET || err == EHOSTUNREACH ||
                     err == ENETUNREACH || err == ECONNABORTED || err == EAGAIN;
    auto now = Clock::now();
    if (err == ETIMEDOUT || (transient && now >= deadline))
      throw Error(Result::Timeout, "connect " + where + ": timed out (" + std::strerror(err) + ")");
    if (!transient)
      throw Error(Result::SystemError, "connect " + where + ": " + std::strerror(err));
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

}  // namespace chorus::tcp
