// The verbs transport: one IbChannel per peer (RC QPs, RDMA WRITE_WITH_IMM into the
// peer's ring, receiver-granted credits), connected through the store, and a wait on
// the completion channels plus the devices' asynchronous events. Every device that
// CHORUS_IB_HCA allows is a rail: each connection has at least one QP per rail and
// stripes its blocks over them (ib_channel.hpp).
//
// Liveness: a peer that dies is reported by the communicator's store watch (it does not
// depend on the transport); the transport adds what the fabric says: failed work
// completions (retry exceeded, remote access errors) and QP/port events.
// One-sided access (PeerMemory) is RDMA READ straight between registered buffers
// (ib_peer_memory.hpp); large messages between registered buffers go by rendezvous, RDMA
// WRITE from the sender's buffer into the receiver's (ib_channel.hpp).
// GPUDirect RDMA (dma-buf / peer memory) is not implemented: buffers are host memory.
#include "transports/ib/ib_channel.hpp"
#include "transports/ib/ib_config.hpp"
#include "transports/ib/ib_device.hpp"
#include "transports/ib/ib_peer_memory.hpp"

#include "errors.hpp"
#include "log.hpp"
#include "settings/settings.hpp"
#include "store/barrier.hpp"
#include "store/store.hpp"
#include "transports/transport.hpp"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

namespace chorus {

bool ibDeviceAvailable() {
  try {
    return ib::anyActivePort(settings::text("CHORUS_IB_HCA"));
  } catch (const std::exception&) {
    return false;
  }
}

namespace {

class IbTransport final : public Transport {
 public:
  explicit IbTransport(const TransportContext& ctx)
      : rank_(ctx.rank), nranks_(ctx.nranks), config_(ib::IbConfig::fromEnv()) {
    channels_.resize(nranks_);
    if (nranks_ <= 1) return;
    if (ctx.store == nullptr) throwInvalid("ib: no store to rendezvous through");
    devices_ = ib::IbDevice::openRails(config_);
    fitToDevices();
    std::vector<ib::IbDevice*> rails;
    for (auto& d : devices_) {
      rails.push_back(d.get());
      ibv_comp_channel* events = ibv_create_comp_channel(d->context());
      if (!events) throwSystemError("ib: ibv_create_comp_channel on " + d->name());
      fcntl(events->fd, F_SETFL, fcntl(events->fd, F_GETFL) | O_NONBLOCK);
      events_.push_back(events);
    }
    for (int p = 0; p < nranks_; ++p) {
      if (p == rank_) continue;
      channels_[p] = std::make_unique<ib::IbChannel>(rank_, p, rails, config_, events_);
      auto info = channels_[p]->localInfo().encode();
      ctx.store->set(key(rank_, p), info);
    }
    for (int p = 0; p < nranks_; ++p) {
      if (p == rank_) continue;
      std::vector<std::byte> value;
      try {
        value = ctx.store->get(key(p, rank_), ctx.deadline);
      } catch (const Error& e) {
        throw Error(e.code(), "ib: rank " + std::to_string(rank_) +
                                  " got no connection record from rank " + std::to_string(p) +
                                  " (never started, or its ib set-up failed?): " + e.what());
      }
      channels_[p]->connect(ib::PeerInfo::decode(value, p));
    }
    // Nobody writes before every QP towards it is ready to receive (a write to a QP not
    // yet in RTR would wait out the ack timeout).
    storeBarrier(*ctx.store, "ib/connected", nranks_, ctx.deadline);
    peerMemory_ = std::make_unique<ib::IbPeerMemory>(
        rails, config_.block,  // reads spread over every rail's QPs
        [this](int peer) -> ib::IbChannel& { return *channels_.at(peer); });
    asyncSeen_ = asyncGeneration();
    std::string names;
    for (auto& d : devices_) names += (names.empty() ? "" : ", ") + d->describe();
    logf(LogLevel::Info, "rank %d: ib transport on %s, %d QP(s) per peer, block %zu, ring %zu",
         rank_, names.c_str(), config_.qps, config_.block, config_.ring);
  }

  ~IbTransport() override {
    const auto start = Clock::now();
    // Every QP stops before any is destroyed: one QP's destroy waits for what the driver
    // still does on its behalf, and other QPs' retransmissions would take its CPU.
    for (auto& c : channels_)
      if (c) c->stopQps();
    peerMemory_.reset();  // its pins before the QPs it reads through
    channels_.clear();    // QPs and CQs first, then their completion channels
    for (ibv_comp_channel* e : events_) ibv_destroy_comp_channel(e);
    const auto took = std::chrono::duration<double>(Clock::now() - start).count();
    if (took > 2.0)  // the driver's teardown, not Chorus's: said, so a slow exit is explained
      logf(LogLevel::Warn, "rank %d: closing the ib transport took %.1f s (the verbs driver)",
           rank_, took);
  }

  const char* name() const override { return "ib"; }
  PeerMemory* peerMemory() override { return peerMemory_.get(); }

  Channel& channel(int peer) override {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      throwInvalid("ib: no channel from rank " + std::to_string(rank_) + " to rank " +
                   std::to_string(peer));
    return *channels_[peer];
  }

