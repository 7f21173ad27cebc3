#include "transports/ucx/ucx_channel.hpp"

#include "errors.hpp"
#include "settings/settings.hpp"

#include <algorithm>
#include <cstring>

namespace chorus::ucx {
namespace {

// Tag layout: bit 63 marks a credit, bits 40..62 the sending rank, bits 34..39 the path
// (endpoint) a piece went on, bits 17..33 the piece's stream sequence and bits 0..16 its
// rail sequence (both modulo 2^17; at most `window` <= 1024 pieces are ever outstanding, so
// the receiver recovers the stream sequence from the window it expects). A data receive
// matches the rank and the rail sequence, whatever the path and stream sequence.
constexpr int kSeqBits = 17;
constexpr int kPathBits = 6;
constexpr int kPathShift = 2 * kSeqBits;
constexpr int kRankShift = kPathShift + kPathBits;
constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;
constexpr uint64_t kPathMask = ((uint64_t{1} << kPathBits) - 1) << kPathShift;
constexpr uint64_t kStreamSeqMask = kSeqMask << kSeqBits;
constexpr uint64_t kCreditFlag = uint64_t{1} << 63;
constexpr ucp_tag_t kExact = ~ucp_tag_t{0};
constexpr ucp_tag_t kRailSeqOnly = ~(kPathMask | kStreamSeqMask);
static_assert(kRankShift + 23 == 63, "23 bits of rank (the transport's limit) below the flag");
static_assert((uint64_t{1} << kSeqBits) > 1024, "the largest window fits the sequence fields");

ucp_tag_t dataTag(int sender, int path, uint64_t railSeq, uint64_t streamSeq) {
  return (static_cast<uint64_t>(sender) << kRankShift) |
         (static_cast<uint64_t>(path) << kPathShift) | ((streamSeq & kSeqMask) << kSeqBits) |
         (railSeq & kSeqMask);
}
int tagPath(ucp_tag_t tag) { return static_cast<int>((tag & kPathMask) >> kPathShift); }
uint64_t tagStreamSeq(ucp_tag_t tag) { return (tag & kStreamSeqMask) >> kSeqBits; }
// Control tags (bit 63 set): bits 38..39 say which (0 a credit, 1 a rendezvous answer, 2
// a rendezvous chunk); a chunk's tag carries its transfer's number (bits 18..37, modulo
// 2^20: one transfer at a time in each direction) and the chunk's (bits 0..17).
constexpr int kKindShift = 38;
constexpr uint64_t kAnswerKind = uint64_t{1} << kKindShift;
constexpr uint64_t kChunkKind = uint64_t{2} << kKindShift;
constexpr int kChunkBits = 18;
constexpr uint64_t kChunkMask = (uint64_t{1} << kChunkBits) - 1;
constexpr uint64_t kTransferMask = (uint64_t{1} << (kKindShift - kChunkBits)) - 1;
static_assert(kKindShift + 2 <= kRankShift, "the kind sits below the rank");

ucp_tag_t creditTag(int sender) {
  return kCreditFlag | (static_cast<uint64_t>(sender) << kRankShift);
}
ucp_tag_t answerTag(int sender) { return creditTag(sender) | kAnswerKind; }
ucp_tag_t chunkTag(int sender, uint64_t transfer, uint64_t chunk) {
  return creditTag(sender) | kChunkKind | ((transfer & kTransferMask) << kChunkBits) |
         (chunk & kChunkMask);
}

constexpr int kCreditIn = 2;    // creditSlots_[kCreditIn] is the posted credit receive
constexpr int kAnswersOut = 2;  // answerSlots_[kAnswersOut] is the posted answer receive

// "ep<k>" with one unnamed device, else "<device>:<k>" ("<device>@<rail>:<k>" where two
// rails have the same device, "ucx<rail>:<k>" for an unnamed one).
std::vector<std::string> pathNames(std::span<const Device> devices, int rails, int pathsPerRail) {
  std::vector<std::string> names;
  const bool plain = rails == 1 && devices[0].name.empty();
  for (int r = 0; r < rails; ++r) {
    const std::string& device = devices[static_cast<size_t>(r)].name;
    int same = 0;
    for (int q = 0; q < rails; ++q) same += devices[static_cast<size_t>(q)].name == device;
    std::string rail = device.empty() ? "ucx" + std::to_string(r)
                       : same > 1     ? device + "@" + std::to_string(r)
                                      : device;
    for (int k = 0; k < pathsPerRail; ++k)
      names.push_back(plain ? "ep" + std::to_string(k) : rail + ":" + std::to_string(k));
  }
  return names;
}

int railsFor(std::span<const Device> devices, const std::vector<std::string>& peerAddresses) {
  if (devices.empty() || peerAddresses.empty())
    throwInvalid("ucx: a channel needs a device on both sides");
  return static_cast<int>(std::min(devices.size(), peerAddresses.size()));
}

}  // namespace

UcxConfig UcxConfig::fromEnv() {
  UcxConfig c;
  int64_t block = settings::integer("CHORUS_UCX_BLOCK");
  c.block = static_cast<size_t>(std::clamp<int64_t>((block + 7) & ~int64_t{7}, 8, 64 << 20));
  c.window = static_cast<int>(std::clamp<int64_t>(settings::integer("CHORUS_UCX_WINDOW"), 2, 1024));
  c.paths = static_cast<int>(
      std::clamp<int64_t>(settings::integer("CHORUS_UCX_PATHS"), 1, int64_t{1} << kPathBits));
  std::string mode = settings::text("CHORUS_UCX_ERR_MODE");
  if (mode != "peer" && mode != "none")
    throwInvalid("CHORUS_UCX_ERR_MODE='" + mode + "': expected peer or none");
  c.peerErrors = mode == "peer";
  c.rendezvous = settings::bytes("CHORUS_UCX_RNDV_BYTES");
  c.bounce = settings::bytes("CHORUS_UCX_BOUNCE");
  c.keepalive = settings::duration("CHORUS_KEEPALIVE");
  return c;
}

UcxChannel::UcxChannel(std::span<const Device> devices, Progress& progress, int rank, int peer,
                       const std::vector<std::string>& peerAddresses, const UcxConfig& config)
    : progress_(progress),
      rank_(rank),
      peer_(peer),
      block_(config.block),
      window_(static_cast<uint64_t>(config.window)),
      peerErrors_(config.peerErrors),
      pathsPerRail_(config.paths),
      sendSlots_(window_),
      arrived_(window_, nullptr),
      creditSlots_(3),
      links_(static_cast<size_t>(railsFor(devices, peerAddresses) * config.paths)),
      stats_(stripe::registerChannel(
          "ucx", rank, peer,
          pathNames(devices, static_cast<int>(links_.size()) / config.paths, config.paths))),
      scheduler_(static_cast<int>(links_.size())),
      assembly_(static_cast<int>(links_.size()), config.block),
      granted_(window_),
      rendezvous_(config.rendezvous),
      answerSlots_(kAnswersOut + 1),
      landSlots_(kRendezvousDepth),
      bounceLimit_(config.rendezvous > 0 ? config.bounce : 0),
      putSlots_(kRendezvousDepth) {
  const int rails = static_cast<int>(links_.size()) / pathsPerRail_;
  if (links_.size() > (size_t{1} << kPathBits))
    throwInvalid("ucx: at most " + std::to_string(1 << kPathBits) +
                 " endpoints per peer (devices x CHORUS_UCX_PATHS)");
  closeRequests_.assign(links_.size(), nullptr);
  rails_.resize(static_cast<size_t>(rails));
  for (int r = 0; r < rails; ++r) {
    const Device& d = devices[static_cast<size_t>(r)];
    Rail& rail = rails_[static_cast<size_t>(r)];
    rail.worker = d.worker->get();
    rail.sendMemory = std::make_unique<MappedMemory>(*d.context, config.block * window_);
    rail.recvMemory = std::make_unique<MappedMemory>(*d.context, config.block * window_);
    rail.recvSlots.resize(window_);
  }
  for (Rail& rail : rails_)
    for (Slot& s : rail.recvSlots) s.owner = this;
  for (auto* slots : {&sendSlots_, &creditSlots_, &answerSlots_, &landSlots_, &putSlots_})
    for (Slot& s : *slots) s.owner = this;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.err_mode = peerErrors_ ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  params.err_handler.cb = &UcxChannel::onEndpointError;
  params.err_handler.arg = this;
  // Each endpoint to the same worker is its own set of UCT connections: a path.
  for (size_t p = 0; p < links_.size(); ++p) {
    const size_t r = p / static_cast<size_t>(pathsPerRail_);
    params.address = reinterpret_cast<const ucp_address_t*>(peerAddresses[r].data());
    ucp_ep_h ep = nullptr;
    ucs_status_t status = ucp_ep_create(rails_[r].worker, &params, &ep);
    if (status != UCS_OK) {
      closeEndpoint();
      throwStatus("endpoint " + std::to_string(p) + " to rank " + std::to_string(peer), status);
    }
    eps_.push_back(ep);
  }
  // Nothing below throws: a failure is recorded and raised by the next trySend/peek.
  for (int r = 0; r < rails; ++r)
    for (uint64_t seq = 0; seq < window_; ++seq) postReceive(r, seq);
  postCreditReceive();
  if (rendezvous_ > 0) postAnswerReceive();
}

void UcxChannel::progressLocked() {
  progress_.engineActive();
  for (Rail& rail : rails_) ucp_worker_progress(rail.worker);
  flushCredit();
}

size_t UcxChannel::trySend(const void* data, size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  progressLocked();
  if (!failure_.empty()) throwFailure();
  auto* from = static_cast<const std::byte*>(data);
  const auto now = Clock::now();
  size_t sent = 0;
  while (sent < bytes && sendSeq_ < granted_) {
    Slot& slot = sendSlots_[sendSeq_ % window_];
    if (slot.busy) break;  // the piece sent window pieces ago is still going out
    const size_t n = std::min(block_, bytes - sent);
    const int path = pickPath(n, now, firstPaths(links_.size()));
    Rail& rail = rails_[static_cast<size_t>(path / pathsPerRail_)];
    std::byte* buffer = rail.sendMemory->data() + (sendSeq_ % window_) * block_;
    std::memcpy(buffer, from + sent, n);
    if (!sendOnPath(slot, path, buffer, n, dataTag(rank_, path, rail.sent++, sendSeq_),
                    rail.sendMemory->handle(), "send to", now))
      throwFailure();
    stats_->paths[path].sent.fetch_add(n, std::memory_order_relaxed);
    ++sendSeq_;
    sent += n;
  }
  return sent;
}

std::span<const std::byte> UcxChannel::peek() {
  std::lock_guard lock(progress_.mutex());
  progressLocked();
  if (head_ < placed_) {
    const Slot& slot = *arrived_[head_ % window_];
    return {recvBuffer(slot) + slot.offset, slot.length - slot.offset};
  }
  if (!failure_.empty()) throwFailure();
  return {};
}

void UcxChannel::consume(size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  if (bytes == 0) return;
  if (head_ >= placed_)
    throwInvalid("ucx: consume(" + std::to_string(bytes) + ") beyond the received data");
  Slot& slot = *arrived_[head_ % window_];
  if (bytes > slot.length - slot.offset)
    throwInvalid("ucx: consume(" + std::to_string(bytes) + ") beyond the received data");
  slot.offset += bytes;
  consumed_ += bytes;
  if (slot.offset < slot.length) return;
  // Consumption is in stream order, so each rail's pieces go in rail order too: the slot
  // takes the rail sequence a window later.
  arrived_[head_ % window_] = nullptr;
  slot.length = slot.offset = 0;
  slot.path = -1;
  ++head_;
  postReceive(slot.rail, slot.railSeq + window_);
  flushCredit();
}

void UcxChannel::flushCredit() {
  Slot& in = creditSlots_[kCreditIn];
  while (!in.busy && in.length > 0) {  // a credit arrived: take it, listen for the next
    granted_ = std::max(granted_, in.credit + window_);
    in.length = 0;
    postCreditReceive();
  }
  placeArrived();
  if (rendezvous_ > 0) takeRendezvous();
  reportDrained(Clock::now());
  // Report consumption every half window, so the sender never waits for a full round trip.
  if (head_ - credited_ < std::max<uint64_t>(1, window_ / 2) || !failure_.empty()) return;
  for (int i = 0; i < kCreditIn; ++i) {
    Slot& out = creditSlots_[i];
    if (out.busy) continue;
    out.credit = head_;
    if (!postSend(out, eps_[0], &out.credit, sizeof(out.credit), creditTag(rank_), nullptr,
                  "credit to"))
      return;
    credited_ = head_;
    return;
  }
  // Both credit slots are in flight: the next call sends the (cumulative) count.
}

uint64_t UcxChannel::firstPaths(size_t n) {
  return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

int UcxChannel::pickPath(size_t bytes, Clock::time_point now, uint64_t paths) {
  for (size_t p = 0; p < links_.size(); ++p)
    scheduler_.onBacklog(static_cast<int>(p), links_[p].inFlight, now);
  if (now - lastPublish_ >= stripe::PathScheduler::kRateWindow) {
    lastPublish_ = now;
    for (int p = 0; p < scheduler_.paths(); ++p) {
      stats_->paths[p].weightPpm.store(static_cast<uint32_t>(scheduler_.weight(p) * 1e6),
                                       std::memory_order_relaxed);
      stats_->paths[p].rate.store(static_cast<uint64_t>(scheduler_.rate(p)),
                                  std::memory_order_relaxed);
    }
  }
  // Every endpoint asked for is usable: the stream's credits (or the engine's one-sided
  // calls) bound what is in flight, not the path.
  return scheduler_.pick(bytes, paths);
}

// Sends completed together drained their bytes in one busy interval: from the post of
// the first (or the endpoint's previous completion, whichever is later) to the report.
void UcxChannel::sendDone(Slot& slot) {
  linkDone(slot.path, slot.length, slot.posted);
  slot.path = -1;
}

bool UcxChannel::sendOnPath(Slot& slot, int path, const void* buffer, size_t bytes, ucp_tag_t tag,
                            ucp_mem_h memh, const char* what, Clock::time_point now) {
  slot.path = path;
  slot.length = bytes;
  slot.posted = now;
  linkPosted(path, bytes);
  if (!postSend(slot, eps_[static_cast<size_t>(path)], buffer, bytes, tag, memh, what))
    return false;
  if (!slot.busy) sendDone(slot);  // completed in place: no callback comes
  return true;
}

void UcxChannel::linkPosted(int path, size_t bytes) {
  links_[static_cast<size_t>(path)].inFlight += bytes;
  scheduler_.onWritten(path, bytes);
}

void UcxChannel::linkDone(int path, size_t bytes, Clock::time_point posted) {
  Link& l = links_[static_cast<size_t>(path)];
  l.inFlight -= bytes;
  if (l.doneBytes == 0) l.doneStart = std::max(posted, l.lastDone);
  l.doneBytes += bytes;
}

void UcxChannel::reportDrained(Clock::time_point now) {
  for (size_t p = 0; p < links_.size(); ++p) {
    Link& l = links_[p];
    if (l.doneBytes == 0) continue;
    if (failure_.empty()) scheduler_.onDrained(static_cast<int>(p), l.doneBytes, now - l.doneStart);
    l.doneBytes = 0;
    l.lastDone = now;
  }
}

// Tag matching has put each piece in a slot of its rail and arrived() has recorded it by
// stream sequence; the pieces enter the assembly in sequence order (the order the sender
// cut them), each on the path its tag names.
void UcxChannel::placeArrived() {
  while (placed_ < head_ + window_ && failure_.empty()) {
    const Slot* slot = arrived_[placed_ % window_];
    if (slot == nullptr || slot->seq != placed_) return;  // not arrived yet
    const uint64_t begin = assembly_.contiguous();
    const char* why =
        assembly_.place(slot->path, begin, slot->length, consumed_ + window_ * block_);
    if (why)
      return failWith("rank " + std::to_string(peer_) + " sent " + why + " (" +
                      std::to_string(slot->length) + " bytes at stream offset " +
                      std::to_string(begin) + " on endpoint " + std::to_string(slot->path) + ")");
    stats_->paths[slot->path].received.fetch_add(slot->length, std::memory_order_relaxed);
    ++placed_;
  }
}

// Runs in a receive's completion callback: records where the piece goes, posts nothing.
// The sender sends sequence s only below (what we consumed) + window, and we have not
// consumed it: s is the one sequence in [head_, head_ + window) with the tag's low bits.
void UcxChannel::arrived(Slot& slot, ucp_tag_t tag) {
  slot.path = tagPath(tag);
  slot.seq = head_ + ((tagStreamSeq(tag) - head_) & kSeqMask);
  // The error's text is built only on a failure: this runs for every piece.
  auto refuse = [&](const std::string& what) {
    failWith("rank " + std::to_string(peer_) + " sent " + what + " (rail " +
             std::to_string(slot.rail) + ", stream sequence " + std::to_string(slot.seq) + ")");
  };
  if (slot.path >= assembly_.paths() || slot.path / pathsPerRail_ != slot.rail)
    return refuse("a piece on endpoint " + std::to_string(slot.path) +
                  ", which is not on the rail it arrived on");
  if (slot.seq >= head_ + window_ || arrived_[slot.seq % window_] != nullptr)
    return refuse("a piece outside its credit or twice");
  arrived_[slot.seq % window_] = &slot;
}

void UcxChannel::postReceive(int rail, uint64_t railSeq) {
  Rail& r = rails_[static_cast<size_t>(rail)];
  Slot& slot = r.recvSlots[railSeq % window_];
  slot.rail = rail;
  slot.railSeq = railSeq;
  post(slot, r.worker, r.recvMemory->data() + (railSeq % window_) * block_, block_,
       dataTag(peer_, 0, railSeq, 0), kRailSeqOnly, r.recvMemory->handle());
}

void UcxChannel::postCreditReceive() {
  Slot& slot = creditSlots_[kCreditIn];
  post(slot, rails_[0].worker, &slot.credit, sizeof(slot.credit), creditTag(peer_), kExact,
       nullptr);
}

void UcxChannel::postAnswerReceive() {
  Slot& slot = answerSlots_[kAnswersOut];
  slot.received = false;
  post(slot, rails_[0].worker, slot.answer, sizeof(slot.answer), answerTag(peer_), kExact, nullptr);
}

// Immediate completion is turned off: UCX then reports every receive through onReceived,
// possibly before ucp_tag_recv_nbx returns (some UCX versions leave recv_info unset on
// the immediate path, which would lose the length).
void UcxChannel::post(Slot& slot, ucp_worker_h worker, void* buffer, size_t bytes, ucp_tag_t tag,
                      ucp_tag_t mask, ucp_mem_h memh) {
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  if (memh != nullptr) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = memh;
  }
  param.cb.recv = &UcxChannel::onReceived;
  param.user_data = &slot;
  slot.busy = true;
  slot.path = -1;
  ucs_status_ptr_t request = ucp_tag_recv_nbx(worker, buffer, bytes, tag, mask, &param);
  if (UCS_PTR_IS_ERR(request)) {
    slot.busy = false;
    fail("receive from", UCS_PTR_STATUS(request));
  } else if (slot.busy) {
    slot.request = request;  // still outstanding (else onReceived has run and freed it)
  }
}

bool UcxChannel::postSend(Slot& slot, ucp_ep_h ep, const void* buffer, size_t bytes, ucp_tag_t tag,
                          ucp_mem_h memh, const char* what) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  if (memh != nullptr) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = memh;
  }
  param.cb.send = &UcxChannel::onSent;
  param.user_data = &slot;
  ucs_status_ptr_t request = ucp_tag_send_nbx(ep, buffer, bytes, tag, &param);
  if (UCS_PTR_IS_ERR(request)) {
    fail(what, UCS_PTR_STATUS(request));
    return false;
  }
  if (request != nullptr) {
    slot.busy = true;
    slot.request = request;
  }
  return true;
}

