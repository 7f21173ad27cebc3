#include "transports/ib/ib_channel.hpp"

#include "errors.hpp"
#include "memory/shared_memory.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace chorus::ib {
namespace {

// wr_id: kind in the top byte, QP index in the low 16 bits; a receive: its control slot in
// bits 16-31; a stream or rendezvous write: its length in bits 16-55; a read: the ticket
// in the low 32 bits, its QP in bits 32-47 (its length in oneSidedLengths_); a PeerWrite's
// as a read's.
enum Kind : uint64_t {
  kData = 1,
  kGrant = 2,
  kRecv = 3,
  kRead = 4,  // low half: the ticket
  kPut = 5,
  kAnswer = 6,
  kProbe = 7,     // a zero-length write on the probe QP
  kPeerWrite = 8  // one-sided (PeerMemory::write): as kRead
};
uint64_t wrId(Kind k, int q) { return (static_cast<uint64_t>(k) << 56) | static_cast<uint16_t>(q); }
uint64_t wrId(Kind k, int q, size_t bytes) {
  return wrId(k, q) | static_cast<uint64_t>(bytes) << 16;
}
uint64_t wrBytes(uint64_t id) { return (id >> 16) & ((uint64_t{1} << 40) - 1); }

std::vector<std::string> qpNames(const std::vector<IbDevice*>& rails, int qps) {
  std::vector<std::string> names;
  for (int q = 0; q < qps; ++q)
    names.push_back(rails[q % rails.size()]->name() + ":qp" + std::to_string(q));
  return names;
}

}  // namespace

IbChannel::IbChannel(int rank, int peer, const std::vector<IbDevice*>& rails,
                     const IbConfig& config, const std::vector<ibv_comp_channel*>& events)
    : rank_(rank),
      peer_(peer),
      device_(*rails.at(0)),
      config_(config),
      block_(config.block),
      ring_(config.ring),
      dataLimit_(std::max(1, config.sendDepth - 2)),
      rails_(rails.size()),
      stats_(stripe::registerChannel("ib", rank, peer, qpNames(rails, config.qps))),
      scheduler_(config.qps),
      assembly_(config.qps, config.block),
      pieces_(config.qps, std::min<uint64_t>(config.block, kMaxPiece)) {
  if (ring_ > kMaxPiece || ring_ % block_ != 0)  // offsets in imm_data; no write wraps
    throwInvalid("ib: a ring of " + std::to_string(ring_) + " bytes in blocks of " +
                 std::to_string(block_));
  recvRing_ = device_.pool().get(ring_);
  sendRing_ = device_.pool().get(ring_);
  control_ =
      device_.pool().get(static_cast<size_t>(config.recvDepth + config.sendDepth) * kControlSlot);
  const int nrails = static_cast<int>(rails.size());
  for (int r = 0; r < nrails; ++r) {
    Rail& rail = rails_[r];
    rail.device = rails[r];
    const int qpsHere = (config.qps - r + nrails - 1) / nrails;  // QPs r, r + R, ...
    const int cqe = std::min(rail.device->attr().max_cqe,
                             std::max(1, qpsHere) * (config.sendDepth + config.recvDepth) +
                                 (r == 0 ? kMostProbes + 1 : 0));  // rail 0: the probe QP too
    rail.cq = ibv_create_cq(rail.device->context(), cqe, this, events.at(r), 0);
    if (!rail.cq)
      throwSystemError("ib: ibv_create_cq(" + std::to_string(cqe) + ") on " + rail.device->name() +
                       " for rank " + std::to_string(peer));
    if (r == 0) {
      rail.recvKey = recvRing_.rkey();
      rail.sendKey = sendRing_.lkey();
      continue;
    }
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    rail.recvMr = ibv_reg_mr(rail.device->pd(), recvRing_.data(), ring_, access);
    rail.sendMr = ibv_reg_mr(rail.device->pd(), sendRing_.data(), ring_, IBV_ACCESS_LOCAL_WRITE);
    if (!rail.recvMr || !rail.sendMr)
      throwSystemError("ib: registering the rings of rank " + std::to_string(peer) + " on " +
                       rail.device->name());
    rail.recvKey = rail.recvMr->rkey;
    rail.sendKey = rail.sendMr->lkey;
  }
  std::random_device rd;
  links_.resize(config.qps);
  for (int q = 0; q < config.qps; ++q) {
    links_[q].rail = q % nrails;
    Rail& rail = rails_[links_[q].rail];
    links_[q].qp = createQp(*rail.device, rail.cq, config);
    links_[q].psn = rd() & 0xffffff;
    for (int i = 0; i < config.recvDepth; ++i) postRecv(q, static_cast<uint32_t>(i));
  }
  IbConfig probeConfig = config;  // kMostProbes writes in flight, no receives
  probeConfig.sendDepth = kMostProbes;
  probeConfig.recvDepth = 1;
  probeQp_ = createQp(*rails_[0].device, rails_[0].cq, probeConfig);
  probePsn_ = rd() & 0xffffff;
  if (!failure_.empty()) throw Error(Result::SystemError, failure_);
}

