// Small socket toolkit shared by the store and the TCP transport. Every blocking call
// takes a deadline; failures throw chorus::Error with the address and strerror.
#pragma once

#include "clock.hpp"

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace chorus::net {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  static SocketAddress parse(const std::string& host, uint16_t port);  // name or literal
  uint16_t port() const;
  void setPort(uint16_t port);
  int family() const { return storage.ss_family; }
  std::string toString() const;  // "1.2.3.4:5" or "[::1]:5"
};

struct Interface {
  std::string name;
  SocketAddress address;  // port 0
};

// Interfaces that pass `spec` (NCCL_SOCKET_IFNAME syntax: comma-separated prefixes, `^`
// excludes, `=` demands exact names; empty spec: every non-loopback interface that is up,
// or loopback if that is all there is). IPv4 first.
std::vector<Interface> findInterfaces(const std::string& spec);
// The names of findInterfaces(spec), each once (an interface has several addresses), in
// its order.
std::vector<std::string> findInterfaceNames(const std::string& spec);

// The TCP keepalive that tells a host silent for `limit` (CHORUS_KEEPALIVE): probes after
// half of it, every eighth of it (whole seconds, at least 1), as many as fit in the rest.
// Socket::setUnansweredLimit sets these; the ucx transport gives them to UCX's tcp transport.
struct KeepaliveTimes {
  int idleSeconds = 0, intervalSeconds = 0, probes = 0;
};
KeepaliveTimes keepaliveTimes(std::chrono::milliseconds limit);
// SO_KEEPALIVE on, with `times`, on a descriptor this process holds but need not own (a time
// or count of 0: the kernel's); false where a setsockopt failed. setUnansweredLimit's
// keepalive, and the ucx transport's on the connections UCX accepted.
bool keepaliveOn(int fd, const KeepaliveTimes& times);

class Socket {
 public:
  Socket() = default;
  // Takes `fd` over; a forked child will not keep it (net/fork_guard.hpp).
  explicit Socket(int fd);
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();

  int fd() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release();

  static Socket listen(const SocketAddress& address, int backlog = 128);
  static Socket connect(const SocketAddress& address, Deadline deadline);  // retries refused
  Socket accept(Deadline deadline);                                        // on a listening socket
  SocketAddress localAddress() const;

  void setNoDelay();
  // A connection whose other host stops answering for `limit` (a crashed or cut-off node)
  // fails with ETIMEDOUT, idle or not (TCP keepalive and TCP_USER_TIMEOUT); 0: leave the
  // kernel's defaults (hours).
  void setUnansweredLimit(std::chrono::milliseconds limit);
  // Whether the other host still answers, from the kernel (TCP_INFO): how long since it
  // last acknowledged anything, and how many resends of unacknowledged data or keepalive
  // probes in a row went unanswered. Empty when nothing went unanswered.
  struct Unanswered {
    std::chrono::milliseconds since{0};
    int unanswered = 0;
  };
  std::optional<Unanswered> unanswered() const;
  // On: ask the other host for an answer each second the connection is idle (keepalive
  // probes that never end it by themselves), so that unanswered() can tell a host that no
  // longer answers. Off: back to setUnansweredLimit(limit).
  void probeEachSecond(bool on, std::chrono::milliseconds limit);
  void setNonBlocking(bool on);
  // Whole-buffer transfers with a deadline (use on blocking or non-blocking sockets).
  void sendAll(const void* data, size_t bytes, Deadline deadline);
  void recvAll(void* data, size_t bytes, Deadline deadline);  // EOF throws

 private:
  int fd_ = -1;
};

}  // namespace chorus::net
