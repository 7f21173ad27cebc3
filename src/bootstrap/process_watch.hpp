// Liveness of peer processes on this host, by pid: what a rank can know of a peer's death
// without the network (the store's watch sees a death only as its socket closing, which a
// forked child still holding the socket or a stalled link can delay without bound).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace chorus {

// True when no process `pid` exists in this pid namespace any more, or it is a zombie (dead,
// not yet reaped). False while it runs, and when we may not signal it (EPERM: alive).
bool processGone(pid_t pid);

// "pidns:<inode>/pid:<pid>" for this process, or "" when a pid alone cannot name it for
// this host's other processes: /proc belongs to another pid namespace than ours (it then
// reads other processes' entries under our peers' pids).
std::string processIdentity();

// The pid named by `identity` when it is in our pid namespace (an identity from
// processIdentity() on this host), else 0: a pid of another namespace means nothing here.
pid_t pidInOurNamespace(const std::string& identity);

// The same-host peers' pids. check() throws PeerError naming the lowest rank whose process
// has been gone for `grace` (every such rank among failedRanks()); nothing before. The
// grace leaves the store's verdict the first word (the engine checks it first): a rank
// that left cleanly said goodbye there and is no death, and a death the store reports
// names the rank that died, not one that left after it. add() and check() may run on
// different threads (the engine checks from its progress loop).
class LocalPeerWatch {
 public:
  explicit LocalPeerWatch(std::chrono::milliseconds grace) : grace_(grace) {}
  void add(int rank, pid_t pid);
  void check() const;

 private:
  struct Peer {
    int rank;
    pid_t pid;
    std::chrono::steady_clock::time_point goneSince{};  // first seen gone; {} while alive
  };
  const std::chrono::milliseconds grace_;
  mutable std::mutex mutex_;
  mutable std::vector<Peer> peers_;  // ascending rank
};

}  // namespace chorus
