// The UCX transport: per communicator one UCP context and worker per device
// (CHORUS_UCX_NET_DEVICES: each context limited to one NIC, so each NIC is a rail the
// striping layer steers between, as verbs rails are; default one worker on UCX's own
// choice), a UcxChannel per peer (CHORUS_UCX_PATHS endpoints per rail, striped:
// ucx_channel.hpp; worker addresses exchanged through the store), a wait that sleeps on
// the workers' event fds (ucp_worker_arm + poll) until the deadline, and a progress thread
// for the time the engine is away (ucx_progress.hpp). A stall's diagnosis asks a peer's host
// for an answer on this process's TCP connections to it (UCX's tcp transport's among them:
// net/host_probe.hpp), found by the host addresses each rank publishes with its workers'.
#include "errors.hpp"
#include "log.hpp"
#include "net/host_probe.hpp"
#include "net/socket.hpp"
#include "settings/settings.hpp"
#include "store/store.hpp"
#include "transports/transport.hpp"
#include "transports/ucx/ucx_channel.hpp"
#include "transports/ucx/ucx_keepalive.hpp"
#include "transports/ucx/ucx_peer_memory.hpp"
#include "transports/ucx/ucx_progress.hpp"
#include "transports/ucx/ucx_record.hpp"
#include "transports/ucx/ucx_resources.hpp"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace chorus {
namespace {

constexpr int kMaxRanks = 1 << 23;  // the rank field of a tag
// Sleeps are cut into slices this long, as insurance against a missed wake-up.
constexpr auto kWaitSlice = std::chrono::milliseconds(10);
constexpr auto kCloseTime = std::chrono::seconds(2);
// The longest this rank waits for UCX to wire its endpoints (keepAcceptedConnections).
constexpr auto kWireTime = std::chrono::seconds(5);

// CHORUS_UCX_NET_DEVICES: the NET_DEVICES value of each worker's context. Empty: one
// worker, UCX's choice. `auto`: one per interface CHORUS_SOCKET_IFNAME selects (the NICs
// tcp stripes over; UCX's tcp transport knows them by name), or UCX's choice when that
// finds fewer than two. Otherwise a comma-separated list (UCX names, e.g. `mlx5_0:1`);
// `+` joins devices that one worker shares (`mlx5_0:1+mlx5_1:1`, as UCX's own comma).
std::vector<std::string> netDevices() {
  const std::string spec = settings::text("CHORUS_UCX_NET_DEVICES");
  std::vector<std::string> devices;
  if (spec == "auto") {
    devices = net::findInterfaceNames(settings::text("CHORUS_SOCKET_IFNAME"));
    if (devices.size() < 2) devices.clear();
  } else {
    for (std::string name : settings::splitList(spec)) {
      std::replace(name.begin(), name.end(), '+', ',');
      if (name.empty()) throwInvalid("CHORUS_UCX_NET_DEVICES='" + spec + "': an empty device name");
      devices.push_back(name);
    }
  }
  if (devices.empty()) devices.emplace_back();
  if (devices.size() > static_cast<size_t>(ucx::kMostDevices))
    throwInvalid("CHORUS_UCX_NET_DEVICES: at most " + std::to_string(ucx::kMostDevices) +
                 " devices");
  return devices;
}

class UcxTransport final : public Transport {
 public:
  explicit UcxTransport(const TransportContext& ctx)
      : rank_(ctx.rank), nranks_(ctx.nranks), config_(ucx::UcxConfig::fromEnv()) {
    if (nranks_ > kMaxRanks) throwInvalid("ucx: at most 2^23 ranks");
    const std::vector<std::string> names = netDevices();
    std::vector<ucx::Worker*> workers;
    for (const std::string& name : names) {
      contexts_.push_back(std::make_unique<ucx::Context>(
          std::max(1, ctx.nranks - 1) * config_.paths, name, config_.keepalive));
      workers_.push_back(std::make_unique<ucx::Worker>(*contexts_.back()));
      devices_.push_back({name, contexts_.back().get(), workers_.back().get()});
      workers.push_back(workers_.back().get());
    }
    progress_ = std::make_unique<ucx::Progress>(std::move(workers), [this] {
      for (auto& c : channels_) {
        if (c) c->flushCredit();
      }
    });
    channels_.resize(nranks_);
    std::vector<ucp_context_h> railContexts;
    for (const auto& c : contexts_) railContexts.push_back(c->get());
    peerMemory_ = std::make_unique<ucx::UcxPeerMemory>(
        std::move(railContexts), *progress_, [this](int peer) -> ucx::UcxChannel& {
          if (peer < 0 || peer >= nranks_ || !channels_[peer])
            throwInvalid("ucx: no channel to rank " + std::to_string(peer));
          return *channels_[peer];
        });
    if (nranks_ == 1) return;
    if (ctx.store == nullptr) throwInvalid("ucx: no store to rendezvous through");
    std::vector<std::string> addresses;
    for (const auto& worker : workers_) addresses.push_back(worker->address());
    std::vector<std::string> hosts;
    for (std::string& host : net::hostAddresses())
      if (hosts.size() < size_t{ucx::kMostHostAddresses} && host.size() <= ucx::kLongestHostAddress)
        hosts.push_back(std::move(host));
    ctx.store->set("ucx/" + std::to_string(rank_), ucx::encodeRecord(settings(), addresses, hosts));
    peerHosts_.resize(static_cast<size_t>(nranks_));
    try {
      for (int p = 0; p < nranks_; ++p) {
        if (p == rank_) continue;
        std::vector<std::string> theirs = peerAddresses(ctx, p);
        channels_[p] =
            std::make_unique<ucx::UcxChannel>(devices_, *progress_, rank_, p, theirs, config_);
      }
    } catch (...) {
      close();
      throw;
    }
    // CHORUS_UCX_PROGRESS_THREAD=0 turns the thread off (to measure without it); bytes
    // then move only while the engine calls in.
    const bool progressThread = settings::boolean("CHORUS_UCX_PROGRESS_THREAD");
    keepAcceptedConnections(ctx.deadline, progressThread);
    if (progressThread) progress_->start();
  }