void IbChannel::stopQps() noexcept {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  for (auto& l : links_)
    if (l.qp) ibv_modify_qp(l.qp, &attr, IBV_QP_STATE);
  if (probeQp_) ibv_modify_qp(probeQp_, &attr, IBV_QP_STATE);
}

IbChannel::~IbChannel() {
  stripe::logChannelReport(*stats_);
  stopQps();
  for (auto& l : links_)
    if (l.qp) ibv_destroy_qp(l.qp);
  if (probeQp_) ibv_destroy_qp(probeQp_);
  landTargets_.clear();
  dropBounce();  // once no QP can write into it
  for (auto& r : rails_) {
    if (r.cq) ibv_destroy_cq(r.cq);
    if (r.recvMr) ibv_dereg_mr(r.recvMr);
    if (r.sendMr) ibv_dereg_mr(r.sendMr);
  }
}

PeerInfo IbChannel::localInfo() const {
  PeerInfo p;
  p.from = rank_;
  p.to = peer_;
  p.ethernet = device_.ethernet();
  p.block = block_;
  p.ring = ring_;
  p.ringAddr = reinterpret_cast<uint64_t>(recvRing_.data());
  p.rendezvous = config_.rendezvous;
  for (const Rail& r : rails_) {
    RailAddress a;
    std::memcpy(a.gid, r.device->gid().raw, 16);
    a.lid = r.device->lid();
    a.mtu = static_cast<uint8_t>(r.device->mtu());
    a.rkey = r.recvKey;
    p.rails.push_back(a);
  }
  for (const auto& l : links_) p.qps.push_back({l.qp->qp_num, l.psn});
  p.qps.push_back({probeQp_->qp_num, probePsn_});  // the probe QP last
  return p;
}

void IbChannel::connect(const PeerInfo& remote) {
  if (remote.from != peer_ || remote.to != rank_)
    throw Error(Result::InvalidUsage,
                "ib: rank " + std::to_string(rank_) +
                    " got a connection record meant for another pair from rank " +
                    std::to_string(peer_));
  if (remote.qps.size() != links_.size() + 1 || remote.block != block_ || remote.ring != ring_ ||
      remote.rails.size() != rails_.size() || remote.rendezvous != config_.rendezvous ||
      static_cast<bool>(remote.ethernet) != device_.ethernet()) {
    throw Error(Result::InvalidUsage,
                "ib: rank " + std::to_string(peer_) +
                    " uses CHORUS_IB_QPS_PER_CONNECTION=" + std::to_string(remote.qps.size() - 1) +
                    " CHORUS_IB_BLOCK=" + std::to_string(remote.block) +
                    " CHORUS_IB_BUFFER=" + std::to_string(remote.ring) +
                    " CHORUS_IB_RNDV_BYTES=" + std::to_string(remote.rendezvous) + " " +
                    std::to_string(remote.rails.size()) + " rail(s) (CHORUS_IB_HCA)" +
                    (remote.ethernet ? " on RoCE" : " on InfiniBand") + " but rank " +
                    std::to_string(rank_) + " uses " + std::to_string(links_.size()) + ", " +
                    std::to_string(block_) + ", " + std::to_string(ring_) + ", " +
                    std::to_string(config_.rendezvous) + ", " + std::to_string(rails_.size()) +
                    (device_.ethernet() ? " on RoCE" : " on InfiniBand"));
  }
  remoteAddr_ = remote.ringAddr;
  for (size_t r = 0; r < rails_.size(); ++r) rails_[r].remoteKey = remote.rails[r].rkey;
  for (size_t q = 0; q < links_.size(); ++q) {
    const int r = links_[q].rail;
    connectQp(links_[q].qp, *rails_[r].device, config_, links_[q].psn, remote.ethernet != 0,
              remote.rails[r], remote.qps[q], peer_);
  }
  connectQp(probeQp_, *rails_[0].device, config_, probePsn_, remote.ethernet != 0, remote.rails[0],
            remote.qps.back(), peer_);
  lastAnswer_ = Clock::now();
}

