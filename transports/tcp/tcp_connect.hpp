// Connecting from a chosen local address, so that each connection leaves through the NIC
// it is meant for (one per rail); the kernel picks a fresh source port for each.
#pragma once

#include "net/socket.hpp"

namespace chorus::tcp {

// Like net::Socket::connect (retries while the peer is not listening yet, throws
// Error(Timeout) at the deadline), but binds to `from` (port 0) first when given.
net::Socket connectFrom(const net::SocketAddress& to, const net::SocketAddress* from,
                        Deadline deadline);

}  // namespace chorus::tcp