// Callbacks run inside ucp_worker_progress: they only record, never post.
void UcxChannel::onSent(void* request, ucs_status_t status, void* user) {
  auto* slot = static_cast<Slot*>(user);
  slot->busy = false;
  slot->request = nullptr;
  if (slot->path >= 0) slot->owner->sendDone(*slot);  // a piece (not a credit)
  if (status != UCS_OK) slot->owner->fail("send to", status);
  if (!slot->owner->released_) ucp_request_free(request);
}

void UcxChannel::onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                            void* user) {
  auto* slot = static_cast<Slot*>(user);
  slot->busy = false;
  slot->request = nullptr;
  if (status == UCS_OK) {
    slot->length = info->length;
    slot->received = true;
    if (slot->rail >= 0)  // a piece (not a credit)
      slot->owner->arrived(*slot, info->sender_tag);
  } else if (status != UCS_ERR_CANCELED) {
    slot->owner->fail("receive from", status);
  }
  if (!slot->owner->released_) ucp_request_free(request);
}

void UcxChannel::onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<UcxChannel*>(arg)->fail("connection to", status);
}

void UcxChannel::fail(const std::string& what, ucs_status_t status) {
  if (!failure_.empty()) return;
  failure_ =
      "ucx: " + what + " rank " + std::to_string(peer_) + " failed: " + ucs_status_string(status);
  // A dead process's host resets its connections; a host that is down or cut off (or this
  // one: a cut node's ranks lose their links to each other too) answers nothing.
  const std::string who = "rank " + std::to_string(peer_);
  // UCX's tcp transport times an endpoint out when the socket's keepalive or resends went
  // unacknowledged (ETIMEDOUT), which a stopped process's kernel would still acknowledge.
  if (status == UCS_ERR_UNREACHABLE)
    failure_ += " (" + who + " cannot be reached: no route to its host)";
  else if (status == UCS_ERR_ENDPOINT_TIMEOUT)
    failure_ += " (" + who + " cannot be reached: its host stopped answering)";
  else if (status == UCS_ERR_CONNECTION_RESET)
    failure_ += " (" + who + " died?)";
  unreachable_ = status == UCS_ERR_UNREACHABLE || status == UCS_ERR_ENDPOINT_TIMEOUT;
}