void IbChannel::probe(bool on) {
  probing_ = on;
  if (on) probeIfDue(Clock::now());
}

void IbChannel::probeIfDue(Clock::time_point now) {
  if (!probing_ || probeBroken_ || !probeQp_ || now - lastProbe_ < std::chrono::seconds(1) ||
      probes_.size() >= kMostProbes)
    return;
  // No bytes: no local buffer, and the peer's ring (its key on rail 0) is not touched.
  ibv_send_wr wr{};
  wr.wr_id = wrId(kProbe, 0);
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remoteAddr_;
  wr.wr.rdma.rkey = rails_[0].remoteKey;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(probeQp_, &wr, &bad) != 0) {
    probeBroken_ = true;  // the QP is in error: what it had posted stays unanswered
    return;
  }
  lastProbe_ = now;
  probes_.push_back(now);
}

// Success: the peer's HCA acknowledged the write (and every one before it). Retry
// exceeded: nobody answered, and what was posted after it is flushed unsent: all stay
// unanswered. Any other error is the peer's HCA refusing: an answer (the probe QP is broken
// either way).
void IbChannel::probeDone(ibv_wc_status status, Clock::time_point now) {
  if (status == IBV_WC_SUCCESS) {
    if (!probes_.empty()) probes_.pop_front();
    lastAnswer_ = now;
    return;
  }
  probeBroken_ = true;
  if (status == IBV_WC_RETRY_EXC_ERR || status == IBV_WC_WR_FLUSH_ERR) return;
  probes_.clear();
  lastAnswer_ = now;
}

std::optional<PeerSilence> IbChannel::silence() {
  // A channel no step uses is progressed only here: without it its probes stopped at the
  // first (never three in a row: a cut-off host never named) and a live host's answers were
  // never reaped (named silent after a second). Its own failure is its data QPs' to tell.
  progress();
  const auto now = Clock::now();
  const auto unanswered = std::count_if(probes_.begin(), probes_.end(), [&](auto posted) {
    return now - posted >= std::chrono::seconds(1);
  });
  if (unanswered == 0) return std::nullopt;
  return PeerSilence{std::chrono::duration_cast<std::chrono::milliseconds>(now - lastAnswer_),
                     static_cast<int>(unanswered)};
}

size_t IbChannel::trySend(const void* data, size_t bytes) {
  progress();
  if (!failure_.empty()) throw PeerError(peer_, failure_);
  auto* p = static_cast<const std::byte*>(data);
  size_t sent = 0;
  while (sent < bytes) {
    // The staging bytes at this offset went out `ring_` bytes ago; the peer granted them
    // back, so their write has completed and the slot is free.
    const uint64_t room = ring_ - (sendPos_ - remoteConsumed_);
    if (room == 0) break;
    const size_t len = std::min<uint64_t>({bytes - sent, blockEnd(sendPos_) - sendPos_, room});
    const int q = pickQp(len, rails_.size());
    if (q < 0) break;
    const uint64_t offset = sendPos_ % ring_;  // ring_ is a multiple of block_: no wrap inside
    std::memcpy(sendRing_.data() + offset, p + sent, len);
    const Rail& rail = rails_[links_[q].rail];
    postWrite(q, wrId(kData, q, len), sendRing_.data() + offset, len, rail.sendKey,
              remoteAddr_ + offset, rail.remoteKey, static_cast<uint32_t>(offset));
    if (!failure_.empty()) throw PeerError(peer_, failure_);
    posted(q, len);
    stats_->paths[q].sent.fetch_add(len, std::memory_order_relaxed);
    sendPos_ += len;
    sent += len;
  }
  return sent;
}

