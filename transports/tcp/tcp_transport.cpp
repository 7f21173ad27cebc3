// The TCP transport: one striped TcpChannel per peer, connected on first use
// (tcp_connector.hpp: no full mesh at set-up), and a poll()-based wait.
#include "errors.hpp"
#include "settings/settings.hpp"
#include "transports/tcp/tcp_channel.hpp"
#include "transports/tcp/tcp_connector.hpp"
#include "transports/tcp/tcp_listen.hpp"
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

// How long a peer may take to answer a connection: the communicator's timeout, or what is
// left of the set-up deadline when the caller did not say.
std::chrono::milliseconds connectTimeout(const TransportContext& ctx) {
  if (ctx.timeout.count() > 0) return ctx.timeout;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(ctx.deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(1000));
}

class TcpTransport;

// A peer's channel: nothing until its first trySend or peek, which connect it.
class LazyChannel final : public Channel {
 public:
  LazyChannel(TcpTransport& owner, int peer) : owner_(owner), peer_(peer) {}
  size_t trySend(const void* data, size_t bytes) override {
    return ready() ? open_->trySend(data, bytes) : 0;
  }
  std::span<const std::byte> peek() override {
    return ready() ? open_->peek() : std::span<const std::byte>{};
  }
  void consume(size_t bytes) override {
    if (open_) return open_->consume(bytes);
    if (bytes > 0)
      throw Error(Result::InternalError,
                  "tcp: consume(" + std::to_string(bytes) + ") beyond what peek() returned");
  }
  tcp::TcpChannel* open() const { return open_.get(); }
  void adopt(std::unique_ptr<tcp::TcpChannel> channel) { open_ = std::move(channel); }

 private:
  bool ready();
  TcpTransport& owner_;
  int peer_;
  std::unique_ptr<tcp::TcpChannel> open_;
};

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(const TransportContext& ctx)
      : rank_(ctx.rank),
        nranks_(ctx.nranks),
        config_(tcp::TcpConfig::fromEnv()),
        connector_(ctx, config_, connectTimeout(ctx)) {
    for (int p = 0; p < nranks_; ++p) channels_.push_back(std::make_unique<LazyChannel>(*this, p));
  }

  const char* name() const override { return "tcp"; }

  Channel& channel(int peer) override {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      throwInvalid("tcp: no channel from rank " + std::to_string(rank_) + " to rank " +
                   std::to_string(peer));
    return *channels_[peer];
  }

  // Connects `peer` (without blocking): true once its channel is open.
  bool connect(int peer) {
    if (channels_[peer]->open()) return true;
    if (!connector_.progress(peer)) return false;
    openChannel(peer);
    return true;
  }

  void probe(int peer, bool on) override {
    if (peer >= 0 && peer < nranks_ && channels_[peer]->open()) channels_[peer]->open()->probe(on);
  }

  std::optional<PeerSilence> silence(int peer) override {
    if (peer < 0 || peer >= nranks_ || !channels_[peer]->open()) return std::nullopt;
    return channels_[peer]->open()->silence();
  }

  // poll() is level-triggered: anything that arrives after the engine's last pass is
  // still reported, so no token is needed.
  uint64_t prepareWait() override { return 0; }

  void wait(uint64_t, Deadline deadline) override {
    fds_.clear();
    polled_.clear();
    connector_.appendPollFds(fds_);
    const size_t connecting = fds_.size();
    for (auto& c : channels_) {
      if (!c->open()) continue;
      c->open()->appendPollFds(fds_);
      polled_.push_back(c->open());
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
    const pollfd* next = fds_.data() + connecting;
    for (tcp::TcpChannel* c : polled_) {
      c->onPolled(next);
      next += c->streams();
    }
    if (std::any_of(fds_.begin(), fds_.begin() + ptrdiff_t(connecting),
                    [](const pollfd& p) { return p.revents != 0; })) {
      connector_.service();
      // Peers that connected to us: open their channels now, so that their data is read.
      for (int peer : connector_.takeReady())
        if (!channels_[peer]->open()) openChannel(peer);
    }
  }

 private:
  void openChannel(int peer) {
    auto sockets = connector_.take(peer);
    std::vector<std::string> names;
    for (const auto& socket : sockets) names.push_back(pathName(socket));
    // Several paths: room for a few chunks each, so that fast paths keep going while a
    // slow one brings an earlier chunk (unless CHORUS_TCP_BUFFER says otherwise).
    auto perPeer = config_;
    if (!settings::isSet("CHORUS_TCP_BUFFER"))
      perPeer.buffer = std::max(config_.buffer, 4 * sockets.size() * config_.block);
    channels_[peer]->adopt(std::make_unique<tcp::TcpChannel>(rank_, peer, std::move(sockets),
                                                             std::move(names), perPeer));
  }

  int rank_;
  int nranks_;
  tcp::TcpConfig config_;
  tcp::Connector connector_;
  std::vector<std::unique_ptr<LazyChannel>> channels_;  // [rank_] is never opened
  std::vector<pollfd> fds_;
  std::vector<tcp::TcpChannel*> polled_;
};

bool LazyChannel::ready() { return open_ || owner_.connect(peer_); }

}  // namespace

std::unique_ptr<Transport> makeTcpTransport(const TransportContext& ctx) {
  return std::make_unique<TcpTransport>(ctx);
}

}  // namespace chorus
