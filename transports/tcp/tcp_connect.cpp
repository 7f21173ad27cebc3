#include "transports/tcp/tcp_connect.hpp"

#include "errors.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace chorus::tcp {

Connecting startConnect(const net::SocketAddress& to, const net::SocketAddress* from) {
  std::string where = (from ? from->toString() + " -> " : std::string()) + to.toString();
  net::Socket s(::socket(to.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) throwSystemError("tcp: socket() for " + where);
  if (from) {
    net::SocketAddress source = *from;
    source.setPort(0);
    if (::bind(s.fd(), reinterpret_cast<const sockaddr*>(&source.storage), source.length) != 0)
      throwSystemError("tcp: bind " + where);
  }
  int err = 0;
  if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&to.storage), to.length) != 0)
    err = errno == EINTR ? EINPROGRESS : errno;  // an interrupted connect goes on
  return {std::move(s), err};
}

int connectError(int fd) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

}  // namespace chorus::tcp