  // Zero-length writes on each connection's probe QP, answered by the peer's HCA.
  void probe(int peer, bool on) override {
    if (peer >= 0 && peer < nranks_ && channels_[peer]) channels_[peer]->probe(on);
  }
  std::optional<PeerSilence> silence(int peer) override {
    if (peer < 0 || peer >= nranks_ || !channels_[peer]) return std::nullopt;
    return channels_[peer]->silence();
  }

  // Grants first (a sender may be waiting for them), then arm every CQ: a completion
  // after this point wakes wait(); the engine's next pass sees those before it.
  uint64_t prepareWait() override {
    for (auto& c : channels_) {
      if (c) c->flushBeforeSleep();
    }
    for (auto& c : channels_) {
      if (c) c->arm();
    }
    return 0;
  }

  void wait(uint64_t, Deadline deadline) override {
    throwIfFailed();
    if (events_.empty()) return;
    std::vector<pollfd> fds;  // each rail's completion channel, then its async events
    for (size_t r = 0; r < devices_.size(); ++r) {
      fds.push_back({events_[r]->fd, POLLIN, 0});
      fds.push_back({devices_[r]->asyncFd(), POLLIN, 0});
    }
    timespec ts{};
    timespec* timeout = nullptr;
    if (deadline != Deadline::max()) {
      auto left = std::max(deadline - Clock::now(), Clock::duration::zero());
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      ts = {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
      timeout = &ts;
    }
    int n = ::ppoll(fds.data(), fds.size(), timeout, nullptr);
    if (n < 0 && errno != EINTR) throwSystemError("ib: poll");
    for (size_t r = 0; n > 0 && r < devices_.size(); ++r) {
      if (fds[2 * r].revents) {
        ibv_cq* cq = nullptr;
        void* owner = nullptr;
        while (ibv_get_cq_event(events_[r], &cq, &owner) == 0) ibv_ack_cq_events(cq, 1);
      }
      if (fds[2 * r + 1].revents) devices_[r]->drainAsyncEvents();
    }
    throwIfFailed();
  }

  // The engine's peer check, from polling and waiting alike: a program that only polls
  // never reaches wait(), so the device's asynchronous events (QP fatal, port or device
  // down) are read here too (the fd is non-blocking) and marked on the channels they
  // break. A marked channel fails its next send or receive, and the engine then looks for
  // the cause (the store's deaths, the chain of waits) before it names a peer: a broken
  // connection is not by itself a peer's death, so nothing is thrown here. Deaths come
  // from the store's watch, as for tcp and ucx.
  void checkPeers() override {
    for (auto& d : devices_) d->drainAsyncEvents();
    markAsyncFailures();
  }

 private:
  static std::string key(int from, int to) {
    return "ib/" + std::to_string(from) + "/" + std::to_string(to);
  }

  // At least one QP per rail (so that every rail carries blocks), and queue depths within
  // what every device allows.
  void fitToDevices() {
    const int rails = static_cast<int>(devices_.size());
    if (config_.qps < rails) {
      config_.qps = rails;
      const size_t ring = std::max(config_.ring, 2 * config_.block * config_.qps);
      config_.ring = (ring + config_.block - 1) / config_.block * config_.block;
    }
    for (auto& d : devices_) {
      const auto& a = d->attr();
      config_.sendDepth = std::min(config_.sendDepth, a.max_qp_wr);
      config_.recvDepth = std::min(config_.recvDepth, a.max_qp_wr);
      const int perQp = std::max(1, a.max_cqe / config_.qps);
      if (config_.sendDepth + config_.recvDepth > perQp) {
        config_.sendDepth = std::max(4, std::min(config_.sendDepth, perQp / 4));
        config_.recvDepth = std::max(4, perQp - config_.sendDepth);
      }
    }
  }

  uint64_t asyncGeneration() const {
    uint64_t g = 0;
    for (auto& d : devices_) g += d->asyncGeneration();
    return g;
  }

  // A broken connection fails the communicator now, not only when the engine next
  // touches that peer: the QP cannot carry anything any more.
  void throwIfFailed() {
    markAsyncFailures();
    for (int p = 0; p < nranks_; ++p) {
      if (channels_[p] && !channels_[p]->failure().empty())
        throw PeerError(p, channels_[p]->failure());
    }
  }

  void markAsyncFailures() {
    if (const uint64_t g = asyncGeneration(); g != asyncSeen_) {
      asyncSeen_ = g;
      for (auto& c : channels_) {
        if (c) c->checkAsyncFailures();
      }
    }
  }

  int rank_, nranks_;
  ib::IbConfig config_;
  std::vector<std::shared_ptr<ib::IbDevice>> devices_;    // the rails
  std::vector<ibv_comp_channel*> events_;                 // one per rail
  std::vector<std::unique_ptr<ib::IbChannel>> channels_;  // null for this rank
  std::unique_ptr<ib::IbPeerMemory> peerMemory_;          // RDMA READ of peers' buffers
  uint64_t asyncSeen_ = 0;
};

}  // namespace

std::unique_ptr<Transport> makeIbTransport(const TransportContext& ctx) {
  return std::make_unique<IbTransport>(ctx);
}

}  // namespace chorus
