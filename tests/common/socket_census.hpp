// The connected TCP sockets of this process, found through /proc/self/fd, split by whether
// either end is the rendezvous store's port. Fault trials pick a data socket to break;
// scale benchmarks count the data connections a rank holds. Plain C++, no Chorus library.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <vector>

namespace chorus::test_support {

inline int socketPort(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return -1;
}

// File descriptors of connected inet sockets: those with an end on storePort when store is
// true, the others (the data path) when it is false. Listeners and unix sockets are left out.
inline std::vector<int> connectedInetSockets(int storePort, bool store) {
  std::vector<int> fds;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return fds;
  while (dirent* e = readdir(d)) {
    const int fd = std::atoi(e->d_name);
    struct stat st;
    if (fd <= 2 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage mine{}, peer{};
    socklen_t a = sizeof mine, b = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &a) != 0 ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &b) != 0)
      continue;  // not connected
    if (mine.ss_family != AF_INET && mine.ss_family != AF_INET6) continue;
    const bool isStore = socketPort(mine) == storePort || socketPort(peer) == storePort;
    if (isStore == store) fds.push_back(fd);
  }
  closedir(d);
  return fds;
}

}  // namespace chorus::test_support
