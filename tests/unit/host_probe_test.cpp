// net::HostProbe finds this process's connections to a host by the address at their other
// end, whatever opened them (UCX keeps its sockets to itself), probes them each second while
// any peer on that host is probed and puts each back to its own keepalive settings after.
#include "net/host_probe.hpp"
#include "time_bounds.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <optional>
#include <ostream>
#include <set>
#include <vector>

using namespace chorus;
using namespace chorus::net;
using namespace std::chrono_literals;

namespace {

// A connected pair over loopback.
std::pair<Socket, Socket> connectedPair() {
  Socket listener = Socket::listen(SocketAddress::parse("127.0.0.1", 0));
  Socket client = Socket::connect(listener.localAddress(), deadlineIn(5s));
  Socket server = listener.accept(deadlineIn(5s));
  return {std::move(client), std::move(server)};
}

int option(const Socket& s, int level, int name) {
  int v = -1;
  socklen_t len = sizeof(v);
  EXPECT_EQ(::getsockopt(s.fd(), level, name, &v, &len), 0);
  return v;
}

struct Keepalive {
  int on, idle, interval, count;
  bool operator==(const Keepalive&) const = default;
  friend std::ostream& operator<<(std::ostream& os, const Keepalive& k) {
    return os << "{on " << k.on << ", idle " << k.idle << " s, every " << k.interval << " s, "
              << k.count << " probes}";
  }
};
Keepalive keepalive(const Socket& s) {
  return {option(s, SOL_SOCKET, SO_KEEPALIVE) != 0, option(s, IPPROTO_TCP, TCP_KEEPIDLE),
          option(s, IPPROTO_TCP, TCP_KEEPINTVL), option(s, IPPROTO_TCP, TCP_KEEPCNT)};
}
constexpr Keepalive kEachSecond{1, 1, 1, 127};

}  // namespace

TEST(HostProbe, ProbesTheConnectionsToAHostWhileAnyKeyAsksThenPutsBackTheirOwnSettings) {
  auto [a, b] = connectedPair();
  a.setUnansweredLimit(30s);  // keepalive after 15 s, every 3 s, 5 probes (as UCX sets its own)
  const Keepalive aOwn = keepalive(a), bOwn = keepalive(b);
  ASSERT_EQ(aOwn, (Keepalive{1, 15, 3, 5}));
  ASSERT_EQ(bOwn.on, 0);
  {
    HostProbe probe;
    probe.probe(7, {"192.0.2.1"}, true);  // another host (TEST-NET-1): nothing here
    EXPECT_EQ(keepalive(a), aOwn);
    EXPECT_EQ(keepalive(b), bOwn);
    probe.probe(1, {"192.0.2.1", "127.0.0.1"}, true);
    EXPECT_EQ(keepalive(a), kEachSecond);
    EXPECT_EQ(keepalive(b), kEachSecond);  // either end: the host at the other end counts
    probe.probe(2, {"127.0.0.1"}, true);   // a second peer on the same host
    probe.probe(1, {"192.0.2.1", "127.0.0.1"}, false);
    EXPECT_EQ(keepalive(a), kEachSecond);  // still probed for key 2
    probe.probe(2, {"127.0.0.1"}, false);
    EXPECT_EQ(keepalive(a), aOwn);
    EXPECT_EQ(keepalive(b).on, 0);
    probe.probe(3, {"127.0.0.1"}, true);
    EXPECT_EQ(keepalive(a), kEachSecond);
    // Loopback answers at once: sent, acknowledged, nothing unanswered.
    const char byte = 7;
    a.sendAll(&byte, 1, deadlineIn(5s));
    char got = 0;
    b.recvAll(&got, 1, deadlineIn(5s));
    EXPECT_EQ(got, 7);
    EXPECT_FALSE(probe.silence({"127.0.0.1"}).has_value());
    EXPECT_FALSE(probe.silence({"192.0.2.1"}).has_value());
  }  // destroyed while probing: back to their own settings
  EXPECT_EQ(keepalive(a), aOwn);
  EXPECT_EQ(keepalive(b).on, 0);
}

TEST(HostProbe, HostTextIsTheAddressWithoutPortAndIpv4MappedAsIpv4) {
  sockaddr_storage s{};
  auto& in6 = reinterpret_cast<sockaddr_in6&>(s);
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(4000);
  ASSERT_EQ(::inet_pton(AF_INET6, "::ffff:10.1.2.3", &in6.sin6_addr), 1);
  EXPECT_EQ(hostText(s), "10.1.2.3");
  ASSERT_EQ(::inet_pton(AF_INET6, "fd00::1", &in6.sin6_addr), 1);
  EXPECT_EQ(hostText(s), "fd00::1");
  EXPECT_EQ(hostText(SocketAddress::parse("10.0.0.2", 99).storage), "10.0.0.2");
  for (const std::string& host : hostAddresses()) {  // loopback is no other host's address
    EXPECT_NE(host.rfind("127.", 0), 0u) << host;
    EXPECT_NE(host, "::1");
  }
}

// The ucx transport's way to find the connections UCX accepted: a listener's port, then the
// connections whose local port is that one. The connecting end (another local port), the
// listener itself, a listener opened before and a host that is not asked for are left out.
TEST(HostProbe, AcceptedConnectionsAreThoseOnAListenersPortFromTheHostsAsked) {
  Socket other = Socket::listen(SocketAddress::parse("127.0.0.1", 0));
  const std::set<uint16_t> before = listeningPorts();
  EXPECT_TRUE(before.count(other.localAddress().port()));
  Socket listener = Socket::listen(SocketAddress::parse("127.0.0.1", 0));
  std::set<uint16_t> opened;
  for (const uint16_t port : listeningPorts())
    if (!before.count(port)) opened.insert(port);
  ASSERT_EQ(opened, std::set<uint16_t>{listener.localAddress().port()});
  Socket client = Socket::connect(listener.localAddress(), deadlineIn(5s));
  Socket server = listener.accept(deadlineIn(5s));
  Socket elsewhereClient = Socket::connect(other.localAddress(), deadlineIn(5s));
  Socket elsewhereServer = other.accept(deadlineIn(5s));
  EXPECT_EQ(acceptedConnections(opened, {"127.0.0.1"}), std::vector<int>{server.fd()});
  EXPECT_TRUE(acceptedConnections(opened, {"192.0.2.1", "::1"}).empty());
  EXPECT_TRUE(acceptedConnections({}, {"127.0.0.1"}).empty());
}

// keepaliveOn sets what it is given and leaves a 0 to the kernel.
TEST(HostProbe, KeepaliveOnSetsTheTimesGivenAndKeepsTheKernelsForZero) {
  auto [client, server] = connectedPair();
  const int kernelCount = option(server, IPPROTO_TCP, TCP_KEEPCNT);
  ASSERT_TRUE(keepaliveOn(server.fd(), KeepaliveTimes{7, 3, 0}));
  EXPECT_EQ(option(server, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(option(server, IPPROTO_TCP, TCP_KEEPIDLE), 7);
  EXPECT_EQ(option(server, IPPROTO_TCP, TCP_KEEPINTVL), 3);
  EXPECT_EQ(option(server, IPPROTO_TCP, TCP_KEEPCNT), kernelCount);
  EXPECT_EQ(option(client, SOL_SOCKET, SO_KEEPALIVE), 0);
}
