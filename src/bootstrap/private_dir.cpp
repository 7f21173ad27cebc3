// rendezvousDirectory(): a directory only this uid can write in, for the mpirun file
// rendezvous. A fixed name in /tmp would let another user create it first (a file we
// cannot remove, or a symlink elsewhere); a directory we own with mode 0700 cannot be
// entered by anyone else, and one that someone else made first is skipped.
#include "bootstrap/bootstrap.hpp"

#include "errors.hpp"
#include "log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace chorus {
namespace {

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] == '/' ? v : fallback;
}

// Makes `path` (its parent must exist) if missing, then checks it without following a
// symlink: a directory owned by us, reachable by nobody else. "" when usable, else why not.
std::string makePrivate(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return std::string("cannot create it: ") + std::strerror(errno);
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOTDIR || errno == ELOOP
               ? "it is not a directory (or is a symlink)"
               : std::string("cannot open it: ") + std::strerror(errno);
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    why = "it is not a directory";
  } else if (st.st_uid != ::getuid()) {
    why = "it belongs to uid " + std::to_string(st.st_uid);
  } else if ((st.st_mode & 077) != 0 && ::fchmod(fd, 0700) != 0) {
    why = "it is open to other users and chmod failed";
  }
  ::close(fd);
  return why;
}

}  // namespace

std::string rendezvousDirectory() {
  const std::string uid = std::to_string(::getuid());
  const std::string home = envOr("HOME", "");
  std::vector<std::string> candidates;
  if (const char* run = std::getenv("XDG_RUNTIME_DIR"); run != nullptr && run[0] == '/')
    candidates.push_back(std::string(run) + "/chorus");
  candidates.push_back(envOr("TMPDIR", "/tmp") + "/chorus-" + uid);
  std::string cache = envOr("XDG_CACHE_HOME", home.empty() ? "" : home + "/.cache");
  if (!cache.empty()) {
    ::mkdir(cache.c_str(), 0700);  // usually there already
    candidates.push_back(cache + "/chorus");
  }
  std::string refused;
  for (const auto& dir : candidates) {
    std::string why = makePrivate(dir);
    if (why.empty()) return dir;
    logf(LogLevel::Warn, "mpirun rendezvous: not using %s: %s", dir.c_str(), why.c_str());
    refused += (refused.empty() ? "" : "; ") + dir + ": " + why;
  }
  throw Error(Result::SystemError, "mpirun rendezvous: no private directory to use (" + refused +
                                       "); set XDG_RUNTIME_DIR or TMPDIR to one of yours");
}

}  // namespace chorus
