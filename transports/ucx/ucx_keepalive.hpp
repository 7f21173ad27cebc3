// CHORUS_KEEPALIVE on UCX's tcp transport's connections, at both ends.
//
// UCX sets keepalive on its sockets itself (UCX_TCP_KEEPIDLE, KEEPINTVL, KEEPCNT; 10 s, 2 s
// and the kernel's probes by default), but UCX 1.13 only at the end that connected: the
// accepting end's socket never probes. One decision, tcpKeepalive(), says what both ends
// get: the tcp transport's probes (net::keepaliveTimes) for each setting the environment
// does not give UCX itself, the user's UCX_TCP_<name> where it does (the user's wins), and
// nothing for CHORUS_KEEPALIVE=0 (UCX's own at the connecting end, none at the accepting
// end, as UCX leaves them). The connecting end gets it through UCX's configuration
// (configure); the accepting end's sockets, which UCX never touches, through setsockopt once
// the endpoints are wired (keepAccepted).
//
// No TCP_USER_TIMEOUT (the tcp transport's Socket::setUnansweredLimit sets one): UCX sets
// none at the connecting end, and Chorus cannot tell that end's sockets from the process's
// others (see keepAccepted for how the accepting end's are told), so one end would end a
// connection with unacknowledged data at the limit and the other after the kernel's resends
// (minutes), depending on which rank UCX had connect. It would also override a user's
// UCX_TCP_KEEPCNT (with TCP_USER_TIMEOUT set the kernel ends a keepalive at that time,
// whatever the count). A cut-off host with data in flight is named by the engine's probes
// (net::HostProbe) instead.
#pragma once

#include "net/socket.hpp"

#include <ucp/api/ucp.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace chorus::ucx {

struct TcpKeepalive {
  struct Setting {
    const char* name;  // UCX's tcp transport's: KEEPIDLE, KEEPINTVL, KEEPCNT
    int chorus;        // from net::keepaliveTimes: seconds, or probes
    const char* user;  // UCX_TCP_<name> from the environment; null when unset
  };
  std::array<Setting, 3> settings;
};

// What CHORUS_KEEPALIVE (`limit`) gives a context on `netDevices` (its NET_DEVICES; empty:
// UCX's choice); empty when Chorus leaves UCX alone: a limit of 0, or a context that cannot
// open tcp (RDMA devices only, or UCX_TLS without tcp: UCX would warn about the keys).
std::optional<TcpKeepalive> tcpKeepalive(const std::string& netDevices,
                                         std::chrono::milliseconds limit);

// The connecting end: Chorus's settings into UCX's configuration (the user's are there).
void configure(ucp_config_t* config, const TcpKeepalive& keepalive);

// The accepting end's times: each setting Chorus's or the user's, read as UCX reads it (a
// time in s, ms, us, ns or m, truncated to whole seconds; "auto": the kernel's, 0 here);
// empty where UCX turns keepalive off ("inf") or a user's value cannot be read.
std::optional<net::KeepaliveTimes> acceptedTimes(const TcpKeepalive& keepalive);

// Keepalive with `times` on this process's TCP connections that UCX accepted: those whose
// local port is one of `ucxPorts` (the ports UCX's tcp transport listens on; Worker finds
// them), whose other end is one of `peerHosts` (the peers' host addresses), and that do not
// have keepalive on already. The store's connections (another port, or no listener of ours
// at all) and those UCX connected itself (keepalive on) are left alone. Returns how many
// sockets it set.
int keepAccepted(const std::set<uint16_t>& ucxPorts, const std::vector<std::string>& peerHosts,
                 const net::KeepaliveTimes& times);

}  // namespace chorus::ucx