void UcxChannel::throwFailure() const {
  // A host that does not answer is named as such here: the diagnosis need not say it again.
  if (unreachable_) throw PeerError::unreachable(peer_, failure_);
  throw PeerError(peer_, failure_);
}

void UcxChannel::oneSidedCheck() {
  progressLocked();
  if (!failure_.empty()) throwFailure();
}

int UcxChannel::pickOneSided(size_t bytes, int rails) {
  const size_t paths = static_cast<size_t>(std::clamp(rails, 1, this->rails()) * pathsPerRail_);
  const int path = pickPath(bytes, Clock::now(), firstPaths(paths));
  linkPosted(path, bytes);
  return path;
}

void UcxChannel::oneSidedDone(int path, size_t bytes, Clock::time_point posted, bool read) {
  linkDone(path, bytes, posted);
  auto& counter = read ? stats_->paths[path].read : stats_->paths[path].written;
  counter.fetch_add(bytes, std::memory_order_relaxed);
}

void UcxChannel::oneSidedFailed(const std::string& doing, ucs_status_t status) {
  fail(doing, status);
  throwFailure();
}

void UcxChannel::failWith(const std::string& why) {
  if (failure_.empty())
    failure_ = "ucx: connection to rank " + std::to_string(peer_) + " failed: " + why;
}

