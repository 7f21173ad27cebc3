#include "security/connection_auth.hpp"

#include "errors.hpp"
#include "log.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace chorus::security {
namespace {

std::string peerOf(int fd) {
  net::SocketAddress a;
  a.length = sizeof(a.storage);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.length) != 0)
    return "an unknown address";
  return a.toString();
}

}  // namespace

ConnectingAuth::ConnectingAuth(net::Socket& socket, Bytes key, Bytes context, Deadline deadline)
    : initiator_(key, context) {
  auto hello = initiator_.hello();
  socket.sendAll(hello.data(), hello.size(), deadline);
}

void ConnectingAuth::finish(net::Socket& socket, Deadline deadline, const std::string& what) const {
  uint8_t challenge[kChallengeSize];
  try {
    socket.recvAll(challenge, sizeof(challenge), deadline);
  } catch (const Error& e) {
    if (e.code() == Result::Timeout) throw Error(Result::Timeout, what + ": " + e.what());
    if (e.code() != Result::RemoteError) throw;
    throw Error(Result::RemoteError, what +
                                         " closed the connection during authentication "
                                         "(wrong job secret, or not a Chorus peer)");
  }
  auto proof = initiator_.answer(challenge);
  if (!proof) {
    throw Error(Result::RemoteError,
                what + " failed to prove the job secret (another job's, or not a Chorus peer)");
  }
  socket.sendAll(proof->data(), proof->size(), deadline);
}

void authenticateConnection(net::Socket& socket, Bytes key, Bytes context, Deadline deadline,
                            const std::string& what) {
  ConnectingAuth(socket, key, context, deadline).finish(socket, deadline, what);
}

AcceptedConnection::AcceptedConnection(Bytes key, Deadline deadline, std::string where)
    : responder_(key), deadline_(deadline), where_(std::move(where)) {}

AcceptedConnection::Status AcceptedConnection::step(int fd) {
  while (status_ == Status::Pending) {
    uint8_t buf[kHelloHeader + kMaxContext];
    size_t want = std::min(responder_.wants(), sizeof(buf));
    ssize_t n = ::recv(fd, buf, want, MSG_DONTWAIT);
    if (n == 0) return refuse(fd, "closed the connection during authentication");
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return status_;
      return refuse(fd, std::string("receive failed: ") + std::strerror(errno));
    }
    auto before = responder_.state();
    responder_.feed({buf, size_t(n)});
    auto now = responder_.state();
    if (now == Responder::State::Refused) return refuse(fd, responder_.reason());
    if (now == Responder::State::Accepted) status_ = Status::Accepted;
    if (before == Responder::State::Hello && now == Responder::State::Proof) {
      // 48 bytes on a fresh connection always fit in the socket buffer.
      const auto& c = responder_.challenge();
      if (::send(fd, c.data(), c.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != ssize_t(c.size()))
        return refuse(fd, "could not send the challenge");
    }
  }
  return status_;
}

AcceptedConnection::Status AcceptedConnection::expire(int fd, Clock::time_point now) {
  if (status_ == Status::Pending && now >= deadline_)
    return refuse(fd, "did not complete authentication in time");
  return status_;
}

AcceptedConnection::Status AcceptedConnection::refuse(int fd, const std::string& why) {
  status_ = Status::Refused;
  logf(LogLevel::Warn, "%s: refused a connection from %s: %s", where_.c_str(), peerOf(fd).c_str(),
       why.c_str());
  return status_;
}

}  // namespace chorus::security
