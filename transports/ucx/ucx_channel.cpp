#include "transports/ucx/ucx_channel.hpp"

#include "errors.hpp"
#include "settings/settings.hpp"

#include <algorithm>
#include <cstring>

namespace chorus::ucx {
namespace {

// Tag layout: bit 63 marks a credit, bits 40..62 the sending rank, bits 34..39 the path
// (endpoint) a piece went on, bits 0..33 the piece sequence (modulo 2^34; at most
// `window` pieces are ever outstanding). A data receive matches every path.
constexpr int kSeqBits = 34;
constexpr int kPathBits = 6;
constexpr int kRankShift = kSeqBits + kPathBits;
constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;
constexpr uint64_t kPathMask = ((uint64_t{1} << kPathBits) - 1) << kSeqBits;
constexpr uint64_t kCreditFlag = uint64_t{1} << 63;
constexpr ucp_tag_t kExact = ~ucp_tag_t{0};
constexpr ucp_tag_t kAnyPath = ~kPathMask;

ucp_tag_t dataTag(int sender, int path, uint64_t seq) {
  return (static_cast<uint64_t>(sender) << kRankShift) | (static_cast<uint64_t>(path) << kSeqBits) |
         (seq & kSeqMask);
}
int tagPath(ucp_tag_t tag) { return static_cast<int>((tag & kPathMask) >> kSeqBits); }
ucp_tag_t creditTag(int sender) {
  return kCreditFlag | (static_cast<uint64_t>(sender) << kRankShift);
}

constexpr int kCreditIn = 2;  // creditSlots_[kCreditIn] is the posted credit receive

std::vector<std::string> pathNames(int paths) {
  std::vector<std::string> names;
  for (int p = 0; p < paths; ++p) names.push_back("ep" + std::to_string(p));
  return names;
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
  return c;
}

UcxChannel::UcxChannel(const Context& context, Worker& worker, Progress& progress, int rank,
                       int peer, const std::string& peerAddress, const UcxConfig& config)
    : worker_(worker.get()),
      progress_(progress),
      rank_(rank),
      peer_(peer),
      block_(config.block),
      window_(static_cast<uint64_t>(config.window)),
      peerErrors_(config.peerErrors),
      closeRequests_(static_cast<size_t>(config.paths), nullptr),
      sendMemory_(context, config.block * window_),
      recvMemory_(context, config.block * window_),
      sendSlots_(window_),
      recvSlots_(window_),
      creditSlots_(3),
      links_(static_cast<size_t>(config.paths)),
      stats_(stripe::registerChannel("ucx", rank, peer, pathNames(config.paths))),
      scheduler_(config.paths),
      assembly_(config.paths, config.block),
      granted_(window_) {
  for (auto* slots : {&sendSlots_, &recvSlots_, &creditSlots_})
    for (Slot& s : *slots) s.owner = this;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peerAddress.data());
  params.err_mode = peerErrors_ ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  params.err_handler.cb = &UcxChannel::onEndpointError;
  params.err_handler.arg = this;
  // Each endpoint to the same worker is its own set of UCT connections: a path.
  for (int p = 0; p < config.paths; ++p) {
    ucp_ep_h ep = nullptr;
    ucs_status_t status = ucp_ep_create(worker_, &params, &ep);
    if (status != UCS_OK) {
      closeEndpoint();
      throwStatus("endpoint " + std::to_string(p) + " to rank " + std::to_string(peer), status);
    }
    eps_.push_back(ep);
  }
  // Nothing below throws: a failure is recorded and raised by the next trySend/peek.
  for (uint64_t seq = 0; seq < window_; ++seq) postReceive(seq);
  postCreditReceive();
}

void UcxChannel::progressLocked() {
  progress_.engineActive();
  ucp_worker_progress(worker_);
  flushCredit();
}

size_t UcxChannel::trySend(const void* data, size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  progressLocked();
  if (!failure_.empty()) throw PeerError(peer_, failure_);
  auto* from = static_cast<const std::byte*>(data);
  const auto now = Clock::now();
  size_t sent = 0;
  while (sent < bytes && sendSeq_ < granted_) {
    Slot& slot = sendSlots_[sendSeq_ % window_];
    if (slot.busy) break;  // the piece sent window pieces ago is still going out
    const size_t n = std::min(block_, bytes - sent);
    const int path = pickPath(n, now);
    std::byte* buffer = sendBuffer(sendSeq_);
    std::memcpy(buffer, from + sent, n);
    ucp_request_param_t param{};
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
    param.cb.send = &UcxChannel::onSent;
    param.user_data = &slot;
    param.memh = sendMemory_.handle();
    slot.path = path;
    slot.length = n;
    slot.posted = now;
    links_[path].inFlight += n;
    scheduler_.onWritten(path, n);
    ucs_status_ptr_t request =
        ucp_tag_send_nbx(eps_[path], buffer, n, dataTag(rank_, path, sendSeq_), &param);
    if (UCS_PTR_IS_ERR(request)) {
      fail("send to", UCS_PTR_STATUS(request));
      throw PeerError(peer_, failure_);
    }
    if (request != nullptr) {
      slot.busy = true;
      slot.request = request;
    } else {
      sendDone(slot);  // completed in place: no callback comes
    }
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
    const Slot& slot = recvSlots_[head_ % window_];
    return {recvBuffer(head_) + slot.offset, slot.length - slot.offset};
  }
  if (!failure_.empty()) throw PeerError(peer_, failure_);
  return {};
}

void UcxChannel::consume(size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  if (bytes == 0) return;
  Slot& slot = recvSlots_[head_ % window_];
  if (head_ >= placed_ || bytes > slot.length - slot.offset)
    throwInvalid("ucx: consume(" + std::to_string(bytes) + ") beyond the received data");
  slot.offset += bytes;
  consumed_ += bytes;
  if (slot.offset < slot.length) return;
  slot.length = slot.offset = 0;
  slot.path = -1;
  ++head_;
  postReceive(head_ + window_ - 1);
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
  reportDrained(Clock::now());
  // Report consumption every half window, so the sender never waits for a full round trip.
  if (head_ - credited_ < std::max<uint64_t>(1, window_ / 2) || !failure_.empty()) return;
  for (int i = 0; i < kCreditIn; ++i) {
    Slot& out = creditSlots_[i];
    if (out.busy) continue;
    out.credit = head_;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &UcxChannel::onSent;
    param.user_data = &out;
    ucs_status_ptr_t request =
        ucp_tag_send_nbx(eps_[0], &out.credit, sizeof(out.credit), creditTag(rank_), &param);
    if (UCS_PTR_IS_ERR(request)) {
      fail("credit to", UCS_PTR_STATUS(request));
      return;
    }
    if (request != nullptr) {
      out.busy = true;
      out.request = request;
    }
    credited_ = head_;
    return;
  }
  // Both credit slots are in flight: the next call sends the (cumulative) count.
}

int UcxChannel::pickPath(size_t bytes, Clock::time_point now) {
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
  // Every endpoint is usable: the stream's credits bound what is in flight, not the path.
  const uint64_t all = links_.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << links_.size()) - 1;
  return scheduler_.pick(bytes, all);
}

