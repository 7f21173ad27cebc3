// TCP transport set-up: its tunables and the full mesh of striped connections.
#pragma once

#include "net/socket.hpp"
#include "transports/transport.hpp"

#include <cstddef>
#include <vector>

namespace chorus::tcp {

// Read once, when a transport is made; every rank must use the same streams and block.
struct TcpConfig {
  int streams = 2;           // CHORUS_TCP_STREAMS: connections per peer and NIC, 1..16
  size_t block = 128 << 10;  // CHORUS_TCP_BLOCK: striping unit, multiple of 8
  size_t buffer = 1 << 20;   // CHORUS_TCP_BUFFER: receive ring per peer, >= block
  size_t socketBuffer = 0;   // CHORUS_TCP_SOCKBUF: SO_SNDBUF/SO_RCVBUF, 0: autotune
  static TcpConfig fromEnv();
};

// Listens on every NIC that CHORUS_SOCKET_IFNAME matches (the first only when it is not
// set), publishes "tcp/<rank>" (the first address) and "tcp/<rank>/nics" (all) and connects to
// every peer with config.streams connections per NIC, each bound to its NIC, NIC to the peer's NIC
// of the same name (the lower rank connects, the higher accepts). Result[p][s] is stream s to peer
// p, non-blocking with TCP_NODELAY; result[ctx.rank] is empty. Throws Error(Timeout) naming the
// missing peer when ctx.deadline passes.
std::vector<std::vector<net::Socket>> connectMesh(const TransportContext& ctx,
                                                  const TcpConfig& config);

}  // namespace chorus::tcp
