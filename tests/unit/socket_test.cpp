#include "net/socket.hpp"
#include "../common/expect_error.hpp"
#include "errors.hpp"
#include "time_bounds.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

using namespace chorus;
using namespace chorus::net;
using namespace std::chrono_literals;

namespace {

SocketAddress loopback(uint16_t port = 0) { return SocketAddress::parse("127.0.0.1", port); }

// A connected pair over loopback.
std::pair<Socket, Socket> connectedPair() {
  Socket listener = Socket::listen(loopback());
  Socket client = Socket::connect(listener.localAddress(), deadlineIn(5s));
  Socket server = listener.accept(deadlineIn(5s));
  return {std::move(client), std::move(server)};
}

using chorus::test::expectError;

// An int socket option's value (-1 where getsockopt fails, which fails the test).
int option(const Socket& s, int level, int name) {
  int v = -1;
  socklen_t len = sizeof(v);
  EXPECT_EQ(::getsockopt(s.fd(), level, name, &v, &len), 0);
  return v;
}

}  // namespace

TEST(SocketAddress, ParsesIpv4AndPrintsIt) {
  SocketAddress a = SocketAddress::parse("127.0.0.1", 1234);
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(a.port(), 1234);
  EXPECT_EQ(a.toString(), "127.0.0.1:1234");
  a.setPort(99);
  EXPECT_EQ(a.toString(), "127.0.0.1:99");
}

TEST(SocketAddress, ParsesIpv6WithAndWithoutBrackets) {
  SocketAddress a = SocketAddress::parse("::1", 5);
  EXPECT_EQ(a.family(), AF_INET6);
  EXPECT_EQ(a.toString(), "[::1]:5");
  EXPECT_EQ(SocketAddress::parse("[::1]", 7).toString(), "[::1]:7");
}

TEST(SocketAddress, ResolvesNamesAndRejectsNonsense) {
  SocketAddress a = SocketAddress::parse("localhost", 80);
  EXPECT_EQ(a.port(), 80);
  Error e = expectError([] { SocketAddress::parse("no such host!.invalid", 1); });
  EXPECT_EQ(e.code(), Result::InvalidArgument);
  EXPECT_NE(std::string(e.what()).find("no such host!.invalid"), std::string::npos);
}

TEST(Interfaces, ExactLoopback) {
  auto list = findInterfaces("=lo");
  ASSERT_FALSE(list.empty());
  for (auto& i : list) EXPECT_EQ(i.name, "lo");
  EXPECT_EQ(list.front().address.toString(), "127.0.0.1:0");  // IPv4 before IPv6
  EXPECT_TRUE(findInterfaces("=l").empty());                  // exact: no prefix match
}

TEST(Interfaces, PrefixAndExclusion) {
  auto prefix = findInterfaces("l");
  EXPECT_TRUE(std::any_of(prefix.begin(), prefix.end(), [](auto& i) { return i.name == "lo"; }));
  for (auto& i : findInterfaces("^lo")) EXPECT_NE(i.name, "lo");
  for (auto& i : findInterfaces("^=lo")) EXPECT_NE(i.name, "lo");
  EXPECT_TRUE(findInterfaces("nosuchif0,nosuchif1").empty());
  auto both = findInterfaces("nosuchif,lo");
  EXPECT_FALSE(both.empty());
}

TEST(Interfaces, DefaultPrefersRealInterfacesAndOrdersIpv4First) {
  auto list = findInterfaces("");
  ASSERT_FALSE(list.empty());
  bool onlyLoopback = findInterfaces("^lo").empty();
  for (auto& i : list) {
    if (!onlyLoopback) {
      EXPECT_NE(i.name, "lo");
    }
    EXPECT_EQ(i.address.port(), 0);
  }
  auto firstV6 = std::find_if(list.begin(), list.end(),
                              [](auto& i) { return i.address.family() == AF_INET6; });
  EXPECT_TRUE(
      std::all_of(firstV6, list.end(), [](auto& i) { return i.address.family() == AF_INET6; }));
}

TEST(Socket, TransfersLargeBuffersBothWays) {
  auto [a, b] = connectedPair();
  a.setNoDelay();
  b.setNonBlocking(true);  // must work on either kind of socket
  std::vector<uint32_t> out(4 << 20), in(out.size());
  std::iota(out.begin(), out.end(), 7u);
  std::thread sender([&, &a = a] { a.sendAll(out.data(), out.size() * 4, deadlineIn(20s)); });
  b.recvAll(in.data(), in.size() * 4, deadlineIn(20s));
  sender.join();
  EXPECT_EQ(in, out);

  std::thread back([&, &b = b] { b.sendAll(out.data(), out.size() * 4, deadlineIn(20s)); });
  std::fill(in.begin(), in.end(), 0);
  a.recvAll(in.data(), in.size() * 4, deadlineIn(20s));
  back.join();
  EXPECT_EQ(in, out);
}

TEST(Socket, ReceiveReportsPeerClose) {
  auto [a, b] = connectedPair();
  a = Socket();
  char c;
  Error e = expectError([&, &b = b] { b.recvAll(&c, 1, deadlineIn(5s)); });
  EXPECT_EQ(e.code(), Result::RemoteError);
  EXPECT_NE(std::string(e.what()).find("connection closed by peer"), std::string::npos);
}

