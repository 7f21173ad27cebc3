#include "bootstrap/bootstrap.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace chorus {

// Two processes may share memory only if they share the kernel (boot id), and the network
// namespace tells containers on one kernel apart; the hostname is for people reading it.
std::string hostIdentity() {
  std::string bootId;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> bootId;
  if (bootId.empty()) bootId = "unknown-boot";
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  struct stat st {};
  unsigned long netns = ::stat("/proc/self/ns/net", &st) == 0 ? st.st_ino : 0;
  return bootId + "/" + host + "/netns:" + std::to_string(netns);
}

}  // namespace chorus
