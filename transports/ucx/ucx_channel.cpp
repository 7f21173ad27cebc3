#include "transports/ucx/ucx_channel.hpp"

#include "errors.hpp"
#include "settings/settings.hpp"

#include <algorithm>
#include <cstring>

namespace chorus::ucx {
namespace {

// Tag layout: bit 63 marks a credit, bits 40..62 the sending rank, bits 0..39 the block
// sequence (modulo 2^40; at most `window` blocks are ever outstanding).
constexpr int kSeqBits = 40;
constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;
constexpr uint64_t kCreditFlag = uint64_t{1} << 63;
constexpr ucp_tag_t kExact = ~ucp_tag_t{0};

ucp_tag_t dataTag(int sender, uint64_t seq) {
  return (static_cast<uint64_t>(sender) << kSeqBits) | (seq & kSeqMask);
}
ucp_tag_t creditTag(int sender) {
  return kCreditFlag | (static_cast<uint64_t>(sender) << kSeqBits);
}

constexpr int kCreditIn = 2;  // creditSlots_[kCreditIn] is the posted credit receive

}  // namespace

UcxConfig UcxConfig::fromEnv() {
  UcxConfig c;
  int64_t block = settings::integer("CHORUS_UCX_BLOCK");
  c.block = static_cast<size_t>(std::clamp<int64_t>((block + 7) & ~int64_t{7}, 8, 64 << 20));
  c.window = static_cast<int>(std::clamp<int64_t>(settings::integer("CHORUS_UCX_WINDOW"), 2, 1024));
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
      sendMemory_(context, config.block * window_),
      recvMemory_(context, config.block * window_),
      sendSlots_(window_),
      recvSlots_(window_),
      creditSlots_(3),
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
  ucs_status_t status = ucp_ep_create(worker_, &params, &ep_);
  if (status != UCS_OK) throwStatus("endpoint to rank " + std::to_string(peer), status);
  // Nothing below throws: a failure is recorded and raised by the next trySend/peek.
  for (uint64_t seq = 0; seq < window_; ++seq) postReceive(seq);
  postCreditReceive();
}

size_t UcxChannel::trySend(const void* data, size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  progress_.engineActive();
  ucp_worker_progress(worker_);
  flushCredit();
  if (!failure_.empty()) throw PeerError(peer_, failure_);
  auto* from = static_cast<const std::byte*>(data);
  size_t sent = 0;
  while (sent < bytes && sendSeq_ < granted_) {
    Slot& slot = sendSlots_[sendSeq_ % window_];
    if (slot.busy) break;  // the block sent window blocks ago is still going out
    size_t n = std::min(block_, bytes - sent);
    std::byte* buffer = sendBuffer(sendSeq_);
    std::memcpy(buffer, from + sent, n);
    ucp_request_param_t param{};
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
    param.cb.send = &UcxChannel::onSent;
    param.user_data = &slot;
    param.memh = sendMemory_.handle();
    ucs_status_ptr_t request = ucp_tag_send_nbx(ep_, buffer, n, dataTag(rank_, sendSeq_), &param);
    if (UCS_PTR_IS_ERR(request)) {
      fail("send to", UCS_PTR_STATUS(request));
      throw PeerError(peer_, failure_);
    }
    if (request != nullptr) {
      slot.busy = true;
      slot.request = request;
    }
    ++sendSeq_;
    sent += n;
  }
  return sent;
}

std::span<const std::byte> UcxChannel::peek() {
  std::lock_guard lock(progress_.mutex());
  progress_.engineActive();
  ucp_worker_progress(worker_);
  flushCredit();
  const Slot& slot = recvSlots_[head_ % window_];
  if (slot.length > slot.offset)
    return {recvBuffer(head_) + slot.offset, slot.length - slot.offset};
  if (!failure_.empty()) throw PeerError(peer_, failure_);
  return {};
}

void UcxChannel::consume(size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  Slot& slot = recvSlots_[head_ % window_];
  if (bytes > slot.length - slot.offset)
    throwInvalid("ucx: consume(" + std::to_string(bytes) + ") beyond the received data");
  slot.offset += bytes;
  if (slot.length == 0 || slot.offset < slot.length) return;
  slot.length = slot.offset = 0;
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
        ucp_tag_send_nbx(ep_, &out.credit, sizeof(out.credit), creditTag(rank_), &param);
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

void UcxChannel::postReceive(uint64_t seq) {
  post(recvSlots_[seq % window_], recvBuffer(seq), block_, dataTag(peer_, seq), true);
}

void UcxChannel::postCreditReceive() {
  Slot& slot = creditSlots_[kCreditIn];
  post(slot, &slot.credit, sizeof(slot.credit), creditTag(peer_), false);
}

// Immediate completion is turned off: UCX then reports every receive through onReceived,
// possibly before ucp_tag_recv_nbx returns (some UCX versions leave recv_info unset on
// the immediate path, which would lose the length).
void UcxChannel::post(Slot& slot, void* buffer, size_t bytes, ucp_tag_t tag, bool registered) {
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
  ucs_status_ptr_t request = ucp_tag_recv_nbx(worker_, buffer, bytes, tag, kExact, &param);
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
  if (status != UCS_OK) slot->owner->fail("send to", status);
  ucp_request_free(request);
}

void UcxChannel::onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                            void* user) {
  auto* slot = static_cast<Slot*>(user);
  slot->busy = false;
  slot->request = nullptr;
  if (status == UCS_OK)
    slot->length = info->length;
  else if (status != UCS_ERR_CANCELED)
    slot->owner->fail("receive from", status);
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

void UcxChannel::cancelReceives() {
  for (Slot& s : recvSlots_)
    if (s.request) ucp_request_cancel(worker_, s.request);
  if (void* r = creditSlots_[kCreditIn].request) ucp_request_cancel(worker_, r);
}

void UcxChannel::closeEndpoint() {
  if (!ep_) return;
  if (failure_.empty()) failure_ = "ucx: the channel to rank " + std::to_string(peer_) + " closed";
  // A forced close needs peer error handling on both sides; without it, flush and close
  // (bounded by the transport's close deadline).
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = peerErrors_ ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t request = ucp_ep_close_nbx(ep_, &param);
  if (request != nullptr && !UCS_PTR_IS_ERR(request)) closeRequest_ = request;
  ep_ = nullptr;
}

bool UcxChannel::idle() {
  for (const auto* slots : {&sendSlots_, &recvSlots_, &creditSlots_})
    for (const Slot& s : *slots)
      if (s.busy) return false;
  if (closeRequest_ && ucp_request_check_status(closeRequest_) == UCS_INPROGRESS) return false;
  if (closeRequest_) {
    ucp_request_free(closeRequest_);
    closeRequest_ = nullptr;
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
