// Non-blocking connects from a chosen local address, so that each connection leaves
// through the NIC it is meant for (one per rail); the kernel picks a fresh source port.
#pragma once

#include "net/socket.hpp"

namespace chorus::tcp {

// A connect under way: `socket` is non-blocking; `error` is 0 (connected), EINPROGRESS
// (wait for POLLOUT, then connectError) or the errno that failed it at once.
struct Connecting {
  net::Socket socket;
  int error = 0;
};

// Starts connecting to `to`, bound to `from` (port 0) first when given. Throws
// Error(SystemError) when no socket can be made or bound.
Connecting startConnect(const net::SocketAddress& to, const net::SocketAddress* from);
// The outcome of a connect that was in progress once its socket polled writable:
// 0 connected, else its errno.
int connectError(int fd);

}  // namespace chorus::tcp