  ~UcxTransport() override { close(); }

  const char* name() const override { return "ucx"; }

  PeerMemory* peerMemory() override { return peerMemory_.get(); }

  Channel& channel(int peer) override {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      throwInvalid("ucx: no channel from rank " + std::to_string(rank_) + " to rank " +
                   std::to_string(peer));
    return *channels_[peer];
  }

  // ucp_worker_arm refuses to arm while events are pending, so nothing that arrives after
  // the engine's last pass is lost: no token needed.
  uint64_t prepareWait() override { return 0; }

  // Keepalive probes on this process's connections to the peer's host, whatever opened
  // them; UCX's own keepalive settings come back when probing ends.
  void probe(int peer, bool on) override {
    if (peer >= 0 && peer < nranks_ && peer != rank_ && !peerHosts_[peer].empty())
      hostProbe_.probe(peer, peerHosts_[peer], on);
  }

  // Empty where no connection to its host exists (UCX reached it otherwise: verbs, shared
  // memory) or none went unanswered.
  std::optional<PeerSilence> silence(int peer) override {
    if (peer < 0 || peer >= nranks_ || peer == rank_ || peerHosts_[peer].empty())
      return std::nullopt;
    const auto quiet = hostProbe_.silence(peerHosts_[peer]);
    if (!quiet) return std::nullopt;
    return PeerSilence{quiet->since, quiet->unanswered};
  }

