// The UCX transport: one UCP context and worker per communicator, a UcxChannel per peer
// (CHORUS_UCX_PATHS endpoints to its worker, striped: ucx_channel.hpp; worker addresses
// exchanged through the store), a wait that sleeps on the worker's event fd
// (ucp_worker_arm + poll) until the deadline, and a progress thread for the time the
// engine is away (ucx_progress.hpp).
#include "errors.hpp"
#include "settings/settings.hpp"
#include "store/store.hpp"
#include "transports/transport.hpp"
#include "transports/ucx/ucx_channel.hpp"
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
#include <vector>

namespace chorus {
namespace {

constexpr int kMaxRanks = 1 << 23;  // the rank field of a tag
// Sleeps are cut into slices this long, as insurance against a missed wake-up.
constexpr auto kWaitSlice = std::chrono::milliseconds(10);
constexpr auto kCloseTime = std::chrono::seconds(2);

class UcxTransport final : public Transport {
 public:
  explicit UcxTransport(const TransportContext& ctx)
      : rank_(ctx.rank),
        nranks_(ctx.nranks),
        config_(ucx::UcxConfig::fromEnv()),
        context_(std::max(1, ctx.nranks - 1) * config_.paths),
        worker_(context_),
        progress_(worker_, [this] {
          for (auto& c : channels_) {
            if (c) c->flushCredit();
          }
        }) {
    if (nranks_ > kMaxRanks) throwInvalid("ucx: at most 2^23 ranks");
    channels_.resize(nranks_);
    if (nranks_ == 1) return;
    if (ctx.store == nullptr) throwInvalid("ucx: no store to rendezvous through");
    ctx.store->set("ucx/" + std::to_string(rank_),
                   ucx::encodeRecord(settings(), worker_.address()));
    try {
      for (int p = 0; p < nranks_; ++p) {
        if (p == rank_) continue;
        std::string address = peerAddress(ctx, p);
        channels_[p] = std::make_unique<ucx::UcxChannel>(context_, worker_, progress_, rank_, p,
                                                         address, config_);
      }
    } catch (...) {
      close();
      throw;
    }
    // CHORUS_UCX_PROGRESS_THREAD=0 turns the thread off (to measure without it); bytes
    // then move only while the engine calls in.
    if (settings::boolean("CHORUS_UCX_PROGRESS_THREAD")) progress_.start();
  }

  ~UcxTransport() override { close(); }

  const char* name() const override { return "ucx"; }

  Channel& channel(int peer) override {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      throwInvalid("ucx: no channel from rank " + std::to_string(rank_) + " to rank " +
                   std::to_string(peer));
    return *channels_[peer];
  }

  // ucp_worker_arm refuses to arm while events are pending, so nothing that arrives after
  // the engine's last pass is lost: no token needed.
  uint64_t prepareWait() override { return 0; }

  void wait(uint64_t, Deadline deadline) override {
    const Deadline until = std::min(deadline, Clock::now() + kWaitSlice);
    progress_.engineActive(until);  // the progress thread stays out meanwhile
    ucs_status_t status = UCS_ERR_BUSY;
    {
      std::lock_guard lock(progress_.mutex());
      if (!progress_.drain()) status = ucp_worker_arm(worker_.get());
    }
    if (status == UCS_OK) {
      sleep(until);
      std::lock_guard lock(progress_.mutex());
      progress_.drain();
    } else if (status != UCS_ERR_BUSY) {
      ucx::throwStatus("ucp_worker_arm", status);
    }
    // An error on a channel no step is using is not raised here: a peer that finished and
    // left, or one whose keepalive timed out while it waited on a stopped rank, is not the
    // cause of anything yet. Deaths come from the store; the engine asks the chain of waits
    // before it names a peer whose channel failed (Engine::rootCause).
  }

 private:
  std::string peerAddress(const TransportContext& ctx, int peer) {
    std::vector<std::byte> value;
    try {
      value = ctx.store->get("ucx/" + std::to_string(peer), ctx.deadline);
    } catch (const Error& e) {
      throw Error(e.code(), "ucx: rank " + std::to_string(rank_) +
                                " got no worker address from rank " + std::to_string(peer) +
                                " (never started?): " + e.what());
    }
    return ucx::decodeRecord(value, peer, rank_, settings());
  }

  ucx::RecordSettings settings() const {
    return {config_.block, config_.window, nranks_, config_.peerErrors, config_.paths};
  }

  void sleep(Deadline until) {
    auto left = std::max(until - Clock::now(), Clock::duration::zero());
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    pollfd fd{worker_.eventFd(), POLLIN, 0};
    if (::ppoll(&fd, 1, &ts, nullptr) < 0 && errno != EINTR) throwSystemError("ucx: poll");
  }

  // Cancels every receive, force-closes every endpoint (outstanding sends complete as
  // cancelled) and progresses until UCX has let go of our buffers, for at most kCloseTime.
  void close() noexcept {
    progress_.stop();
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
      if (!worker_.progress()) sched_yield();
    }
  }

  int rank_;
  int nranks_;
  ucx::UcxConfig config_;
  // Destroyed in reverse: the worker before the channels' registered memory, so no UCP
  // request can outlive the buffers it points into; the context last.
  ucx::Context context_;
  std::vector<std::unique_ptr<ucx::UcxChannel>> channels_;  // null for this rank
  ucx::Worker worker_;
  ucx::Progress progress_;  // stopped first: it uses the worker and the channels
};

}  // namespace

std::unique_ptr<Transport> makeUcxTransport(const TransportContext& ctx) {
  return std::make_unique<UcxTransport>(ctx);
}

}  // namespace chorus