void UcxChannel::cancelReceives() {
  for (Rail& rail : rails_)
    for (Slot& s : rail.recvSlots)
      if (s.request) ucp_request_cancel(rail.worker, s.request);
  if (void* r = creditSlots_[kCreditIn].request) ucp_request_cancel(rails_[0].worker, r);
  if (void* r = answerSlots_[kAnswersOut].request) ucp_request_cancel(rails_[0].worker, r);
  cancelLandings();
}

void UcxChannel::cancelLandings() {
  for (const Slot& s : landSlots_)
    if (s.request) ucp_request_cancel(rails_[static_cast<size_t>(s.chunkRail)].worker, s.request);
}

void UcxChannel::closeEndpoint() {
  if (eps_.empty() || !eps_[0]) return;
  if (failure_.empty()) failure_ = "ucx: the channel to rank " + std::to_string(peer_) + " closed";
  stripe::logChannelReport(*stats_);
  // A forced close needs peer error handling on both sides; without it, flush and close
  // (bounded by the transport's close deadline).
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = peerErrors_ ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  for (size_t p = 0; p < eps_.size(); ++p) {
    if (!eps_[p]) continue;
    ucs_status_ptr_t request = ucp_ep_close_nbx(eps_[p], &param);
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) closeRequests_[p] = request;
    eps_[p] = nullptr;
  }
}

