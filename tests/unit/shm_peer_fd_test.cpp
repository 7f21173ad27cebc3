// Both ways the shm transport opens a peer's memfd (transports/shm/peer_fd.hpp):
// /proc/<pid>/fd and pidfd_getfd, each run on its own against a real second process, so
// neither is a path that only runs when the other fails.
#include "transports/shm/peer_fd.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace chorus::shm {
namespace {

constexpr size_t kBytes = 1 << 16;

// A child process holding a memfd filled with (i * 7 + 3) & 0xff; it writes the fd number
// to `report` and stays until `release` is closed.
struct PeerProcess {
  pid_t pid = -1;
  int fd = -1;
  int release = -1;

  PeerProcess() {
    int report[2], hold[2];
    if (pipe(report) != 0 || pipe(hold) != 0) return;
    pid = fork();
    if (pid == 0) {
      close(report[0]);
      close(hold[1]);
      int memfd = memfd_create("peer-fd-test", 0);
      if (memfd < 0 || ftruncate(memfd, kBytes) != 0) _exit(1);
      auto* p = static_cast<uint8_t*>(
          mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0));
      if (p == MAP_FAILED) _exit(1);
      for (size_t i = 0; i < kBytes; ++i) p[i] = static_cast<uint8_t>(i * 7 + 3);
      if (write(report[1], &memfd, sizeof memfd) != sizeof memfd) _exit(1);
      char c;
      while (read(hold[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(report[1]);
    close(hold[0]);
    release = hold[1];
    if (read(report[0], &fd, sizeof fd) != sizeof fd) fd = -1;
    close(report[0]);
  }
  void finish() {
    if (release >= 0) close(release), release = -1;
    if (pid > 0) waitpid(pid, nullptr, 0), pid = -1;
  }
  ~PeerProcess() { finish(); }
};

// Maps what `mine` opened and checks every byte the peer wrote.
void expectPeerContent(int mine) {
  ASSERT_GE(mine, 0) << std::strerror(errno);
  void* p = mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, mine, 0);
  ASSERT_NE(p, MAP_FAILED) << std::strerror(errno);
  const auto* bytes = static_cast<const uint8_t*>(p);
  size_t wrong = 0;
  for (size_t i = 0; i < kBytes; ++i) wrong += bytes[i] != static_cast<uint8_t>(i * 7 + 3);
  EXPECT_EQ(wrong, 0u);
  munmap(p, kBytes);
  close(mine);
}

TEST(ShmPeerFd, OpensThePeersMemfdThroughProc) {
  PeerProcess peer;
  ASSERT_GE(peer.fd, 0);
  expectPeerContent(openPeerFdViaProc(peer.pid, peer.fd, O_RDONLY));
  EXPECT_LT(openPeerFdViaProc(peer.pid, peer.fd + 1000, O_RDONLY), 0);  // no such descriptor
}

TEST(ShmPeerFd, OpensThePeersMemfdThroughPidfdGetfd) {
  PeerProcess peer;
  ASSERT_GE(peer.fd, 0);
  const int mine = openPeerFdViaPidfd(peer.pid, peer.fd);
  if (mine < 0 && (errno == ENOSYS || errno == EPERM))
    GTEST_SKIP() << "pidfd_getfd unavailable here: " << std::strerror(errno);
  expectPeerContent(mine);
  EXPECT_LT(openPeerFdViaPidfd(peer.pid, peer.fd + 1000), 0);
}

TEST(ShmPeerFd, NeitherWayOpensAGoneProcess) {
  PeerProcess peer;
  ASSERT_GE(peer.fd, 0);
  const pid_t pid = peer.pid;
  const int fd = peer.fd;
  peer.finish();
  EXPECT_LT(openPeerFdViaProc(pid, fd, O_RDONLY), 0);
  EXPECT_LT(openPeerFdViaPidfd(pid, fd), 0);
}

}  // namespace
}  // namespace chorus::shm
