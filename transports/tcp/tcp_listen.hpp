// TCP transport set-up: its tunables, and the listeners every rank opens and publishes at
// creation. Connections are made later, on first use (tcp_connector.hpp).
#pragma once

#include "net/socket.hpp"
#include "transports/transport.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace chorus::tcp {

// Read once, when a transport is made; every rank must use the same streams and block.
struct TcpConfig {
  int streams = 2;           // CHORUS_TCP_STREAMS: connections per peer and NIC, 1..16
  size_t block = 128 << 10;  // CHORUS_TCP_BLOCK: striping unit, multiple of 8
  size_t buffer = 1 << 20;   // CHORUS_TCP_BUFFER: receive ring per peer, >= block
  size_t socketBuffer = 0;   // CHORUS_TCP_SOCKBUF: SO_SNDBUF/SO_RCVBUF, 0: autotune
  std::chrono::milliseconds unansweredLimit{30'000};  // CHORUS_KEEPALIVE
  static TcpConfig fromEnv();
};

struct Nic;

// This rank's listeners, one per NIC that CHORUS_SOCKET_IFNAME matches (the first only
// when it is not set), and the key a connecting peer must prove (its handshake's key).
struct Listening {
  std::vector<net::Socket> sockets;  // non-blocking
  std::vector<net::Interface> nics;  // sockets[i] listens on nics[i]
  std::array<uint8_t, 32> key{};
};

// Listens and publishes "tcp/<rank>" (the first address), "tcp/<rank>/nics" (all) and
// "tcp/<rank>/token" (the key; only a process that can read the job's store learns it).
// Waits for no one.
Listening listenAndPublish(const TransportContext& ctx, const TcpConfig& config);

// What `peer` published: its NICs and its key. Throws Error (Timeout at the deadline)
// naming the peer.
std::vector<Nic> peerNics(const TransportContext& ctx, int peer, Deadline deadline);
std::vector<std::byte> peerKey(const TransportContext& ctx, int peer, Deadline deadline);

// Connections of a peer pair: config.streams per NIC of the side with more NICs.
int pathCount(const TcpConfig& config, size_t localNics, size_t remoteNics);

// TCP_NODELAY, the configured socket buffers, non-blocking.
void tune(net::Socket& socket, const TcpConfig& config);

}  // namespace chorus::tcp