template <class Visit>
bool UcxChannel::everySlot(Visit visit) {
  for (auto* slots : {&sendSlots_, &creditSlots_, &answerSlots_, &landSlots_, &putSlots_})
    for (Slot& s : *slots)
      if (!visit(s)) return false;
  for (Rail& rail : rails_)
    for (Slot& s : rail.recvSlots)
      if (!visit(s)) return false;
  return true;
}

bool UcxChannel::idle() {
  if (!everySlot([](const Slot& s) { return !s.busy; })) return false;
  for (void*& request : closeRequests_) {
    if (!request) continue;
    if (ucp_request_check_status(request) == UCS_INPROGRESS) return false;
    ucp_request_free(request);
    request = nullptr;
  }
  return true;
}

void UcxChannel::releaseRequests() {
  released_ = true;  // their callbacks may still run (as the worker goes): they only record
  auto release = [](void*& request) {
    if (request) ucp_request_free(request);
    request = nullptr;
  };
  everySlot([&](Slot& s) {
    release(s.request);
    return true;
  });
  for (void*& request : closeRequests_) release(request);
  forgetWiring();
}

bool UcxChannel::wired() {
  if (!wiringStarted_) {
    wiringStarted_ = true;
    ucp_request_param_t param{};
    for (ucp_ep_h ep : eps_) {
      if (!ep) continue;
      ucs_status_ptr_t request = ucp_ep_flush_nbx(ep, &param);
      if (request != nullptr && !UCS_PTR_IS_ERR(request)) wireRequests_.push_back(request);
    }
  }
  std::erase_if(wireRequests_, [](void* request) {
    if (ucp_request_check_status(request) == UCS_INPROGRESS) return false;
    ucp_request_free(request);
    return true;
  });
  return wireRequests_.empty();
}

