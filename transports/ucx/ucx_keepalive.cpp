#include "transports/ucx/ucx_keepalive.hpp"

#include "log.hpp"
#include "net/host_probe.hpp"
#include "settings/settings.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace chorus::ucx {
namespace {

// Whether a context on `netDevices` may open UCX's tcp transport: a network interface among
// them (UCX's choice, or a name without the port of an RDMA device's "mlx5_0:1"), and tcp
// not left out by UCX_TLS. Keys that no transport of a worker takes earn UCX's "invalid
// configuration" warning.
bool mayUseTcp(const std::string& netDevices) {
  const std::vector<std::string> devices = settings::splitList(netDevices);
  const bool interface =
      devices.empty() || std::any_of(devices.begin(), devices.end(), [](const std::string& d) {
        return d.find(':') == std::string::npos;
      });
  const char* tls = std::getenv("UCX_TLS");
  if (!interface || tls == nullptr || *tls == '\0') return interface;
  const std::string list = tls;
  const bool named = list.find("tcp") != std::string::npos;
  return list[0] == '^' ? !named : named || list.find("all") != std::string::npos;
}

// A user's UCX_TCP_<name> as UCX's tcp transport applies it to a socket: whole seconds (UCX
// takes a time with an optional unit, s by default, and truncates it), or a count; 0 for
// "auto" (UCX leaves the kernel's), -1 for "inf" (keepalive off), -2 where unreadable.
int userValue(const char* text, bool count) {
  if (std::strcmp(text, "auto") == 0) return 0;
  if (std::strcmp(text, "inf") == 0) return -1;
  double value = 0;
  char unit[16] = {};
  const int fields = std::sscanf(text, "%lf%15s", &value, unit);
  if (fields < 1 || value < 0) return -2;
  double perSecond = 1;
  if (count && fields != 1) return -2;
  if (fields == 2) {
    const std::string u = unit;
    perSecond = u == "s"    ? 1
                : u == "m"  ? 1.0 / 60
                : u == "ms" ? 1e3
                : u == "us" ? 1e6
                : u == "ns" ? 1e9
                            : 0;
    if (perSecond == 0) return -2;
  }
  return std::max(1, int(std::min(std::floor(value / perSecond), double(INT32_MAX))));
}

}  // namespace

std::optional<TcpKeepalive> tcpKeepalive(const std::string& netDevices,
                                         std::chrono::milliseconds limit) {
  if (limit.count() <= 0 || !mayUseTcp(netDevices)) return std::nullopt;
  const net::KeepaliveTimes times = net::keepaliveTimes(limit);
  return TcpKeepalive{{{{"KEEPIDLE", times.idleSeconds, std::getenv("UCX_TCP_KEEPIDLE")},
                        {"KEEPINTVL", times.intervalSeconds, std::getenv("UCX_TCP_KEEPINTVL")},
                        {"KEEPCNT", times.probes, std::getenv("UCX_TCP_KEEPCNT")}}}};
}

void configure(ucp_config_t* config, const TcpKeepalive& keepalive) {
  for (const TcpKeepalive::Setting& s : keepalive.settings) {
    if (s.user != nullptr) continue;  // UCX reads the user's itself
    // UCX 1.13 takes the tcp transport's names without the TCP_ prefix. It keeps times in
    // clock ticks and truncates them to whole seconds for the socket: "4s" can come back as
    // 3; half a second more lands on the intended second.
    const bool count = std::strcmp(s.name, "KEEPCNT") == 0;
    const std::string value = std::to_string(s.chorus) + (count ? "" : ".5s");
    if (const ucs_status_t status = ucp_config_modify(config, s.name, value.c_str());
        status != UCS_OK)
      logf(LogLevel::Warn, "ucx: CHORUS_KEEPALIVE not applied: UCX_TCP_%s=%s: %s", s.name,
           value.c_str(), ucs_status_string(status));
  }
}

std::optional<net::KeepaliveTimes> acceptedTimes(const TcpKeepalive& keepalive) {
  int values[3] = {};
  for (size_t i = 0; i < keepalive.settings.size(); ++i) {
    const TcpKeepalive::Setting& s = keepalive.settings[i];
    values[i] = s.user == nullptr ? s.chorus : userValue(s.user, i == 2);
    if (values[i] == -2)
      logf(LogLevel::Warn,
           "ucx: UCX_TCP_%s='%s' not understood: the connections UCX accepted keep no "
           "keepalive",
           s.name, s.user);
    if (values[i] < 0) return std::nullopt;
  }
  return net::KeepaliveTimes{values[0], values[1], values[2]};
}

int keepAccepted(const std::set<uint16_t>& ucxPorts, const std::vector<std::string>& peerHosts,
                 const net::KeepaliveTimes& times) {
  int set = 0;
  if (ucxPorts.empty() || peerHosts.empty()) return set;
  for (const int fd : net::acceptedConnections(ucxPorts, peerHosts)) {
    if (net::socketOption(fd, SOL_SOCKET, SO_KEEPALIVE) != 0) continue;
    if (net::keepaliveOn(fd, times))
      ++set;
    else
      logf(LogLevel::Warn, "ucx: keepalive on an accepted connection (fd %d): %s", fd,
           std::strerror(errno));
  }
  return set;
}

}  // namespace chorus::ucx
