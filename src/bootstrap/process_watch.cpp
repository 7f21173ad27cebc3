#include "bootstrap/process_watch.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>

#include "errors.hpp"

namespace chorus {

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  // A dead child not yet reaped by its parent is a zombie: gone for our purposes.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

namespace {
std::string pidNamespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? std::to_string(st.st_ino) : std::string();
}
}  // namespace

std::string processIdentity() {
  // /proc/self names us as /proc's pid namespace sees us: our own pid when it is ours.
  char self[32] = {};
  const ssize_t n = ::readlink("/proc/self", self, sizeof(self) - 1);
  const std::string ns = pidNamespace();
  if (n <= 0 || ns.empty() || std::string(self, static_cast<size_t>(n)) != std::to_string(getpid()))
    return "";
  return "pidns:" + ns + "/pid:" + std::to_string(getpid());
}

pid_t pidInOurNamespace(const std::string& identity) {
  const std::string mine = processIdentity();
  const auto cut = identity.find("/pid:");
  if (mine.empty() || cut == std::string::npos) return 0;
  if (identity.compare(0, cut, mine, 0, mine.find("/pid:")) != 0) return 0;
  const std::string digits = identity.substr(cut + 5);
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  const long pid = std::stol(digits);
  return pid > 0 && pid <= INT_MAX ? static_cast<pid_t>(pid) : 0;
}

void LocalPeerWatch::add(int rank, pid_t pid) {
  if (pid == getpid()) return;  // a rank of this process (threads): it cannot die without us
  std::lock_guard lock(mutex_);
  peers_.push_back({rank, pid});
}

void LocalPeerWatch::check() const {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  std::vector<int> gone;
  std::string what;
  for (Peer& peer : peers_) {
    if (peer.goneSince == std::chrono::steady_clock::time_point{}) {
      if (!processGone(peer.pid)) continue;
      peer.goneSince = now;
    }
    if (now - peer.goneSince < grace_) continue;
    what += (gone.empty() ? "" : "; ") + std::string("rank ") + std::to_string(peer.rank) +
            " (pid " + std::to_string(peer.pid) +
            ", on this host) is gone (it exited or was killed)";
    gone.push_back(peer.rank);
  }
  if (!gone.empty()) throw PeerError(gone[0], what, gone);
}

}  // namespace chorus