void UcxChannel::forgetWiring() {
  for (void* request : wireRequests_) ucp_request_free(request);  // UCX's once it completes
  wireRequests_.clear();
}

// Rendezvous (DirectTransfer). Everything below takes the progress mutex, as trySend does.

void UcxChannel::sending() {
  std::lock_guard lock(progress_.mutex());
  ++sendTransfer_;
}

void UcxChannel::receiving() {
  std::lock_guard lock(progress_.mutex());
  ++recvTransfer_;
}

size_t UcxChannel::chunkBytes(size_t transferBytes) const {
  constexpr size_t kAlign = 4096;
  const size_t pieces = 2 * eps_.size();
  const size_t share = (transferBytes / pieces + kAlign - 1) / kAlign * kAlign;
  const size_t chunk = std::max(share, kRendezvousChunk);
  return std::max(chunk, (transferBytes >> 16) + 1);
}

size_t UcxChannel::chunkRail(uint64_t transfer, uint64_t chunk) const {
  return (transfer + chunk) % rails_.size();
}

bool UcxChannel::landingBusy() const {
  for (const Slot& s : landSlots_)
    if (s.busy) return true;
  return false;
}

// Receiver: posts the receives of the first chunks into the destination (before the
// answer goes, so they do not arrive unexpected), then answers.
bool UcxChannel::offer(const LocalRegion* region, std::byte* data, size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  progressLocked();
  if (!failure_.empty()) throwFailure();
  if (landingBusy()) return false;  // a withdrawn transfer's receives are still cancelling
  Slot* out = nullptr;
  for (int i = 0; i < kAnswersOut && !out; ++i)
    if (!answerSlots_[i].busy) out = &answerSlots_[i];
  if (!out) return false;
  if (region) {
    landing_ = true;
    landData_ = data;
    landBytes_ = bytes;
    landChunkBytes_ = chunkBytes(bytes);
    landChunks_ = (bytes + landChunkBytes_ - 1) / landChunkBytes_;
    landFront_ = landPosted_ = 0;
    landed_ = 0;
    postLandings();
    if (!failure_.empty()) throwFailure();
  }
  out->answer[0] = recvTransfer_;
  out->answer[1] = region ? bytes : 0;
  if (!postSend(*out, eps_[0], out->answer, sizeof(out->answer), answerTag(rank_), nullptr,
                "rendezvous answer to"))
    throwFailure();
  return true;
}

