// A forked child gives up Chorus's sockets (net/fork_guard.hpp): when the parent then closes
// one, its peer sees the end of the stream although the child still lives. A socket handed
// out of net::Socket (release()) is the caller's and stays in the child.
#include "net/fork_guard.hpp"
#include "net/socket.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace chorus::net {
namespace {

bool isSocket(int fd) {
  int type = 0;
  socklen_t len = sizeof(type);
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0;
}

// What the peer end `fd` sees within `ms`: 1 end of stream, 0 nothing, -1 an error.
int endOfStreamWithin(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return 0;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) == 0 ? 1 : -1;
}

TEST(ForkGuard, AForkedChildReleasesChorusSocketsButNotOthers) {
  int guarded[2], handedOut[2], report[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, guarded), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, handedOut), 0);
  ASSERT_EQ(::pipe2(report, O_CLOEXEC), 0);
  auto mine = std::make_unique<Socket>(guarded[0]);
  const int theirs = Socket(handedOut[0]).release();  // registered, then handed out

  const pid_t child = ::fork();
  if (child == 0) {  // async-signal-safe calls only
    // bit 0: the guarded socket is no longer one here, but its number is still taken;
    // bit 1: the handed-out socket is still a socket; bit 2: the count says so.
    char bits = 0;
    if (!isSocket(guarded[0]) && ::fcntl(guarded[0], F_GETFD) != -1) bits |= 1;
    if (isSocket(theirs)) bits |= 2;
    if (releasedAtFork() >= 1) bits |= 4;
    (void)!::write(report[1], &bits, 1);
    ::pause();  // holds every descriptor it kept until killed
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  ::close(report[1]);
  char bits = 0;
  pollfd p{report[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10'000), 1) << "the child did not report";
  ASSERT_EQ(::read(report[0], &bits, 1), 1);
  EXPECT_EQ(bits & 1, 1) << "the child still holds the guarded socket";
  EXPECT_EQ(bits & 2, 2) << "the child lost a socket that was not Chorus's any more";
  EXPECT_EQ(bits & 4, 4) << "releasedAtFork() does not count it";
  EXPECT_EQ(releasedAtFork(), 0u) << "the parent released nothing";
  EXPECT_TRUE(isSocket(guarded[0])) << "the parent's own socket changed";

  // The parent closes both; the child still lives.
  mine.reset();
  ::close(theirs);
  EXPECT_EQ(endOfStreamWithin(guarded[1], 5'000), 1) << "the guarded peer saw no end of stream";
  EXPECT_EQ(endOfStreamWithin(handedOut[1], 200), 0) << "the child's copy should hold it open";

  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(endOfStreamWithin(handedOut[1], 5'000), 1);
  ::close(guarded[1]);
  ::close(handedOut[1]);
  ::close(report[0]);
}

}  // namespace
}  // namespace chorus::net
