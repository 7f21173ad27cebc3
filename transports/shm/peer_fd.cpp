#include "transports/shm/peer_fd.hpp"

#include "errors.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chorus::shm {

int openPeerFd(int peer, pid_t pid, int fd, int flags, const std::string& what) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  int mine = ::open(path.c_str(), flags | O_CLOEXEC);
  if (mine >= 0) return mine;
  const int openErrno = errno;
  if (openErrno == ENOENT && ::kill(pid, 0) != 0)
    throw PeerError(peer, "rank " + std::to_string(peer) + " (pid " + std::to_string(pid) +
                              ") is gone: opening its " + what + " failed (" +
                              std::strerror(openErrno) + ")");
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    mine = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
    ::close(pidfd);
    if (mine >= 0) return mine;
  }
  throw Error(Result::SystemError, "shm: cannot open rank " + std::to_string(peer) + "'s " + what +
                                       ": open(" + path + ") failed (" + std::strerror(openErrno) +
                                       ") and pidfd_getfd failed (" + std::strerror(errno) +
                                       "); ranks must run as one user with access to each "
                                       "other's /proc entries (or CAP_SYS_PTRACE)");
}

}  // namespace chorus::shm
