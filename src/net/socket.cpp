#include "net/socket.hpp"

#include "errors.hpp"
#include "net/fork_guard.hpp"
#include "net/host_probe.hpp"
#include "settings/settings.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>
#include <utility>

namespace chorus::net {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

// Milliseconds to hand to poll(): rounded up so that we never spin at 0 before the
// deadline, and capped so that Deadline::max() does not overflow.
int pollTimeoutMs(Deadline deadline) {
  if (deadline == Deadline::max()) return 60'000;
  auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, 60'000));
}

// Waits for `events` on fd; false when the deadline passes first.
bool waitFor(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int timeout = pollTimeoutMs(deadline);
    int n = ::poll(&p, 1, timeout);
    if (n > 0) return true;  // ready, or an error/hangup the caller's syscall will report
    if (n < 0 && errno != EINTR) throwSystemError("poll on socket");
    if (n == 0 && timeout == 0) return false;
    if (Clock::now() >= deadline) return false;
  }
}

std::string peerName(int fd) {
  SocketAddress a;
  a.length = sizeof(a.storage);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.length) != 0)
    return "fd " + std::to_string(fd);
  return a.toString();
}

bool isIpv6LinkLocal(const sockaddr* sa) {
  if (sa->sa_family != AF_INET6) return false;
  auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
  return IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr);
}

// One parsed NCCL_SOCKET_IFNAME spec: "^" excludes, "=" asks for exact names.
struct IfSpec {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  explicit IfSpec(std::string s) {
    if (!s.empty() && s[0] == '^') exclude = true, s.erase(0, 1);
    if (!s.empty() && s[0] == '=') exact = true, s.erase(0, 1);
    for (std::string item : settings::splitList(s)) {
      if (auto colon = item.find(':'); colon != std::string::npos)
        item.resize(colon);  // "eth0:port"
      if (!item.empty()) names.push_back(item);
    }
  }
  bool matches(const std::string& name) const {
    bool hit = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
      return exact ? name == n : name.rfind(n, 0) == 0;
    });
    return exclude ? !hit : hit;
  }
};

std::vector<Interface> listInterfaces(const std::function<bool(const std::string&, bool)>& keep) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throwSystemError("getifaddrs");
  std::vector<Interface> out;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || !(it->ifa_flags & IFF_UP)) continue;
    int family = it->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (isIpv6LinkLocal(it->ifa_addr)) continue;  // needs a scope id; useless to peers
    if (!keep(it->ifa_name, (it->ifa_flags & IFF_LOOPBACK) != 0)) continue;
    Interface i;
    i.name = it->ifa_name;
    i.address.length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&i.address.storage, it->ifa_addr, i.address.length);
    i.address.setPort(0);
    out.push_back(std::move(i));
  }
  ::freeifaddrs(list);
  std::stable_partition(out.begin(), out.end(),
                        [](const Interface& i) { return i.address.family() == AF_INET; });
  return out;
}

}  // namespace

// --- SocketAddress -------------------------------------------------------------------

SocketAddress SocketAddress::parse(const std::string& host, uint16_t port) {
  std::string name = host;
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']')
    name = name.substr(1, name.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (name.empty() ? AI_PASSIVE : 0);
  addrinfo* result = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(name.empty() ? nullptr : name.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) {
    throw Error(Result::InvalidArgument,
                "cannot resolve address '" + host + "': " + ::gai_strerror(rc));
  }
  // Prefer IPv4 when a name has both: peers are more likely to reach it.
  addrinfo* pick = result;
  for (addrinfo* it = result; it != nullptr; it = it->ai_next) {
    if (it->ai_family == AF_INET) {
      pick = it;
      break;
    }
  }
  SocketAddress a;
  std::memcpy(&a.storage, pick->ai_addr, pick->ai_addrlen);
  a.length = pick->ai_addrlen;
  ::freeaddrinfo(result);
  return a;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SocketAddress::toString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, buf,
                sizeof(buf));
    std::string s = buf;
    s += ':';
    return s + std::to_string(port());
  }
  if (family() == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
    std::string s = "[";
    s += buf;
    char ifname[IF_NAMESIZE] = {};
    if (in6->sin6_scope_id != 0 && ::if_indextoname(in6->sin6_scope_id, ifname) != nullptr) {
      s += '%';
      s += ifname;
    }
    s += "]:";
    return s + std::to_string(port());
  }
  return "<no address>";
}

