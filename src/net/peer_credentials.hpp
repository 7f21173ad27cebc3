// Who is at the other end of an accepted TCP connection, when it is on this host.
//
// SO_PEERCRED answers this for Unix sockets only (on a TCP socket it returns the overflow
// uid). For TCP the kernel's sock_diag interface (what `ss -e` reads) looks the peer's
// socket up by its four-tuple in this network namespace and reports the uid that owns it.
#pragma once

#include <sys/types.h>

#include <string>

namespace chorus::net {

struct PeerCredentials {
  enum class Where {
    Local,    // the peer's socket is in this network namespace: `uid` owns it
    Remote,   // another host (or namespace): nothing to check here
    Unknown,  // a local address whose socket could not be found or asked about
  };
  Where where = Where::Unknown;
  uid_t uid = 0;
  std::string detail;  // why Unknown
};

PeerCredentials peerCredentials(int fd);

}  // namespace chorus::net