std::span<const std::byte> IbChannel::peek() {
  progress();
  const uint64_t end = received();
  if (end == consumed_) {
    if (!failure_.empty()) throw PeerError(peer_, failure_);
    return {};
  }
  const uint64_t offset = consumed_ % ring_;
  return {recvRing_.data() + offset,
          static_cast<size_t>(std::min(end - consumed_, ring_ - offset))};
}

void IbChannel::consume(size_t bytes) {
  if (bytes > received() - consumed_)
    throwInvalid("ib: consume(" + std::to_string(bytes) + ") beyond the received data");
  consumed_ += bytes;
  if (consumed_ - granted_ >= ring_ / 4) flushCredits();
}

void IbChannel::flushCredits() {
  if (consumed_ == granted_ || !failure_.empty() || links_[0].outstanding >= config_.sendDepth)
    return;  // a full queue: the next flush (before the engine sleeps) retries
  ibv_send_wr wr{};
  wr.wr_id = wrId(kGrant, 0);
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(static_cast<uint32_t>(consumed_ - granted_));  // <= ring_ < 2 GiB
  post(0, wr);
  if (failure_.empty()) granted_ = consumed_;
}

void IbChannel::flushBeforeSleep() {
  if (grantBeforeSleep(received() - granted_, ring_)) flushCredits();
}

bool IbChannel::progress() {
  if (probing_) probeIfDue(Clock::now());
  bool any = false;
  for (Rail& rail : rails_) any = progressRail(rail) || any;
  return any;
}

bool IbChannel::progressRail(Rail& rail) {
  ibv_wc wc[32];
  bool any = false;
  for (;;) {
    int n = ibv_poll_cq(rail.cq, 32, wc);
    if (n < 0) fail("ibv_poll_cq failed");
    if (n <= 0) return any;
    any = true;
    const auto now = Clock::now();
    for (int i = 0; i < n; ++i) {
      const Kind kind = static_cast<Kind>(wc[i].wr_id >> 56);
      if (kind == kProbe) {
        probeDone(wc[i].status, now);
        continue;
      }
      if (wc[i].status == IBV_WC_SUCCESS) lastAnswer_ = now;  // acknowledged, or arrived
      const uint32_t low = static_cast<uint32_t>(wc[i].wr_id & 0xffffffff);
      const bool oneSided = kind == kRead || kind == kPeerWrite;
      const int q = oneSided ? static_cast<int>((wc[i].wr_id >> 32) & 0xffff)
                             : static_cast<int>(low & 0xffff);
      if (kind != kRecv) --links_[q].outstanding;
      if (oneSided) {
        const auto len = oneSidedLengths_.extract(low);
        if (!len.empty()) {
          drained(q, len.mapped());
          if (wc[i].status == IBV_WC_SUCCESS)
            (kind == kRead ? stats_->paths[q].read : stats_->paths[q].written)
                .fetch_add(len.mapped(), std::memory_order_relaxed);
        }
      }
      if (kind == kPut) --putsInFlight_;
      if (kind == kData || kind == kPut) drained(q, wrBytes(wc[i].wr_id));
      if (wc[i].status != IBV_WC_SUCCESS) {
        std::string why = std::string(ibv_wc_status_str(wc[i].status)) + " on QP " +
                          std::to_string(q) + " (vendor error " + std::to_string(wc[i].vendor_err) +
                          ")";
        if (wc[i].status == IBV_WC_RETRY_EXC_ERR || wc[i].status == IBV_WC_RNR_RETRY_EXC_ERR)
          why += ": rank " + std::to_string(peer_) +
                 " stopped acknowledging (dead or unreachable?" +
                 " CHORUS_IB_TIMEOUT=" + std::to_string(config_.timeout) +
                 " CHORUS_IB_RETRY_CNT=" + std::to_string(config_.retryCnt) + ")";
        fail(why);
        continue;
      }
      if (oneSided) oneSidedDone_.push_back(low);
      if (kind != kRecv) continue;
      const uint32_t imm = ntohl(wc[i].imm_data);
      const uint32_t slot = low >> 16;
      if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        if (isPiece(imm)) {
          if (const char* why = pieces_.land(q, imm, wc[i].byte_len))
            fail("rank " + std::to_string(peer_) + " wrote a rendezvous piece that cannot land: " +
                 why + " (" + std::to_string(wc[i].byte_len) + " bytes at offset " +
                 std::to_string(immediateOffset(imm)) + " mod 2^31 on QP " + std::to_string(q) +
                 ")");
        } else
          blockArrived(q, ringOffset(imm), wc[i].byte_len);
      } else if (wc[i].opcode == IBV_WC_RECV && (wc[i].wc_flags & IBV_WC_WITH_IMM)) {
        remoteConsumed_ += imm;
      } else if (wc[i].opcode == IBV_WC_RECV) {
        auto a = parseAnswer(control_.data() + slot * kControlSlot, wc[i].byte_len);
        if (!a)
          fail("a malformed rendezvous answer (" + std::to_string(wc[i].byte_len) + " bytes)");
        else
          answers_.push_back(*a);
      }
      postRecv(q, slot);
    }
    reportDrained(now);
  }
}

