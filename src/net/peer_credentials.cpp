#include "net/peer_credentials.hpp"

#include "net/socket.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chorus::net {
namespace {

SocketAddress endpoint(int fd, bool peer) {
  SocketAddress a;
  a.length = sizeof(a.storage);
  auto* sa = reinterpret_cast<sockaddr*>(&a.storage);
  int rc = peer ? ::getpeername(fd, sa, &a.length) : ::getsockname(fd, sa, &a.length);
  if (rc != 0) a.length = 0;
  return a;
}

// The address bytes as inet_diag wants them (network order, IPv4 in the first word).
void copyAddress(const SocketAddress& a, __be32 out[4]) {
  if (a.family() == AF_INET)
    std::memcpy(out, &reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr, 4);
  else
    std::memcpy(out, &reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr, 16);
}

bool sameAddress(const SocketAddress& a, const sockaddr* b) {
  if (b == nullptr || a.family() != b->sa_family) return false;
  if (a.family() == AF_INET)
    return std::memcmp(&reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr,
                       &reinterpret_cast<const sockaddr_in*>(b)->sin_addr, 4) == 0;
  return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr,
                     &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, 16) == 0;
}

// Loopback, or an address of one of this namespace's interfaces.
bool isLocalAddress(const SocketAddress& a) {
  if (a.family() == AF_INET) {
    uint32_t v = ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr);
    if ((v >> 24) == 127) return true;
  } else if (a.family() == AF_INET6) {
    const in6_addr& v = reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&v)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v) && v.s6_addr[12] == 127) return true;
  }
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return true;  // cannot tell: treat as local (checked)
  bool local = false;
  for (ifaddrs* i = list; i && !local; i = i->ifa_next) local = sameAddress(a, i->ifa_addr);
  ::freeifaddrs(list);
  return local;
}

// Asks sock_diag for the socket whose source is `peer` and destination `local`: the
// other end of our connection. Returns 0 with `uid` set, or an errno (ENOENT: none here).
int lookupOwner(const SocketAddress& local, const SocketAddress& peer, uid_t& uid) {
  int nl = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return errno;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.header.nlmsg_seq = 1;
  auto& r = message.request;
  r.sdiag_family = uint8_t(peer.family());
  r.sdiag_protocol = IPPROTO_TCP;
  r.idiag_states = ~0u;
  r.id.idiag_sport = htons(peer.port());
  r.id.idiag_dport = htons(local.port());
  copyAddress(peer, r.id.idiag_src);
  copyAddress(local, r.id.idiag_dst);
  r.id.idiag_cookie[0] = r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  int result = EIO;
  if (::sendto(nl, &message, sizeof(message), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) == ssize_t(sizeof(message))) {
    alignas(nlmsghdr) char buf[8192];
    ssize_t n;
    do n = ::recv(nl, buf, sizeof(buf), 0);
    while (n < 0 && errno == EINTR);
    auto* h = reinterpret_cast<nlmsghdr*>(buf);
    if (n < 0) {
      result = errno;
    } else if (NLMSG_OK(h, size_t(n)) && h->nlmsg_type == NLMSG_ERROR) {
      int err = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(h))->error;
      result = err != 0 ? err : EIO;
    } else if (NLMSG_OK(h, size_t(n)) && h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
               h->nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg))) {
      uid = reinterpret_cast<inet_diag_msg*>(NLMSG_DATA(h))->idiag_uid;
      result = 0;
    }
  } else {
    result = errno ? errno : EIO;
  }
  ::close(nl);
  return result;
}

}  // namespace

PeerCredentials peerCredentials(int fd) {
  PeerCredentials c;
  SocketAddress local = endpoint(fd, false), peer = endpoint(fd, true);
  if (local.length == 0 || peer.length == 0) {
    c.detail = std::string("getsockname/getpeername: ") + std::strerror(errno);
    return c;
  }
  if (peer.family() != AF_INET && peer.family() != AF_INET6) {
    c.detail = "not a TCP/IP connection";
    return c;
  }
  int err = lookupOwner(local, peer, c.uid);
  if (err == 0) {
    c.where = PeerCredentials::Where::Local;
  } else if (err == ENOENT && !isLocalAddress(peer)) {
    c.where = PeerCredentials::Where::Remote;
  } else {
    c.detail = std::string("sock_diag lookup of ") + peer.toString() + ": " + std::strerror(err);
  }
  return c;
}

}  // namespace chorus::net