std::byte* UcxChannel::bounce(size_t bytes) {
  if (bytes > bounceLimit_) return nullptr;
  if (bounceSize_ < bytes) {
    if (landing_ || landingBusy())
      throw Error(Result::InternalError,
                  "ucx: the bounce buffer grows while a transfer from rank " +
                      std::to_string(peer_) + " lands in it");
    bounce_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    bounceSize_ = bytes;
    bounceRegion_.base = bounce_.get();
    bounceRegion_.bytes = bytes;
  }
  return bounce_.get();
}

bool UcxChannel::offerBounce(size_t bytes) {
  std::byte* data = bounce(bytes);
  if (!data)
    throw Error(Result::InternalError, "ucx: a bounce buffer of " + std::to_string(bytes) +
                                           " bytes offered to rank " + std::to_string(peer_) +
                                           " (CHORUS_UCX_BOUNCE=" + std::to_string(bounceLimit_) +
                                           ")");
  return offer(&bounceRegion_, data, bytes);
}

// Chunk c lands at c * landChunkBytes_, posted on its rail's worker (where the sender's
// endpoints on that rail deliver), kRendezvousDepth chunks ahead of the first not landed.
void UcxChannel::postLandings() {
  while (landPosted_ < landChunks_ && landPosted_ < landFront_ + kRendezvousDepth &&
         failure_.empty()) {
    const uint64_t chunk = landPosted_++;
    Slot& slot = landSlots_[chunk % kRendezvousDepth];
    slot.received = false;
    slot.length = 0;
    slot.seq = chunk;
    slot.chunkRail = static_cast<int>(chunkRail(recvTransfer_, chunk));
    const size_t at = chunk * landChunkBytes_;
    post(slot, rails_[static_cast<size_t>(slot.chunkRail)].worker, landData_ + at,
         std::min(landChunkBytes_, landBytes_ - at), chunkTag(peer_, recvTransfer_, chunk), kExact,
         nullptr);
  }
}

// Called with the mutex held after each progress pass: answers that arrived join answers_,
// and landed chunks move the landing's front on (each freed slot takes the next chunk).
void UcxChannel::takeRendezvous() {
  Slot& in = answerSlots_[kAnswersOut];
  while (!in.busy && in.received && failure_.empty()) {
    if (in.length != sizeof(in.answer) || in.answer[0] == 0)
      return failWith("rank " + std::to_string(peer_) + " sent a malformed rendezvous answer");
    answers_.push_back({in.answer[0], in.answer[1]});
    postAnswerReceive();
  }
  while (landing_ && landFront_ < landChunks_ && failure_.empty()) {
    Slot& slot = landSlots_[landFront_ % kRendezvousDepth];
    if (slot.busy || !slot.received) return;  // the front chunk has not landed yet
    slot.received = false;
    const size_t want = std::min(landChunkBytes_, landBytes_ - landed_);
    if (slot.length != want)
      return failWith("rank " + std::to_string(peer_) + " sent " + std::to_string(slot.length) +
                      " bytes as chunk " + std::to_string(landFront_) +
                      " of a rendezvous transfer, expected " + std::to_string(want));
    landed_ += want;
    ++landFront_;
    postLandings();
  }
}