bool IbChannel::postRead(void* local, uint64_t remote, const ReadKeys* keys, size_t rails,
                         uint32_t len, uint32_t ticket) {
  return postOneSided(IBV_WR_RDMA_READ, local, remote, keys, rails, len, ticket) >= 0;
}

bool IbChannel::postPeerWrite(const void* local, uint64_t remote, const ReadKeys* keys,
                              size_t rails, uint32_t len, uint32_t ticket, int* qp) {
  // The verbs API takes a non-const address for either direction; a WRITE only reads it.
  *qp = postOneSided(IBV_WR_RDMA_WRITE, const_cast<void*>(local), remote, keys, rails, len, ticket);
  return *qp >= 0;
}

bool IbChannel::postFlushRead(int qp, void* local, uint64_t remote, const ReadKeys* keys,
                              uint32_t ticket) {
  return postOneSided(IBV_WR_RDMA_READ, local, remote, keys, kRendezvousRails, 1, ticket, qp) >= 0;
}

int IbChannel::postOneSided(ibv_wr_opcode opcode, void* local, uint64_t remote,
                            const ReadKeys* keys, size_t rails, uint32_t len, uint32_t ticket,
                            int onQp) {
  progress();
  if (!failure_.empty()) throw PeerError(peer_, failure_);
  const int q = onQp >= 0 ? (links_[onQp].outstanding < dataLimit_ ? onQp : -1)
                          : pickQp(len, std::min(rails, putRails()));
  if (q < 0) return -1;
  const ReadKeys& k = keys[links_[q].rail];
  ibv_sge sge{reinterpret_cast<uint64_t>(local), len, k.lkey};
  ibv_send_wr wr{};
  const Kind kind = opcode == IBV_WR_RDMA_READ ? kRead : kPeerWrite;
  wr.wr_id = wrId(kind, 0) | static_cast<uint64_t>(q) << 32 | ticket;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = k.rkey;
  post(q, wr);
  if (!failure_.empty()) throw PeerError(peer_, failure_);
  oneSidedLengths_[ticket] = len;
  posted(q, len);
  return q;
}

bool IbChannel::oneSidedDone(uint32_t ticket) {
  auto it = std::find(oneSidedDone_.begin(), oneSidedDone_.end(), ticket);
  if (it == oneSidedDone_.end()) {
    progress();
    it = std::find(oneSidedDone_.begin(), oneSidedDone_.end(), ticket);
  }
  if (it != oneSidedDone_.end()) {
    oneSidedDone_.erase(it);
    return true;
  }
  // A failed read or write (or anything else failing this connection) ends the wait.
  if (!failure_.empty()) throw PeerError(peer_, failure_);
  return false;
}

void IbChannel::arm() {
  for (Rail& rail : rails_)
    if (ibv_req_notify_cq(rail.cq, 0) != 0) fail("ibv_req_notify_cq failed");
}