// Sends completed together drained their bytes in one busy interval: from the post of
// the first (or the endpoint's previous completion, whichever is later) to the report.
void UcxChannel::sendDone(Slot& slot) {
  Link& l = links_[slot.path];
  l.inFlight -= slot.length;
  if (l.doneBytes == 0) l.doneStart = std::max(slot.posted, l.lastDone);
  l.doneBytes += slot.length;
  slot.path = -1;
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

// Tag matching has put each piece in its slot; the pieces enter the assembly in sequence
// order (the order the sender cut them), each on the path its tag names.
void UcxChannel::placeArrived() {
  while (placed_ < head_ + window_ && failure_.empty()) {
    const Slot& slot = recvSlots_[placed_ % window_];
    if (slot.busy || slot.path < 0) return;  // not arrived yet
    const uint64_t begin = assembly_.contiguous();
    const char* why =
        slot.path >= assembly_.paths()
            ? "a piece on an endpoint the channel does not have"
            : assembly_.place(slot.path, begin, slot.length, consumed_ + window_ * block_);
    if (why)
      return failWith("rank " + std::to_string(peer_) + " sent " + why + " (" +
                      std::to_string(slot.length) + " bytes at stream offset " +
                      std::to_string(begin) + " on endpoint " + std::to_string(slot.path) + ")");
    stats_->paths[slot.path].received.fetch_add(slot.length, std::memory_order_relaxed);
    ++placed_;
  }
}

void UcxChannel::postReceive(uint64_t seq) {
  post(recvSlots_[seq % window_], recvBuffer(seq), block_, dataTag(peer_, 0, seq), kAnyPath, true);
}

void UcxChannel::postCreditReceive() {
  Slot& slot = creditSlots_[kCreditIn];
  post(slot, &slot.credit, sizeof(slot.credit), creditTag(peer_), kExact, false);
}

// Immediate completion is turned off: UCX then reports every receive through onReceived,
// possibly before ucp_tag_recv_nbx returns (some UCX versions leave recv_info unset on
// the immediate path, which would lose the length).
void UcxChannel::post(Slot& slot, void* buffer, size_t bytes, ucp_tag_t tag, ucp_tag_t mask,
                      bool registered) {
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  if (registered) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = recvMemory_.handle();
  }
  param.cb.recv = &UcxChannel::onReceived;
  param.user_data = &slot;
  slot.busy = true;
  slot.path = -1;
  ucs_status_ptr_t request = ucp_tag_recv_nbx(worker_, buffer, bytes, tag, mask, &param);
  if (UCS_PTR_IS_ERR(request)) {
    slot.busy = false;
    fail("receive from", UCS_PTR_STATUS(request));
  } else if (slot.busy) {
    slot.request = request;  // still outstanding (else onReceived has run and freed it)
  }
}