  void wait(uint64_t, Deadline deadline) override {
    const Deadline until = std::min(deadline, Clock::now() + kWaitSlice);
    progress_->engineActive(until);  // the progress thread stays out meanwhile
    ucs_status_t status = UCS_ERR_BUSY;
    {
      std::lock_guard lock(progress_->mutex());
      if (!progress_->drain()) status = progress_->arm();
    }
    if (status == UCS_OK) {
      progress_->sleep(std::max(until - Clock::now(), Clock::duration::zero()));
      std::lock_guard lock(progress_->mutex());
      progress_->drain();
    } else if (status != UCS_ERR_BUSY) {
      ucx::throwStatus("ucp_worker_arm", status);
    }
    // An error on a channel no step is using is not raised here: a peer that finished and
    // left, or one whose keepalive timed out while it waited on a stopped rank, is not the
    // cause of anything yet. Deaths come from the store; the engine asks the chain of waits
    // before it names a peer whose channel failed (Engine::rootCause).
  }

 private:
  std::vector<std::string> peerAddresses(const TransportContext& ctx, int peer) {
    std::vector<std::byte> value;
    try {
      value = ctx.store->get("ucx/" + std::to_string(peer), ctx.deadline);
    } catch (const Error& e) {
      throw Error(e.code(), "ucx: rank " + std::to_string(rank_) +
                                " got no worker address from rank " + std::to_string(peer) +
                                " (never started?): " + e.what());
    }
    return ucx::decodeRecord(value, peer, rank_, settings(), &peerHosts_[peer]);
  }

  // CHORUS_KEEPALIVE on the connections UCX accepted (ucx_keepalive.hpp), which UCX 1.13
  // leaves without. UCX wires an endpoint pair over a connection one of the two ranks opened
  // and the other accepted; once every endpoint of this rank is wired, the connections its
  // peers opened to it are here. Bounded by kWireTime (or `deadline`), not an error: the
  // sockets accepted later get theirs from checkPeers. Without the progress thread (`wait`
  // false) the connections accepted so far only, and the rest from checkPeers: a peer done
  // with its own wiring then progresses no more until its first collective, and this rank
  // would wait the whole kWireTime (seen: 5.4 s at 4 ranks, 1 run of 3).
  void keepAcceptedConnections(Deadline deadline, bool wait) {
    const bool wanted = std::any_of(devices_.begin(), devices_.end(), [](const ucx::Device& d) {
      return d.context->acceptedKeepalive() && !d.worker->listeningPorts().empty();
    });
    if (!wanted) return;
    const Deadline until = std::min(deadline, Clock::now() + kWireTime);
    bool wired = allWired();
    while (wait && !wired) {
      if (Clock::now() >= until) {
        logf(LogLevel::Info,
             "ucx: rank %d: endpoints not wired within %.1f s; the connections accepted later "
             "get keepalive once they are (checkPeers)",
             rank_, std::chrono::duration<double>(kWireTime).count());
        break;
      }
      bool any = false;
      for (auto& worker : workers_) any = worker->progress() || any;
      if (!any) std::this_thread::sleep_for(std::chrono::microseconds(200));
      wired = allWired();
    }
    keepAcceptedSoFar();
    if (wired) {
      forgetWiring();
    } else {
      // Endpoints wired later (the progress thread off, or wiring slower than kWireTime)
      // bring connections accepted later: checkPeers sets those too, until all are wired.
      keepalivePending_ = true;
      nextKeepaliveScan_ = Clock::now();
    }
  }

  // The engine's peer check (every ~100 ms while a collective runs): keepalive on the
  // connections accepted since start-up, while some endpoint was not wired by then; the
  // scans (of this process's file descriptors) back off from 100 ms to 10 s, and the last
  // runs once every endpoint is wired.
  void checkPeers() override {
    if (!keepalivePending_ || Clock::now() < nextKeepaliveScan_) return;
    bool wired;
    {
      std::lock_guard lock(progress_->mutex());
      wired = allWired();
      if (wired) forgetWiring();
    }
    keepAcceptedSoFar();
    keepalivePending_ = !wired;
    keepaliveScanEvery_ = std::min<Clock::duration>(2 * keepaliveScanEvery_, kLongestScanGap);
    nextKeepaliveScan_ = Clock::now() + keepaliveScanEvery_;
  }