void IbChannel::checkAsyncFailures() {
  if (!failure_.empty()) return;
  for (const Rail& rail : rails_)
    if (std::string port = rail.device->portFailure(); !port.empty()) return fail(port);
  for (size_t q = 0; q < links_.size(); ++q) {
    const IbDevice& device = *rails_[links_[q].rail].device;
    if (std::string why = device.qpFailure(links_[q].qp->qp_num); !why.empty())
      return fail("asynchronous event " + why + " on QP " + std::to_string(q));
  }
}

// Writes land in the ring or a rendezvous destination and grants carry no data, so only
// QP 0's receives have a buffer: a control slot for the peer's rendezvous answers.
void IbChannel::postRecv(int q, uint32_t slot) {
  ibv_recv_wr wr{};
  wr.wr_id = wrId(kRecv, q) | (static_cast<uint64_t>(slot) << 16);
  ibv_sge sge{reinterpret_cast<uint64_t>(control_.data() + slot * kControlSlot),
              static_cast<uint32_t>(kControlSlot), control_.lkey()};
  if (q == 0) {
    wr.sg_list = &sge;
    wr.num_sge = 1;
  }
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_recv(links_[q].qp, &wr, &bad) != 0) fail("ibv_post_recv failed");
}

void IbChannel::post(int q, ibv_send_wr& wr) {
  ibv_send_wr* bad = nullptr;
  int err = ibv_post_send(links_[q].qp, &wr, &bad);
  if (err != 0) return fail(std::string("ibv_post_send failed: ") + std::strerror(err));
  ++links_[q].outstanding;
}

void IbChannel::postWrite(int q, uint64_t id, const void* local, size_t bytes, uint32_t lkey,
                          uint64_t remoteAddr, uint32_t rkey, uint32_t immediate) {
  ibv_sge sge{reinterpret_cast<uint64_t>(local), static_cast<uint32_t>(bytes), lkey};
  ibv_send_wr wr{};
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(immediate);
  wr.wr.rdma.remote_addr = remoteAddr;
  wr.wr.rdma.rkey = rkey;
  post(q, wr);
}

int IbChannel::pickQp(size_t bytes, size_t rails) {
  const auto now = Clock::now();
  uint64_t usable = 0;
  for (size_t q = 0; q < links_.size(); ++q) {
    const Link& l = links_[q];
    scheduler_.onBacklog(static_cast<int>(q), l.inFlight, now);
    if (l.outstanding < dataLimit_ && static_cast<size_t>(l.rail) < rails)
      usable |= uint64_t{1} << q;
  }
  if (now - lastPublish_ >= stripe::PathScheduler::kRateWindow) publishWeights(now);
  return scheduler_.pick(bytes, usable);
}

void IbChannel::posted(int q, size_t bytes) {
  links_[q].inFlight += bytes;
  links_[q].posts.push_back(Clock::now());
  scheduler_.onWritten(q, bytes);
}

// A QP's completions reaped together drained their bytes in one busy interval: from the
// post of the first (or the QP's previous completion, whichever is later) to now. That
// is its drain rate even where writes are sparse (a latency-bound collective), which
// backlog readings taken only when sending cannot measure.
void IbChannel::drained(int q, size_t bytes) {
  Link& l = links_[q];
  l.inFlight -= bytes;
  if (l.posts.empty()) return;
  if (l.doneBytes == 0) l.doneStart = std::max(l.posts.front(), l.lastDone);
  l.posts.pop_front();
  l.doneBytes += bytes;
}

void IbChannel::reportDrained(Clock::time_point now) {
  for (size_t q = 0; q < links_.size(); ++q) {
    Link& l = links_[q];
    if (l.doneBytes == 0) continue;
    if (failure_.empty()) scheduler_.onDrained(static_cast<int>(q), l.doneBytes, now - l.doneStart);
    l.doneBytes = 0;
    l.lastDone = now;
  }
}

void IbChannel::publishWeights(Clock::time_point now) {
  lastPublish_ = now;
  for (int q = 0; q < scheduler_.paths(); ++q) {
    stats_->paths[q].weightPpm.store(static_cast<uint32_t>(scheduler_.weight(q) * 1e6),
                                     std::memory_order_relaxed);
    stats_->paths[q].rate.store(static_cast<uint64_t>(scheduler_.rate(q)),
                                std::memory_order_relaxed);
  }
}