size_t UcxChannel::landedPrefix() {
  std::lock_guard lock(progress_.mutex());
  progressLocked();
  if (!failure_.empty()) throwFailure();  // a dead sender ends the wait
  return landing_ ? landed_ : 0;
}

bool UcxChannel::landed(size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  progressLocked();
  if (!failure_.empty()) throwFailure();
  if (!landing_ || landed_ < landBytes_) return false;
  if (landed_ != bytes) {
    failWith("rank " + std::to_string(peer_) + " sent " + std::to_string(landed_) +
             " bytes of a rendezvous transfer that expected " + std::to_string(bytes));
    throwFailure();
  }
  landing_ = false;
  return true;
}

// The sender drops the answer (the data keeps the stream) and sends no chunk: the
// receive is cancelled; offer() waits for the cancellation before posting another.
void UcxChannel::withdraw() {
  std::lock_guard lock(progress_.mutex());
  if (landing_) cancelLandings();
  landing_ = false;
}

DirectTransfer::Answer UcxChannel::answer() {
  std::lock_guard lock(progress_.mutex());
  progressLocked();
  if (!failure_.empty()) throwFailure();
  // Answers to earlier transfers were for offers that said the data keeps the stream.
  while (!answers_.empty() && answers_.front().transfer < sendTransfer_) answers_.pop_front();
  if (answers_.empty()) return Answer::None;
  if (answers_.front().transfer != sendTransfer_) {
    failWith("rank " + std::to_string(peer_) + " answered rendezvous transfer " +
             std::to_string(answers_.front().transfer) + " while this rank sends transfer " +
             std::to_string(sendTransfer_));
    throwFailure();
  }
  if (answers_.front().bytes > 0) return Answer::Accepted;
  answers_.pop_front();
  return Answer::Refused;
}

// Chunks on the grid of chunkBytes (the last may be shorter): a source that becomes ready a
// little at a time waits until a chunk's worth is; a chunk waits for the send
// kRendezvousDepth chunks before it.
size_t UcxChannel::put(const LocalRegion&, const std::byte* data, size_t from, size_t to) {
  std::lock_guard lock(progress_.mutex());
  progressLocked();
  if (!failure_.empty()) throwFailure();
  if (answers_.empty() || answers_.front().bytes == 0 || answers_.front().transfer != sendTransfer_)
    throw Error(Result::InternalError, "ucx: a rendezvous put to rank " + std::to_string(peer_) +
                                           " without an accepted answer");
  if (from != putPosted_)
    throw Error(Result::InternalError, "ucx: a rendezvous put to rank " + std::to_string(peer_) +
                                           " from byte " + std::to_string(from) + " after " +
                                           std::to_string(putPosted_) + " were posted");
  const size_t total = answers_.front().bytes;  // all of it written: no streamed ends
  if (to > total)
    throw Error(Result::InternalError, "ucx: putting " + std::to_string(to) + " bytes into the " +
                                           std::to_string(total) + " bytes rank " +
                                           std::to_string(peer_) + " offered");
  if (putChunk_ == 0) putChunkBytes_ = chunkBytes(total);
  const auto now = Clock::now();
  while (putPosted_ < to) {
    const size_t end = std::min(putPosted_ + putChunkBytes_, total);
    Slot& slot = putSlots_[putChunk_ % kRendezvousDepth];
    if (end > to || slot.busy) break;
    const size_t n = end - putPosted_;
    const int rail = static_cast<int>(chunkRail(sendTransfer_, putChunk_));
    const int path =
        pickPath(n, now, firstPaths(static_cast<size_t>(pathsPerRail_)) << (rail * pathsPerRail_));
    if (!sendOnPath(slot, path, data + putPosted_, n, chunkTag(rank_, sendTransfer_, putChunk_),
                    nullptr, "rendezvous send to", now))
      throwFailure();
    stats_->paths[path].direct.fetch_add(n, std::memory_order_relaxed);
    ++putChunk_;
    putPosted_ = end;
  }
  return putPosted_;
}

bool UcxChannel::putDone(size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  progressLocked();
  if (!failure_.empty()) throwFailure();
  if (putPosted_ < bytes) return false;
  for (const Slot& s : putSlots_)
    if (s.busy) return false;
  answers_.pop_front();
  putPosted_ = 0;
  putChunk_ = 0;
  return true;
}

std::byte* UcxChannel::recvBuffer(const Slot& slot) const {
  return rails_[static_cast<size_t>(slot.rail)].recvMemory->data() +
         (slot.railSeq % window_) * block_;
}

}  // namespace chorus::ucx
