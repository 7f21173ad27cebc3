#include "net/host_probe.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

namespace chorus::net {
namespace {

bool among(const std::string& host, const std::vector<std::string>& addresses) {
  return std::find(addresses.begin(), addresses.end(), host) != addresses.end();
}

// Calls fn(fd, inode, local address) for each of this process's TCP sockets (IPv4 or IPv6,
// listening or not), found through /proc/self/fd.
template <typename Fn>
void forEachTcpSocket(Fn fn) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (dirent* entry = ::readdir(dir)) {
    const int fd = std::atoi(entry->d_name);
    struct stat st {};
    if (fd <= 2 || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (socketOption(fd, SOL_SOCKET, SO_TYPE) != SOCK_STREAM) continue;
    sockaddr_storage mine{};
    socklen_t length = sizeof(mine);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &length) != 0) continue;
    if (mine.ss_family != AF_INET && mine.ss_family != AF_INET6) continue;
    fn(fd, st.st_ino, mine);
  }
  ::closedir(dir);
}

int localPort(const sockaddr_storage& mine) {
  if (mine.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(mine).sin_port);
  if (mine.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6&>(mine).sin6_port);
  return -1;
}

}  // namespace

int socketOption(int fd, int level, int name) {
  int value = 0;
  socklen_t length = sizeof(value);
  return ::getsockopt(fd, level, name, &value, &length) == 0 ? value : 0;
}

std::string hostText(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text,
                sizeof(text));
  } else if (address.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6&>(address).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a))
      ::inet_ntop(AF_INET, &a.s6_addr[12], text, sizeof(text));
    else
      ::inet_ntop(AF_INET6, &a, text, sizeof(text));
  }
  return text;
}

std::vector<std::string> hostAddresses() {
  std::vector<std::string> hosts;
  for (const Interface& i : findInterfaces("")) {
    const std::string host = hostText(i.address.storage);
    if (host.empty() || host.rfind("127.", 0) == 0 || host == "::1" || among(host, hosts)) continue;
    hosts.push_back(host);
  }
  return hosts;
}

std::optional<Socket::Unanswered> unansweredOn(int fd) {
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return std::nullopt;
  const int resends = info.tcpi_unacked > 0 ? info.tcpi_retransmits : 0;
  const int count = std::max<int>(resends, info.tcpi_probes);
  if (count == 0) return std::nullopt;
  return Socket::Unanswered{std::chrono::milliseconds(info.tcpi_last_ack_recv), count};
}

bool probeEachSecondOn(int fd) {
  // The most probes the kernel takes (127): a host silent that long is gone anyway, and
  // where setUnansweredLimit set TCP_USER_TIMEOUT, that still ends the connection first.
  const int one = 1, most = 127;
  return ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) == 0 &&
         ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &one, sizeof(one)) == 0 &&
         ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &one, sizeof(one)) == 0 &&
         ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &most, sizeof(most)) == 0;
}

std::vector<HostProbe::Connection> HostProbe::connections() {
  std::vector<Connection> found;
  forEachTcpSocket([&](int fd, ino_t inode, const sockaddr_storage&) {
    sockaddr_storage other{};
    socklen_t length = sizeof(other);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&other), &length) != 0) return;
    found.push_back({fd, inode, hostText(other)});
  });
  return found;
}

std::set<uint16_t> listeningPorts() {
  std::set<uint16_t> ports;
  forEachTcpSocket([&](int fd, ino_t, const sockaddr_storage& mine) {
    if (socketOption(fd, SOL_SOCKET, SO_ACCEPTCONN) != 1) return;
    if (const int port = localPort(mine); port > 0) ports.insert(uint16_t(port));
  });
  return ports;
}

std::vector<int> acceptedConnections(const std::set<uint16_t>& ports,
                                     const std::vector<std::string>& addresses) {
  std::vector<int> found;
  forEachTcpSocket([&](int fd, ino_t, const sockaddr_storage& mine) {
    sockaddr_storage other{};
    socklen_t length = sizeof(other);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&other), &length) != 0) return;
    const int port = localPort(mine);
    if (port > 0 && ports.count(uint16_t(port)) != 0 && among(hostText(other), addresses))
      found.push_back(fd);
  });
  return found;
}

HostProbe::~HostProbe() {
  probed_.clear();
  apply();
}

void HostProbe::probe(int key, const std::vector<std::string>& addresses, bool on) {
  if (on)
    probed_[key] = addresses;
  else
    probed_.erase(key);
  apply();
}

// Probes the connections some key's host is at the other end of, and puts the others that
// were probed back to their own settings.
void HostProbe::apply() {
  const auto now = Clock::now();
  if (now - listedAt_ >= kListFor) {
    listed_ = connections();
    listedAt_ = now;
  }
  std::map<int, Saved> still;
  for (const Connection& c : listed_) {
    const bool wanted = std::any_of(probed_.begin(), probed_.end(),
                                    [&](const auto& p) { return among(c.host, p.second); });
    auto was = saved_.find(c.fd);
    const bool mine = was != saved_.end() && was->second.inode == c.inode;
    if (wanted) {
      Saved s = mine ? was->second : Saved{};
      if (!mine) {
        s.inode = c.inode;
        s.keepalive = socketOption(c.fd, SOL_SOCKET, SO_KEEPALIVE);
        s.idle = socketOption(c.fd, IPPROTO_TCP, TCP_KEEPIDLE);
        s.interval = socketOption(c.fd, IPPROTO_TCP, TCP_KEEPINTVL);
        s.count = socketOption(c.fd, IPPROTO_TCP, TCP_KEEPCNT);
      }
      if (mine || probeEachSecondOn(c.fd)) still[c.fd] = s;
    } else if (mine) {
      const Saved& s = was->second;
      if (s.idle > 0) ::setsockopt(c.fd, IPPROTO_TCP, TCP_KEEPIDLE, &s.idle, sizeof(s.idle));
      if (s.interval > 0)
        ::setsockopt(c.fd, IPPROTO_TCP, TCP_KEEPINTVL, &s.interval, sizeof(s.interval));
      if (s.count > 0) ::setsockopt(c.fd, IPPROTO_TCP, TCP_KEEPCNT, &s.count, sizeof(s.count));
      ::setsockopt(c.fd, SOL_SOCKET, SO_KEEPALIVE, &s.keepalive, sizeof(s.keepalive));
    }
  }
  saved_ = std::move(still);  // a probed descriptor gone or reused is forgotten
}

std::optional<Socket::Unanswered> HostProbe::silence(
    const std::vector<std::string>& addresses) const {
  std::optional<Socket::Unanswered> worst;
  for (const Connection& c : connections()) {
    if (!among(c.host, addresses)) continue;
    const auto quiet = unansweredOn(c.fd);
    if (quiet && (!worst || quiet->unanswered > worst->unanswered)) worst = quiet;
  }
  return worst;
}

}  // namespace chorus::net