TEST(Socket, ReceiveTimesOut) {
  auto [a, b] = connectedPair();
  char c;
  auto start = Clock::now();
  Error e = expectError([&, &b = b] { b.recvAll(&c, 1, deadlineIn(150ms)); });
  EXPECT_EQ(e.code(), Result::Timeout);
  EXPECT_GE(Clock::now() - start, 140ms);
  EXPECT_LT(Clock::now() - start, chorus::test::within(3s));
}

TEST(Socket, SendToClosedPeerFailsWithoutSigpipe) {
  auto [a, b] = connectedPair();
  b = Socket();
  std::vector<char> big(1 << 20);
  Error e = expectError([&, &a = a] {
    for (int i = 0; i < 100; ++i) a.sendAll(big.data(), big.size(), deadlineIn(5s));
  });
  EXPECT_EQ(e.code(), Result::RemoteError);
}

TEST(Socket, AcceptTimesOut) {
  Socket listener = Socket::listen(loopback());
  Error e = expectError([&] { listener.accept(deadlineIn(100ms)); });
  EXPECT_EQ(e.code(), Result::Timeout);
}

TEST(Socket, ConnectRetriesUntilTheListenerAppears) {
  SocketAddress address;
  {
    Socket probe = Socket::listen(loopback());
    address = probe.localAddress();
  }  // closed: connecting is refused for now
  Socket listener;
  std::thread late([&] {
    std::this_thread::sleep_for(300ms);
    listener = Socket::listen(address);
  });
  Socket s = Socket::connect(address, deadlineIn(10s));
  late.join();
  EXPECT_TRUE(s);
  Socket peer = listener.accept(deadlineIn(5s));
  int v = 42, got = 0;
  s.sendAll(&v, sizeof(v), deadlineIn(5s));
  peer.recvAll(&got, sizeof(got), deadlineIn(5s));
  EXPECT_EQ(got, 42);
}

TEST(Socket, ConnectGivesUpAtTheDeadline) {
  SocketAddress address;
  {
    Socket probe = Socket::listen(loopback());
    address = probe.localAddress();
  }
  auto start = Clock::now();
  Error e = expectError([&] { Socket::connect(address, deadlineIn(300ms)); });
  EXPECT_EQ(e.code(), Result::Timeout);
  EXPECT_NE(std::string(e.what()).find(address.toString()), std::string::npos);
  EXPECT_LT(Clock::now() - start, chorus::test::within(3s));
}

TEST(Socket, BindConflictNamesTheAddress) {
  Socket first = Socket::listen(loopback());
  Error e = expectError([&] { Socket::listen(first.localAddress()); });
  EXPECT_EQ(e.code(), Result::SystemError);
  EXPECT_NE(std::string(e.what()).find(first.localAddress().toString()), std::string::npos);
}

// The limit becomes keepalive probes from half of it, every eighth, and a user timeout at
// the limit; 0 leaves the kernel's defaults (no keepalive).
TEST(Socket, UnansweredLimitSetsKeepaliveAndUserTimeout) {
  auto [a, b] = connectedPair();
  a.setUnansweredLimit(30s);
  EXPECT_NE(option(a, SOL_SOCKET, SO_KEEPALIVE), 0);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_KEEPIDLE), 15);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_KEEPINTVL), 3);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_KEEPCNT), 5);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_USER_TIMEOUT), 30000);
  b.setUnansweredLimit(4s);  // the test bed's: probes after 2 s, every 1 s, 2 of them
  EXPECT_EQ(option(b, IPPROTO_TCP, TCP_KEEPIDLE), 2);
  EXPECT_EQ(option(b, IPPROTO_TCP, TCP_KEEPINTVL), 1);
  EXPECT_EQ(option(b, IPPROTO_TCP, TCP_KEEPCNT), 2);
  EXPECT_EQ(option(b, IPPROTO_TCP, TCP_USER_TIMEOUT), 4000);
  auto [c, d] = connectedPair();
  c.setUnansweredLimit(0ms);
  EXPECT_EQ(option(c, SOL_SOCKET, SO_KEEPALIVE), 0);
  EXPECT_EQ(option(c, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
}

// A stall's diagnosis probes the awaited peers' hosts each second, then restores the
// configured keepalive (or none); a host that answers leaves nothing unanswered.
TEST(Socket, ProbingEachSecondThenBackToTheConfiguredKeepalive) {
  auto [a, b] = connectedPair();
  a.setUnansweredLimit(30s);
  a.probeEachSecond(true, 30s);
  EXPECT_NE(option(a, SOL_SOCKET, SO_KEEPALIVE), 0);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_KEEPIDLE), 1);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_KEEPINTVL), 1);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_KEEPCNT), 127);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_USER_TIMEOUT), 30000);  // still ends it at the limit
  a.probeEachSecond(false, 30s);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_KEEPIDLE), 15);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_KEEPINTVL), 3);
  EXPECT_EQ(option(a, IPPROTO_TCP, TCP_KEEPCNT), 5);
  b.probeEachSecond(true, 0ms);
  EXPECT_NE(option(b, SOL_SOCKET, SO_KEEPALIVE), 0);
  b.probeEachSecond(false, 0ms);
  EXPECT_EQ(option(b, SOL_SOCKET, SO_KEEPALIVE), 0);
  // Loopback answers at once: sent, acknowledged, nothing unanswered.
  const char byte = 7;
  a.sendAll(&byte, 1, Clock::now() + 5s);
  char got = 0;
  b.recvAll(&got, 1, Clock::now() + 5s);
  EXPECT_EQ(got, 7);
  EXPECT_FALSE(a.unanswered().has_value());
  EXPECT_FALSE(b.unanswered().has_value());
}