// --- interfaces ----------------------------------------------------------------------

std::vector<Interface> findInterfaces(const std::string& spec) {
  if (!spec.empty()) {
    IfSpec parsed(spec);
    return listInterfaces([&](const std::string& name, bool) { return parsed.matches(name); });
  }
  // Default, as NCCL: real interfaces, then docker bridges, then loopback.
  auto found = listInterfaces([](const std::string& name, bool loopback) {
    return !loopback && name.rfind("docker", 0) != 0;
  });
  if (found.empty()) {
    found = listInterfaces([](const std::string& name, bool loopback) {
      return !loopback && name.rfind("docker", 0) == 0;
    });
  }
  if (found.empty())
    found = listInterfaces([](const std::string&, bool loopback) { return loopback; });
  return found;
}

std::vector<std::string> findInterfaceNames(const std::string& spec) {
  std::vector<std::string> names;
  for (const Interface& i : findInterfaces(spec))
    if (std::find(names.begin(), names.end(), i.name) == names.end()) names.push_back(i.name);
  return names;
}

// --- Socket --------------------------------------------------------------------------

Socket::Socket(int fd) : fd_(fd) {
  if (fd_ >= 0) releaseInForkedChildren(fd_);
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) {
      keepInForkedChildren(fd_);
      ::close(fd_);
    }
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) {
    keepInForkedChildren(fd_);
    ::close(fd_);
  }
}

int Socket::release() {
  int fd = fd_;
  if (fd >= 0) keepInForkedChildren(fd);
  fd_ = -1;
  return fd;
}

Socket Socket::listen(const SocketAddress& address, int backlog) {
  Socket s(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) throwSystemError("socket() for listening on " + address.toString());
  int one = 1;
  ::setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.fd_, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0)
    throwSystemError("bind to " + address.toString());
  if (::listen(s.fd_, backlog) != 0) throwSystemError("listen on " + address.toString());
  return s;
}

Socket Socket::connect(const SocketAddress& address, Deadline deadline) {
  auto backoff = std::chrono::milliseconds(5);
  int lastError = 0;
  for (;;) {
    Socket s(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s) throwSystemError("socket() for connecting to " + address.toString());
    int err = 0;
    if (::connect(s.fd_, reinterpret_cast<const sockaddr*>(&address.storage), address.length) !=
        0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        if (!waitFor(s.fd_, POLLOUT, deadline)) {
          throw Error(Result::Timeout,
                      "connect to " + address.toString() + ": timed out" +
                          (lastError ? " (last error: " + errnoText(lastError) + ")" : ""));
        }
        socklen_t len = sizeof(err);
        if (::getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      s.setNonBlocking(false);
      return s;
    }
    // The listener may not be up yet (refused) or the network is settling: retry.
    bool transient = err == ECONNREFUSED || err == ECONNRESET || err == ETIMEDOUT ||
                     err == ECONNABORTED || err == EHOSTUNREACH || err == ENETUNREACH ||
                     err == EAGAIN;
    if (!transient) {
      throw Error(Result::SystemError, "connect to " + address.toString() + ": " + errnoText(err));
    }
    lastError = err;
    auto now = Clock::now();
    if (now >= deadline) {
      throw Error(Result::Timeout,
                  "connect to " + address.toString() + ": timed out (" + errnoText(err) + ")");
    }
    auto sleep = std::min<Clock::duration>(backoff, deadline - now);
    std::this_thread::sleep_for(sleep);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

Socket Socket::accept(Deadline deadline) {
  for (;;) {
    if (!waitFor(fd_, POLLIN, deadline))
      throw Error(Result::Timeout, "accept on " + localAddress().toString() + ": timed out");
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      Socket s(fd);
      s.setNonBlocking(false);
      return s;
    }
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED || err == EPROTO)
      continue;
    throwSystemError("accept on " + localAddress().toString());
  }
}

SocketAddress Socket::localAddress() const {
  SocketAddress a;
  a.length = sizeof(a.storage);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a.storage), &a.length) != 0)
    throwSystemError("getsockname");
  return a;
}