// The sender writes only into [its grants, + ring), and nothing at or after the
// contiguous prefix has been consumed: the write's stream offset is the one in
// [consumed_, consumed_ + ring_) with this ring offset.
void IbChannel::blockArrived(int q, uint32_t offset, uint32_t bytes) {
  const char* why = nullptr;
  uint64_t begin = 0;
  if (offset >= ring_) {
    why = "a write beyond the ring";
  } else {
    begin = consumed_ + (offset + ring_ - consumed_ % ring_) % ring_;
    why = assembly_.place(q, begin, bytes, consumed_ + ring_);
  }
  if (why)
    return fail("rank " + std::to_string(peer_) + " wrote " + why + " (" + std::to_string(bytes) +
                " bytes at ring offset " + std::to_string(offset) + " on QP " + std::to_string(q) +
                ")");
  stats_->paths[q].received.fetch_add(bytes, std::memory_order_relaxed);
}

void IbChannel::fail(const std::string& why) {
  if (failure_.empty())
    failure_ = "ib: connection to rank " + std::to_string(peer_) + " failed: " + why;
}

void IbChannel::throwIfFailed() const {
  if (!failure_.empty()) throw PeerError(peer_, failure_);
}

// Receiver: registers the destination on every rail (the pieces may come on any) and
// tells the sender where it is and its key on each; a refusal sends a zero address.
bool IbChannel::offer(const LocalRegion* region, std::byte* data, size_t bytes) {
  progress();
  throwIfFailed();
  if (links_[0].outstanding >= config_.sendDepth) return false;
  RendezvousAnswer a;
  a.bytes = bytes;
  a.transfer = recvTransfer_;
  if (region) {
    // On every rail's device, so that the pieces may come over any rail.
    landTargets_.clear();
    for (size_t r = 0; r < putRails(); ++r) {
      landTargets_.push_back(rails_[r].device->cache().acquire(region->base, region->bytes));
      a.rkey[r] = landTargets_.back().rkey();
    }
    a.rails = static_cast<uint32_t>(putRails());
    a.addr = reinterpret_cast<uint64_t>(data);
    landing_ = true;
    pieces_.reset(bytes);
  }
  // Send slots follow the receive slots; the one used sendDepth answers ago is done (QP 0
  // has at most sendDepth sends in flight and completes them in order).
  std::byte* slot = control_.data() + (static_cast<size_t>(config_.recvDepth) +
                                       answersSent_ % static_cast<size_t>(config_.sendDepth)) *
                                          kControlSlot;
  std::memcpy(slot, &a, sizeof a);
  ibv_sge sge{reinterpret_cast<uint64_t>(slot), static_cast<uint32_t>(sizeof a), control_.lkey()};
  ibv_send_wr wr{};
  wr.wr_id = wrId(kAnswer, 0);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  post(0, wr);
  throwIfFailed();
  ++answersSent_;
  return true;
}

// The bounce buffer for a transfer of `bytes`: grown to the largest such transfer yet,
// at least the ring's size, at most config.bounce (a new buffer from rail 0's pool; the
// old one goes back there and the other rails forget their registrations of it, so none
// outlives the memory). Never while a transfer lands in it.
std::byte* IbChannel::bounce(size_t bytes) {
  if (bytes > config_.bounce) return nullptr;
  if (bounce_.size() < bytes) {
    if (landing_)
      throw Error(Result::InternalError, "ib: the bounce buffer grows while a transfer from rank " +
                                             std::to_string(peer_) + " lands in it");
    dropBounce();
    bounce_ = device_.pool().get(std::max(bytes, std::min<size_t>(ring_, config_.bounce)));
    bounceRegion_.base = bounce_.data();
    bounceRegion_.bytes = bounce_.size();
  }
  return bounce_.data();
}

void IbChannel::dropBounce() {
  if (!bounce_.data()) return;
  for (size_t r = 1; r < putRails(); ++r)
    rails_[r].device->cache().forget(bounce_.data(), bounce_.size());
  bounce_ = BufferPool::Buffer();
  bounceRegion_ = LocalRegion{};
}

