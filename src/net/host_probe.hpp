// Whether another host still answers, asked on this process's TCP connections to it
// whatever opened them: UCX's tcp transport keeps its sockets to itself, so they are found
// through /proc/self/fd by the address at their other end. The transport then probes and
// reads a peer's host as the tcp transport does its own sockets (Socket::probeEachSecond,
// Socket::unanswered; Transport::probe, silence): the kernel answers for a host, so a
// stopped or busy process on a live host is never taken for one that is cut off.
#pragma once

#include "net/socket.hpp"

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace chorus::net {

// A socket address's host as text ("10.0.0.1", "fd00::1"; an IPv4-mapped IPv6 address as
// IPv4), the form hostAddresses() and HostProbe use.
std::string hostText(const sockaddr_storage& address);
// This host's addresses: those of findInterfaces("") but loopback (a peer publishes them so
// that the others can find their connections to its host).
std::vector<std::string> hostAddresses();

// Socket::unanswered and the probing half of Socket::probeEachSecond on a descriptor this
// process holds but need not own; false where a setsockopt failed.
std::optional<Socket::Unanswered> unansweredOn(int fd);
bool probeEachSecondOn(int fd);

// An int socket option of a descriptor this process holds (SO_KEEPALIVE, TCP_KEEPIDLE, ...);
// 0 where getsockopt fails.
int socketOption(int fd, int level, int name);

// The ports this process's TCP sockets listen on.
std::set<uint16_t> listeningPorts();
// This process's connected TCP sockets that a listener on one of `ports` accepted (their
// local port is its) from a host with one of `addresses`.
std::vector<int> acceptedConnections(const std::set<uint16_t>& ports,
                                     const std::vector<std::string>& addresses);

class HostProbe {
 public:
  HostProbe() = default;
  ~HostProbe();  // every probed connection back to its own keepalive settings
  HostProbe(const HostProbe&) = delete;
  HostProbe& operator=(const HostProbe&) = delete;

  // On: this process's connections to a host with one of `addresses` send a keepalive probe
  // each idle second (127 of them: they never end a connection by themselves), their own
  // keepalive settings kept aside; off: back to those. `key` (the caller's peer) says whose
  // probe it is: a connection is probed while any key's addresses match its other end.
  void probe(int key, const std::vector<std::string>& addresses, bool on);
  // The connection to a host with one of `addresses` with the most resends or keepalive
  // probes in a row unanswered (Socket::unanswered); empty when none went unanswered.
  std::optional<Socket::Unanswered> silence(const std::vector<std::string>& addresses) const;

 private:
  // A connected TCP socket of this process: its descriptor, inode and other end's host.
  struct Connection {
    int fd;
    ino_t inode;
    std::string host;
  };
  struct Saved {
    ino_t inode = 0;  // the socket's, so that a descriptor reused meanwhile is left alone
    int keepalive = 0, idle = 0, interval = 0, count = 0;
  };
  static std::vector<Connection> connections();
  void apply();

  // The engine probes each awaited peer in turn (all of them in an all-to-all): one look
  // through /proc/self/fd serves the calls of the next kListFor.
  static constexpr auto kListFor = std::chrono::milliseconds(100);
  std::vector<Connection> listed_;
  Clock::time_point listedAt_{};
  std::map<int, std::vector<std::string>> probed_;  // key -> its host's addresses
  std::map<int, Saved> saved_;                      // probed descriptor -> its own settings
};

}  // namespace chorus::net
