// chorus_ucx_keepalive_test: CHORUS_KEEPALIVE reaches UCX's tcp connections, which UCX sets
// up itself (ucx::Context maps it onto UCX_TCP_KEEPIDLE, KEEPINTVL and KEEPCNT where the
// environment does not set them). Two ranks over ucx on this host (UCX's tcp transport,
// as with CHORUS_UCX_ERR_MODE=peer) all-reduce once; then each reads the keepalive options
// of its connected TCP sockets other than the store's and compares them with the expected
// ones, given in seconds and probes:
//   chorus-run -n 2 chorus_ucx_keepalive_test --idle 4 --interval 1 --probes 4
// `--probes kernel`: net.ipv4.tcp_keepalive_probes (what UCX leaves by default). `~N`: N or
// N-1, for a time UCX converted itself (its "10s" becomes 9 or 10 whole seconds, depending
// on the measured clock). UCX 1.13 turns keepalive on at the end that connected only; Chorus
// turns it on at the accepting end (ucx_keepalive.hpp). `--accepting on` (default): every
// end of every connection must have keepalive on with those values; `--accepting off`
// (CHORUS_KEEPALIVE=0, UCX's own): as many ends off as on (the accepting ones), those on
// with those values. `--settle-ms M`: before the check, M / 20 all-reduces 20 ms apart
// (connections accepted after start-up get keepalive from the engine's peer checks, which
// run while a collective does); a count, not a time, so every rank calls as many. Exit 0
// when that holds over both ranks' sockets.
#include <chorus/chorus.hpp>

#include "../common/socket_census.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace {

int option(int fd, int level, int name) {
  int value = -1;
  socklen_t length = sizeof(value);
  return ::getsockopt(fd, level, name, &value, &length) == 0 ? value : -1;
}

int kernelProbes() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_keepalive_probes");
  int probes = -1;
  in >> probes;
  return probes;
}

// An expected value: exact, or (`~N`) N or N-1.
struct Expected {
  int value = -1;
  bool orOneLess = false;
  bool matches(int v) const { return v == value || (orOneLess && v == value - 1); }
  static Expected parse(const std::string& text) {
    if (text == "kernel") return {kernelProbes(), false};
    if (!text.empty() && text[0] == '~') return {std::atoi(text.c_str() + 1), true};
    return {std::atoi(text.c_str()), false};
  }
};

}  // namespace

int main(int argc, char** argv) {
  Expected idle, interval, probes;
  bool accepting = true;
  int settleMs = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--idle")
      idle = Expected::parse(v);
    else if (k == "--interval")
      interval = Expected::parse(v);
    else if (k == "--probes")
      probes = Expected::parse(v);
    else if (k == "--accepting")
      accepting = v == "on";
    else if (k == "--settle-ms")
      settleMs = std::atoi(v.c_str());
  }
  if (idle.value <= 0 || interval.value <= 0 || probes.value <= 0) {
    std::printf("usage: %s --idle [~]S --interval [~]S --probes N|kernel\n", argv[0]);
    return 2;
  }
  chorus::Options options;
  options.transport = "ucx";
  options.timeout = std::chrono::seconds(30);
  try {
    chorus::Communicator comm = chorus::Communicator::initFromEnv(options);
    const int rank = comm.rank();
    int64_t value = rank + 1;
    comm.allReduce(&value, &value, 1, chorus::DataType::Int64, chorus::RedOp::Sum).wait();
    if (value != int64_t(comm.size()) * (comm.size() + 1) / 2) {
      std::printf("rank %d: FAIL: the all-reduce gave %lld\n", rank, (long long)value);
      return 1;
    }
    for (int call = 0; call < settleMs / 20; ++call) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      int64_t one = 1;
      comm.allReduce(&one, &one, 1, chorus::DataType::Int64, chorus::RedOp::Sum).wait();
      if (one != comm.size()) {
        std::printf("rank %d: FAIL: an all-reduce of ones gave %lld\n", rank, (long long)one);
        return 1;
      }
    }
    const char* port = std::getenv("CHORUS_PORT");
    const auto fds = chorus::test_support::connectedInetSockets(port ? std::atoi(port) : -1, false);
    int64_t counts[3] = {0, 0, 0};  // ends with keepalive on; those with other values; off
    for (int fd : fds) {
      const int on = option(fd, SOL_SOCKET, SO_KEEPALIVE);
      const int s = option(fd, IPPROTO_TCP, TCP_KEEPIDLE),
                e = option(fd, IPPROTO_TCP, TCP_KEEPINTVL),
                n = option(fd, IPPROTO_TCP, TCP_KEEPCNT);
      const bool ok = idle.matches(s) && interval.matches(e) && probes.matches(n);
      if (on == 1) {
        counts[0] += 1;
        counts[1] += ok ? 0 : 1;
      } else {
        counts[2] += 1;
      }
      std::printf(
          "rank %d: %s: socket %d: keepalive %s, idle %d s, every %d s, %d probes "
          "(expected %s%d s, %s%d s, %d)\n",
          rank,
          on != 1 ? (accepting ? "FAIL" : "off")
          : ok    ? "OK"
                  : "FAIL",
          fd, on == 1 ? "on" : "off", s, e, n, idle.orOneLess ? "~" : "", idle.value,
          interval.orOneLess ? "~" : "", interval.value, probes.value);
    }
    // Both ranks learn the totals, and neither leaves while the other still reads.
    comm.allReduce(counts, counts, 3, chorus::DataType::Int64, chorus::RedOp::Sum).wait();
    if (counts[0] == 0) {
      std::printf("rank %d: FAIL: no end of a TCP connection of UCX's with keepalive on\n", rank);
      return 1;
    }
    if (counts[1] != 0) return 1;
    if (accepting ? counts[2] != 0 : counts[2] != counts[0]) {
      std::printf("rank %d: FAIL: %lld ends with keepalive off, %lld on (expected %s)\n", rank,
                  (long long)counts[2], (long long)counts[0], accepting ? "none off" : "as many");
      return 1;
    }
    std::printf("rank %d: OK: %lld UCX tcp connection ends with the expected keepalive, %lld off\n",
                rank, (long long)counts[0], (long long)counts[2]);
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