void Socket::setNoDelay() {
  int one = 1;
  if (::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
    throwSystemError("setsockopt(TCP_NODELAY)");
}

KeepaliveTimes keepaliveTimes(std::chrono::milliseconds limit) {
  const int seconds = int(std::clamp<int64_t>(limit.count() / 1000, 1, INT32_MAX));
  const int idle = std::max(1, seconds / 2), interval = std::max(1, seconds / 8);
  return {idle, interval, std::max(1, (seconds - idle) / interval)};
}

bool keepaliveOn(int fd, const KeepaliveTimes& times) {
  const int one = 1;
  const std::pair<int, int> options[] = {{TCP_KEEPIDLE, times.idleSeconds},
                                         {TCP_KEEPINTVL, times.intervalSeconds},
                                         {TCP_KEEPCNT, times.probes}};
  for (const auto& [name, value] : options)
    if (value > 0 && ::setsockopt(fd, IPPROTO_TCP, name, &value, sizeof(value)) != 0) return false;
  return ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) == 0;
}

void Socket::setUnansweredLimit(std::chrono::milliseconds limit) {
  if (limit.count() <= 0) return;
  // TCP_USER_TIMEOUT ends the connection at the limit, probes or unacked data alike.
  const unsigned userTimeout = unsigned(std::min<int64_t>(limit.count(), INT32_MAX));
  if (!keepaliveOn(fd_, keepaliveTimes(limit)) ||
      ::setsockopt(fd_, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof(userTimeout)) != 0)
    throwSystemError("setsockopt(keepalive)");
}

std::optional<Socket::Unanswered> Socket::unanswered() const { return unansweredOn(fd_); }

void Socket::probeEachSecond(bool on, std::chrono::milliseconds limit) {
  if (!on) {
    if (limit.count() > 0) return setUnansweredLimit(limit);
    const int zero = 0;
    ::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &zero, sizeof(zero));
    return;
  }
  if (!probeEachSecondOn(fd_)) throwSystemError("setsockopt(keepalive probes)");
}

void Socket::setNonBlocking(bool on) {
  int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0) throwSystemError("fcntl(F_GETFL)");
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd_, F_SETFL, flags) != 0) throwSystemError("fcntl(F_SETFL)");
}

// MSG_DONTWAIT makes each call non-blocking even on a blocking socket, so poll() alone
// decides how long we wait and the deadline always holds.
void Socket::sendAll(const void* data, size_t bytes, Deadline deadline) {
  auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd_, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!waitFor(fd_, POLLOUT, deadline))
        throw Error(Result::Timeout, "send to " + peerName(fd_) + ": timed out with " +
                                         std::to_string(bytes) + " bytes left");
      continue;
    }
    if (err == EPIPE || err == ECONNRESET)
      throw Error(Result::RemoteError, "connection reset by peer " + peerName(fd_) + " (send)");
    throw Error(Result::SystemError, "send to " + peerName(fd_) + ": " + errnoText(err));
  }
}

void Socket::recvAll(void* data, size_t bytes, Deadline deadline) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd_, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      throw Error(Result::RemoteError, "connection closed by peer " + peerName(fd_) + " with " +
                                           std::to_string(bytes) + " bytes still expected");
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!waitFor(fd_, POLLIN, deadline))
        throw Error(Result::Timeout, "receive from " + peerName(fd_) + ": timed out with " +
                                         std::to_string(bytes) + " bytes still expected");
      continue;
    }
    if (err == ECONNRESET)
      throw Error(Result::RemoteError, "connection reset by peer " + peerName(fd_) + " (receive)");
    throw Error(Result::SystemError, "receive from " + peerName(fd_) + ": " + errnoText(err));
  }
}

}  // namespace chorus::net