bool IbChannel::offerBounce(size_t bytes) {
  std::byte* data = bounce(bytes);
  if (!data)
    throw Error(Result::InternalError, "ib: a bounce buffer of " + std::to_string(bytes) +
                                           " bytes offered to rank " + std::to_string(peer_) +
                                           " (CHORUS_IB_BOUNCE=" + std::to_string(config_.bounce) +
                                           ")");
  return offer(&bounceRegion_, data, bytes);
}

size_t IbChannel::landedPrefix() {
  progress();
  throwIfFailed();  // a dead writer ends the wait
  return landing_ ? pieces_.prefix() : 0;
}

bool IbChannel::landed(size_t bytes) {
  progress();
  if (landing_ && pieces_.total() >= bytes) {
    if (pieces_.total() > bytes || pieces_.prefix() != bytes)
      fail("rank " + std::to_string(peer_) + " wrote " + std::to_string(pieces_.total()) +
           " bytes (" + std::to_string(pieces_.prefix()) +
           " of them contiguous) into a rendezvous destination that expected " +
           std::to_string(bytes) + " written (the rest streamed)");
    throwIfFailed();
    landing_ = false;
    landTargets_.clear();
    return true;
  }
  throwIfFailed();  // a dead writer ends the wait
  return false;
}

void IbChannel::withdraw() {
  landing_ = false;
  landTargets_.clear();
}

DirectTransfer::Answer IbChannel::answer() {
  progress();
  throwIfFailed();
  const AnswerMatch match = matchAnswer(answers_, sendTransfer_);
  if (match == AnswerMatch::None) return Answer::None;
  if (match == AnswerMatch::Ahead) {
    fail("rank " + std::to_string(peer_) + " answered rendezvous transfer " +
         std::to_string(answers_.front().transfer) + " while this rank sends transfer " +
         std::to_string(sendTransfer_));
    throwIfFailed();
  }
  if (answers_.front().accepted()) return Answer::Accepted;
  answers_.pop_front();
  return Answer::Refused;
}

size_t IbChannel::put(const LocalRegion& region, const std::byte* data, size_t from, size_t to) {
  progress();
  throwIfFailed();
  if (answers_.empty() || !answers_.front().accepted() ||
      answers_.front().transfer != sendTransfer_)
    throw Error(Result::InternalError, "ib: a rendezvous put to rank " + std::to_string(peer_) +
                                           " without an accepted answer");
  const RendezvousAnswer& a = answers_.front();
  if (to > a.bytes)
    throw Error(Result::InternalError, "ib: putting " + std::to_string(to) + " bytes into the " +
                                           std::to_string(a.bytes) + " bytes rank " +
                                           std::to_string(peer_) + " offered");
  // The rails both sides registered the buffers on (the peer has as many rails: connect).
  const size_t rails = std::min<size_t>(putRails(), a.rails);
  while (putSources_.size() < rails)
    putSources_.push_back(
        rails_[putSources_.size()].device->cache().acquire(region.base, region.bytes));
  if (putStart_ == kNoPut) putStart_ = from;  // the middle's first byte: offset 0
  while (from < to) {
    const size_t len = std::min<size_t>({to - from, block_, kMaxPiece});
    const int q = pickQp(len, rails);
    if (q < 0) break;
    const int r = links_[q].rail;
    postWrite(q, wrId(kPut, q, len), data + from, len, putSources_[r].lkey(), a.addr + from,
              a.rkey[r], pieceImmediate(from - putStart_));
    throwIfFailed();
    posted(q, len);
    stats_->paths[q].direct.fetch_add(len, std::memory_order_relaxed);
    ++putsInFlight_;
    from += len;
  }
  putPosted_ = from;
  return from;
}

bool IbChannel::putDone(size_t bytes) {
  progress();
  throwIfFailed();
  if (putPosted_ < bytes || putsInFlight_ > 0) return false;
  answers_.pop_front();
  putSources_.clear();
  putPosted_ = 0;
  putStart_ = kNoPut;
  return true;
}

}  // namespace chorus::ib
