// One peer's byte stream, striped over several TCP connections.
//
// The stream is cut into blocks of config.block bytes; block k travels on connection
// k % S. Both sides know the mapping, so no headers go on the wire. The receiver
// recv()s each connection straight into its block's place in a ring buffer, so the S
// connections fill S blocks at once, and peek() hands out the contiguous prefix.
// Not thread-safe: one engine thread drives a transport.
#pragma once

#include "net/socket.hpp"
#include "transports/tcp/tcp_mesh.hpp"
#include "transports/transport.hpp"

#include <poll.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace chorus::tcp {

class TcpChannel final : public Channel {
 public:
  TcpChannel(int peer, std::vector<net::Socket> sockets, const TcpConfig& config);

  size_t trySend(const void* data, size_t bytes) override;
  std::span<const std::byte> peek() override;
  void consume(size_t bytes) override;

  int streams() const { return static_cast<int>(streams_.size()); }
  // Appends exactly streams() entries (fd -1 where there is nothing to wait for).
  void appendPollFds(std::vector<pollfd>& fds) const;
  // Takes poll's answer for the entries appendPollFds added: receives what arrived and
  // records failures (raised later by trySend/peek; never throws).
  void onPolled(const pollfd* fds);

 private:
  struct Stream {
    net::Socket socket;
    uint64_t recvPos = 0;      // stream offset of the next byte this connection delivers
    bool sendBlocked = false;  // the last send was cut short: wait for POLLOUT
    std::string failure;       // non-empty once the connection is broken
  };
  static constexpr int kMaxIov = 8;
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };

  void pull(Stream& s);                     // receives what the ring has room for
  void advance(Stream& s, uint64_t bytes);  // moves s past bytes it received
  void fail(Stream& s, int err);            // err 0: end of file
  uint64_t received() const;                // end of the contiguous received prefix
  uint64_t blockEnd(uint64_t pos) const { return (pos / block_ + 1) * block_; }

  int peer_;
  uint64_t block_;
  uint64_t ringSize_;
  std::unique_ptr<std::byte, Free> ring_;
  std::vector<Stream> streams_;
  uint64_t sendPos_ = 0;   // bytes accepted by trySend so far
  uint64_t consumed_ = 0;  // bytes released by consume so far
  std::string failure_;    // the first failure on any connection
};

}  // namespace chorus::tcp
