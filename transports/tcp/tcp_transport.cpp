// The TCP transport: a full mesh of striped connections (tcp_mesh.cpp), one TcpChannel
// per peer, and a poll()-based wait.
#include "errors.hpp"
#include "settings/settings.hpp"
#include "transports/tcp/tcp_channel.hpp"
#include "transports/tcp/tcp_mesh.hpp"
#include "transports/transport.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace chorus {
namespace {

// "rail0:41234": the interface that holds the connection's local address, and its port.
std::string pathName(const net::Socket& socket) {
  auto local = socket.localAddress();
  std::string host = local.toString();
  host = host.substr(0, host.rfind(':'));
  std::string nic = host;
  const char* spec = settings::cstr("CHORUS_SOCKET_IFNAME");
  for (const auto& i : net::findInterfaces(spec ? spec : "")) {
    std::string a = i.address.toString();
    if (a.substr(0, a.rfind(':')) == host) nic = i.name;
  }
  return nic + ":" + std::to_string(local.port());
}

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(const TransportContext& ctx) : rank_(ctx.rank), nranks_(ctx.nranks) {
    auto config = tcp::TcpConfig::fromEnv();
    auto mesh = tcp::connectMesh(ctx, config);
    channels_.resize(nranks_);
    for (int p = 0; p < nranks_; ++p) {
      if (p == rank_) continue;
      std::vector<std::string> names;
      for (const auto& socket : mesh[p]) names.push_back(pathName(socket));
      // Several paths: room for a few chunks each, so that fast paths keep going while a
      // slow one brings an earlier chunk (unless CHORUS_TCP_BUFFER says otherwise).
      auto perPeer = config;
      if (!settings::isSet("CHORUS_TCP_BUFFER"))
        perPeer.buffer = std::max(config.buffer, 4 * mesh[p].size() * config.block);
      channels_[p] = std::make_unique<tcp::TcpChannel>(rank_, p, std::move(mesh[p]),
                                                       std::move(names), perPeer);
    }
  }

  const char* name() const override { return "tcp"; }

  Channel& channel(int peer) override {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      throwInvalid("tcp: no channel from rank " + std::to_string(rank_) + " to rank " +
                   std::to_string(peer));
    return *channels_[peer];
  }

  // poll() is level-triggered: anything that arrives after the engine's last pass is
  // still reported, so no token is needed.
  uint64_t prepareWait() override { return 0; }

  void wait(uint64_t, Deadline deadline) override {
    fds_.clear();
    for (auto& c : channels_) {
      if (c) c->appendPollFds(fds_);
    }
    // ppoll takes nanoseconds, so the wait ends at the deadline, not up to 1 ms after.
    timespec ts{};
    timespec* timeout = nullptr;
    if (deadline != Deadline::max()) {
      auto left = std::max(deadline - Clock::now(), Clock::duration::zero());
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
      ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
      timeout = &ts;
    }
    int n = ::ppoll(fds_.data(), fds_.size(), timeout, nullptr);
    if (n < 0) {
      if (errno == EINTR) return;
      throwSystemError("tcp: poll");
    }
    if (n == 0) return;
    // Receive right away, so that data for a channel the engine is not reading yet fills
    // its ring and stops waking us, instead of keeping poll() hot.
    const pollfd* next = fds_.data();
    for (auto& c : channels_) {
      if (!c) continue;
      c->onPolled(next);
      next += c->streams();
    }
  }

 private:
  int rank_;
  int nranks_;
  std::vector<std::unique_ptr<tcp::TcpChannel>> channels_;  // null for this rank
  std::vector<pollfd> fds_;
};

}  // namespace

std::unique_ptr<Transport> makeTcpTransport(const TransportContext& ctx) {
  return std::make_unique<TcpTransport>(ctx);
}

}  // namespace chorus