  bool allWired() {
    return std::all_of(channels_.begin(), channels_.end(),
                       [](auto& c) { return !c || c->wired(); });
  }
  void forgetWiring() {
    for (auto& c : channels_)
      if (c) c->forgetWiring();
  }

  // Keepalive on the UCX connections accepted so far that have none yet.
  void keepAcceptedSoFar() {
    // The peers' hosts; a peer on this host connects over loopback (UCX's tcp transport
    // listens on lo too).
    std::vector<std::string> hosts;
    for (const auto& h : peerHosts_) hosts.insert(hosts.end(), h.begin(), h.end());
    const std::vector<std::string> mine = net::hostAddresses();
    if (std::any_of(mine.begin(), mine.end(), [&](const std::string& a) {
          return std::find(hosts.begin(), hosts.end(), a) != hosts.end();
        })) {
      hosts.push_back("127.0.0.1");
      hosts.push_back("::1");
    }
    int set = 0;
    for (const ucx::Device& d : devices_)
      if (const auto& times = d.context->acceptedKeepalive())
        set += ucx::keepAccepted(d.worker->listeningPorts(), hosts, *times);
    logf(LogLevel::Trace, "ucx: rank %d: keepalive on %d accepted connections", rank_, set);
  }

  ucx::RecordSettings settings() const {
    return {config_.block,      config_.window, nranks_,
            config_.peerErrors, config_.paths,  config_.rendezvous};
  }

  // Cancels every receive, force-closes every endpoint (outstanding sends complete as
  // cancelled) and progresses until UCX has let go of our buffers, for at most kCloseTime;
  // then hands UCX what it still holds (UcxChannel::releaseRequests).
  void close() noexcept {
    if (progress_) progress_->stop();
    if (peerMemory_) peerMemory_->close();  // its keys and requests before the endpoints
    for (auto& c : channels_) {
      if (c) c->cancelReceives();
    }
    for (auto& c : channels_) {
      if (c) c->closeEndpoint();
    }
    const Deadline until = Clock::now() + kCloseTime;
    for (;;) {
      bool idle =
          std::all_of(channels_.begin(), channels_.end(), [](auto& c) { return !c || c->idle(); });
      if (idle || Clock::now() >= until) break;
      bool any = false;
      for (auto& worker : workers_) any = worker->progress() || any;
      if (!any) sched_yield();
    }
    for (auto& c : channels_) {
      if (c) c->releaseRequests();
    }
  }

  int rank_;
  int nranks_;
  ucx::UcxConfig config_;
  // Destroyed in reverse: the workers before the channels' registered memory, so no UCP
  // request can outlive the buffers it points into; the contexts last.
  std::vector<std::unique_ptr<ucx::Context>> contexts_;
  // One-sided access (ucx_peer_memory.hpp): its mappings go after the workers, before the
  // contexts.
  std::unique_ptr<ucx::UcxPeerMemory> peerMemory_;
  std::vector<std::unique_ptr<ucx::UcxChannel>> channels_;  // null for this rank
  std::vector<std::unique_ptr<ucx::Worker>> workers_;
  std::vector<ucx::Device> devices_;
  std::unique_ptr<ucx::Progress> progress_;  // stopped first: it uses the workers and channels
  // checkPeers's scans for connections accepted after start-up (keepAcceptedConnections).
  static constexpr Clock::duration kLongestScanGap = std::chrono::seconds(10);
  bool keepalivePending_ = false;
  Clock::time_point nextKeepaliveScan_{};
  Clock::duration keepaliveScanEvery_ = std::chrono::milliseconds(100);
  std::vector<std::vector<std::string>> peerHosts_;  // each peer's host addresses (its record)
  net::HostProbe hostProbe_;  // puts the connections it probes back to UCX's settings
};

}  // namespace

std::unique_ptr<Transport> makeUcxTransport(const TransportContext& ctx) {
  return std::make_unique<UcxTransport>(ctx);
}

}  // namespace chorus