// Callbacks run inside ucp_worker_progress: they only record, never post.
void UcxChannel::onSent(void* request, ucs_status_t status, void* user) {
  auto* slot = static_cast<Slot*>(user);
  slot->busy = false;
  slot->request = nullptr;
  if (slot->path >= 0) slot->owner->sendDone(*slot);  // a piece (not a credit)
  if (status != UCS_OK) slot->owner->fail("send to", status);
  ucp_request_free(request);
}

void UcxChannel::onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                            void* user) {
  auto* slot = static_cast<Slot*>(user);
  slot->busy = false;
  slot->request = nullptr;
  if (status == UCS_OK) {
    slot->length = info->length;
    slot->path = tagPath(info->sender_tag);
  } else if (status != UCS_ERR_CANCELED) {
    slot->owner->fail("receive from", status);
  }
  ucp_request_free(request);
}

void UcxChannel::onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<UcxChannel*>(arg)->fail("connection to", status);
}

void UcxChannel::fail(const std::string& what, ucs_status_t status) {
  if (!failure_.empty()) return;
  failure_ =
      "ucx: " + what + " rank " + std::to_string(peer_) + " failed: " + ucs_status_string(status);
  if (status == UCS_ERR_CONNECTION_RESET || status == UCS_ERR_ENDPOINT_TIMEOUT ||
      status == UCS_ERR_UNREACHABLE)
    failure_ += " (rank " + std::to_string(peer_) + " died?)";
}

void UcxChannel::failWith(const std::string& why) {
  if (failure_.empty())
    failure_ = "ucx: connection to rank " + std::to_string(peer_) + " failed: " + why;
}

void UcxChannel::cancelReceives() {
  for (Slot& s : recvSlots_)
    if (s.request) ucp_request_cancel(worker_, s.request);
  if (void* r = creditSlots_[kCreditIn].request) ucp_request_cancel(worker_, r);
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

bool UcxChannel::idle() {
  for (const auto* slots : {&sendSlots_, &recvSlots_, &creditSlots_})
    for (const Slot& s : *slots)
      if (s.busy) return false;
  for (void*& request : closeRequests_) {
    if (!request) continue;
    if (ucp_request_check_status(request) == UCS_INPROGRESS) return false;
    ucp_request_free(request);
    request = nullptr;
  }
  return true;
}

std::byte* UcxChannel::sendBuffer(uint64_t seq) const {
  return sendMemory_.data() + (seq % window_) * block_;
}

std::byte* UcxChannel::recvBuffer(uint64_t seq) const {
  return recvMemory_.data() + (seq % window_) * block_;
}

}  // namespace chorus::ucx
