// TcpChannel takes sockets that carry chunks of 4 segments or more out of Linux's
// delayed-ACK "pingpong" mode, which a socket enters when it sends soon after receiving
// (every exchange of a collective) and in which the kernel holds the ACK of a last part-
// segment for 40 ms or more. Held ACKs stalled a few calls in a hundred by 20-180 ms in
// the netns bed (docs/sim.md, sim10 and sim11). Smaller chunks are left alone.
#include "clock.hpp"
#include "net/socket.hpp"
#include "transports/tcp/tcp_channel.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

namespace chorus {
namespace {

using namespace std::chrono_literals;

// The bed's segment size (veth, MTU 1500), so that a bulk chunk is small enough to test.
constexpr int kMss = 1400;

// What getsockopt(TCP_QUICKACK) reports: 0 while the socket is in pingpong mode.
int quickAck(int fd) {
  int value = -1;
  socklen_t length = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &value, &length), 0);
  return value;
}

int mss(int fd) {
  int value = -1;
  socklen_t length = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &value, &length), 0);
  return value;
}

// Moves `message` from `from` to `to`, polling both, and returns what arrived.
std::vector<char> transfer(tcp::TcpChannel& from, tcp::TcpChannel& to,
                           const std::vector<char>& message) {
  std::vector<char> got;
  size_t sent = 0;
  const auto deadline = deadlineIn(10s);
  while (got.size() < message.size() && Clock::now() < deadline) {
    if (sent < message.size()) sent += from.trySend(message.data() + sent, message.size() - sent);
    auto piece = to.peek();
    const char* bytes = reinterpret_cast<const char*>(piece.data());
    got.insert(got.end(), bytes, bytes + piece.size());
    to.consume(piece.size());
    std::vector<pollfd> fds;
    from.appendPollFds(fds);
    to.appendPollFds(fds);
    ::poll(fds.data(), fds.size(), 10);
    from.onPolled(fds.data());
    to.onPolled(fds.data() + from.streams());
  }
  EXPECT_EQ(got.size(), message.size()) << "sent " << sent << " by the deadline";
  return got;
}

TEST(TcpQuickAck, BulkExchangesLeaveNoSocketInPingpongMode) {
  auto listener = net::Socket::listen(net::SocketAddress::parse("127.0.0.1", 0));
  // Clamps the segment size both ends agree on (the listener's goes into its SYN-ACK).
  ASSERT_EQ(::setsockopt(listener.fd(), IPPROTO_TCP, TCP_MAXSEG, &kMss, sizeof(kMss)), 0);
  auto client = net::Socket::connect(listener.localAddress(), deadlineIn(10s));
  auto server = listener.accept(deadlineIn(10s));
  for (auto* s : {&client, &server}) {
    s->setNoDelay();
    s->setNonBlocking(true);
    ASSERT_LE(mss(s->fd()), kMss);
  }
  // Duplicates of the descriptors, to ask the kernel about the sockets the channels own.
  const int clientFd = ::dup(client.fd()), serverFd = ::dup(server.fd());
  ASSERT_GE(clientFd, 0);
  ASSERT_GE(serverFd, 0);
  tcp::TcpConfig config;
  config.streams = 1;
  std::vector<net::Socket> one;
  one.push_back(std::move(client));
  tcp::TcpChannel a(0, 1, std::move(one), {"a"}, config);
  one.clear();
  one.push_back(std::move(server));
  tcp::TcpChannel b(1, 0, std::move(one), {"b"}, config);

  // Three round trips of 64 KiB (one chunk of 46 segments each way), each answered as
  // soon as it arrived: without the re-arm both sockets are in pingpong mode from the
  // second on (each sent right after its receive). Each socket is asked right after it
  // received, as its reader re-armed it: a sender's tail may leave the socket later than
  // its write returned (a full window, then the peer's ACK), and that send, so soon after
  // a receive, enters the mode again until the next chunk it reads (seen once under load).
  for (int round = 0; round < 3; ++round) {
    std::vector<char> ping(64 << 10), pong(64 << 10);
    for (size_t i = 0; i < ping.size(); ++i) {
      ping[i] = static_cast<char>(i * 7 + round);
      pong[i] = static_cast<char>(i * 13 + round);
    }
    ASSERT_EQ(transfer(a, b, ping), ping);
    EXPECT_EQ(quickAck(serverFd), 1) << "round " << round << ": b's socket in pingpong mode";
    ASSERT_EQ(transfer(b, a, pong), pong);
    EXPECT_EQ(quickAck(clientFd), 1) << "round " << round << ": a's socket in pingpong mode";
  }
  ::close(clientFd);
  ::close(serverFd);
}

}  // namespace
}  // namespace chorus
