#include "transports/shm/peer_fd.hpp"

#include "errors.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chorus::shm {

int openPeerFdViaProc(pid_t pid, int fd, int flags) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  return ::open(path.c_str(), flags | O_CLOEXEC);
}

int openPeerFdViaPidfd(pid_t pid, int fd) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return -1;
  const int mine = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  const int getErrno = errno;
  ::close(pidfd);
  errno = getErrno;
  return mine;
}

int openPeerFd(int peer, pid_t pid, int fd, int flags, const std::string& what) {
  int mine = openPeerFdViaProc(pid, fd, flags);
  if (mine >= 0) return mine;
  const int openErrno = errno;
  if (openErrno == ENOENT && ::kill(pid, 0) != 0)
    throw PeerError(peer, "rank " + std::to_string(peer) + " (pid " + std::to_string(pid) +
                              ") is gone: opening its " + what + " failed (" +
                              std::strerror(openErrno) + ")");
  mine = openPeerFdViaPidfd(pid, fd);
  if (mine >= 0) return mine;
  // An exiting process (a zombie until reaped: kill(pid, 0) still succeeds) has no fds
  // left in /proc and pidfd_getfd says ESRCH: it is gone, not out of reach.
  if (openErrno == ENOENT && errno == ESRCH)
    throw PeerError(peer, "rank " + std::to_string(peer) + " (pid " + std::to_string(pid) +
                              ") is gone: opening its " + what + " failed (it is exiting)");
  throw Error(Result::SystemError,
              "shm: cannot open rank " + std::to_string(peer) + "'s " + what + ": open(/proc/" +
                  std::to_string(pid) + "/fd/" + std::to_string(fd) + ") failed (" +
                  std::strerror(openErrno) + ") and pidfd_getfd failed (" + std::strerror(errno) +
                  "); ranks must run as one user with access to each other's /proc entries "
                  "(or CAP_SYS_PTRACE)");
}

}  // namespace chorus::shm
