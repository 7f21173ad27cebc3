// The handshake of handshake.hpp run over sockets, for the store and the TCP transport.
// The connecting side blocks (under a deadline); the accepting side never blocks, so a
// stranger that connects and says nothing cannot stall an accept loop.
#pragma once

#include "clock.hpp"
#include "net/socket.hpp"
#include "security/handshake.hpp"
#include "security/job_secret.hpp"

#include <string>

namespace chorus::security {

// Proves `key` to the acceptor at the other end of `socket` and checks that it knows it
// too. Throws Error(RemoteError) when the peer closes or fails to prove the key,
// Error(Timeout) at the deadline. `what` names the peer in messages ("the store at ...").
void authenticateConnection(net::Socket& socket, Bytes key, Bytes context, Deadline deadline,
                            const std::string& what);

// The same in two halves, for a caller with other work to do while the acceptor answers
// (the TCP mesh accepts from lower ranks in between, so that no rank waits in a chain).
class ConnectingAuth {
 public:
  // Sends the hello.
  ConnectingAuth(net::Socket& socket, Bytes key, Bytes context, Deadline deadline);
  // Reads the acceptor's challenge, checks it and sends the proof.
  void finish(net::Socket& socket, Deadline deadline, const std::string& what) const;

 private:
  Initiator initiator_;
};

// One accepted connection on its way to being trusted. Call step() whenever its fd is
// readable and expire() now and then; a refusal is logged (WARN) with the peer's address.
class AcceptedConnection {
 public:
  enum class Status { Pending, Accepted, Refused };
  // `where` names the listener in the log ("store", "tcp transport of rank 2").
  AcceptedConnection(Bytes key, Deadline deadline, std::string where);

  Status step(int fd);
  // Refuses (and logs) if the deadline has passed without the handshake completing.
  Status expire(int fd, Clock::time_point now);
  Bytes context() const { return responder_.context(); }  // once Accepted
  Status status() const { return status_; }

 private:
  Status refuse(int fd, const std::string& why);
  Responder responder_;
  Deadline deadline_;
  std::string where_;
  Status status_ = Status::Pending;
};

}  // namespace chorus::security
