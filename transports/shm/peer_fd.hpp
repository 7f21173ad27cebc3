// Opening a descriptor another rank's process holds (a memfd it shares): through /proc
// (needs only read access to the peer's /proc entries), else pidfd_getfd (needs ptrace
// rights over it). Ranks of one host run as one user, so the first normally works.
#pragma once

#include <sys/types.h>

#include <string>

namespace chorus::shm {

// A new descriptor for `fd` of process `pid` (rank `peer`), opened with `flags` (O_RDONLY,
// O_RDWR) when through /proc. Throws PeerError naming the
// rank when its process is gone, Error(SystemError) when access is denied; `what` says
// what the descriptor is ("its memAlloc buffer").
int openPeerFd(int peer, pid_t pid, int fd, int flags, const std::string& what);

// The two ways openPeerFd tries, each on its own (the descriptor, or -1 with errno):
// /proc/<pid>/fd/<fd> opened with `flags`, and pidfd_getfd (the same open file, so the
// access it was opened with).
int openPeerFdViaProc(pid_t pid, int fd, int flags);
int openPeerFdViaPidfd(pid_t pid, int fd);

}  // namespace chorus::shm
