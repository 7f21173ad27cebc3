// One peer's byte stream over RDMA, in the shape of the TCP channel (tcp_channel.hpp):
//
// - The receiver owns a ring of config.ring bytes, registered for remote writes. The
//   sender copies stream bytes into a registered staging ring of the same size, at the
//   same offset, and RDMA-WRITEs them WITH_IMM (imm = the ring offset) to the receiver's
//   ring, so the receiver learns of the arrival from a completion (its byte_len: the
//   length), without polling memory.
// - Receiver-driven flow control: the sender may have at most `ring` bytes not yet
//   consumed by the receiver. The receiver grants space back with a zero-byte
//   SEND_WITH_IMM (imm = bytes consumed since its last grant): every ring/4 consumed, and
//   before the engine sleeps when the sender may run short of room (more than half the
//   ring written since the last grant: grantBeforeSleep), so a grant never waits on
//   traffic that cannot come.
// - Striping through src/striping, as tcp does: every QP is a path. The stream is cut
//   into writes of at most config.block bytes (never across a block boundary, so never
//   across the ring's wrap); stripe::PathScheduler gives each write to the QP that would
//   finish it soonest (its backlog: bytes posted whose completion has not come; its
//   drain rate, timed from its completions: PathScheduler::onDrained), among the QPs
//   below their send-queue limit. A slow QP or rail gets fewer writes instead of
//   holding every n-th block back. The receiver turns each
//   write's ring offset into its stream offset (the one in [consumed, consumed + ring))
//   and records it in a stripe::StreamAssembly (RC keeps each QP in order), which checks
//   it (bounds, overlap, order on its QP) and gives the contiguous prefix peek() hands
//   out. A write the assembly refuses fails the channel. Per-QP bytes, weights and rates
//   go to stripe::ChannelStats ("rxe1:qp3"), logged at INFO as the channel closes.
// - A failed work completion or a QP error event fails the channel; trySend throws
//   PeerError naming the peer at once, peek once nothing that arrived is left.
// - Rails: with several devices (CHORUS_IB_HCA naming several, or none and several
//   present), QP q lives on rail q % rails, with that device's CQ and its own
//   registration of both rings; rail i pairs with the peer's rail i.
// - One-sided reads (IbPeerMemory) share the QPs, the CQs and the scheduler:
//   postRead/oneSidedDone (PeerWrite: postPeerWrite). Each read goes to the QP the scheduler picks
//   on any rail (the buffers they read and land in are registered on every rail's device); its
//   bytes count in that QP's backlog until its completion, as a write's do.
// - Rendezvous (transport.hpp's DirectTransfer): a message of at least config.rendezvous
//   bytes between registered buffers goes straight from the sender's buffer into the
//   receiver's. The receiver registers its destination on every rail's device (each
//   rail's RegCache, up to kRendezvousRails) and SENDs an answer with a key per rail
//   (ib_rendezvous.hpp) on QP 0, whose receives post a slot each for it; the sender
//   registers its source on every rail too and RDMA-WRITEs WITH_IMM pieces of at most
//   `block` bytes, each on the QP the same scheduler picks (so over every rail), each
//   immediate marked as a piece and carrying its offset in the written middle; the
//   receiver places them (PieceLanding: in order per QP, any order across QPs) and hands
//   the engine the contiguous prefix landed (landedPrefix), which it may fold or copy out
//   while later pieces are in flight (off by default). No staging ring, no receive ring, no copy on
//   either side. The answer carries the transfer's number, so the receiver may send it before the
//   offer arrived (clear to send; matchAnswer). A RecvReduce that cannot fold in its destination
//   (in place), and a Recv into an unregistered destination, answer with the channel's bounce
//   buffer instead (the ring's size, grown to the largest such message up to CHORUS_IB_BOUNCE,
//   registered on every rail like a destination) and folds from it.
// - Whether the peer's host answers (Transport::probe, silence): while probing, a
//   zero-length RDMA WRITE each second on a QP of its own (rail 0), signaled. The peer's
//   HCA acknowledges it without its process (a stopped rank's host answers), and on its
//   own QP no write of ours waits behind a receiver-not-ready retry or a long backlog, so
//   a probe still unanswered after a second means the host did not answer. The probe QP
//   failing (retry exceeded) does not fail the channel: the data QPs say that themselves.
// Not thread-safe: one engine thread drives a transport.
#pragma once

#include "memory/shared_memory.hpp"
#include "striping/path_scheduler.hpp"
#include "striping/stream_assembly.hpp"
#include "striping/stripe_stats.hpp"
#include "transports/ib/ib_config.hpp"
#include "transports/ib/ib_device.hpp"
#include "transports/ib/ib_qp.hpp"
#include "transports/ib/ib_rendezvous.hpp"
#include "transports/ib/piece_landing.hpp"
#include "transports/ib/reg_cache.hpp"
#include "transports/transport.hpp"

#include <infiniband/verbs.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace chorus::ib {

class IbChannel final : public Channel, public DirectTransfer {
 public:
  // events[i]: the completion channel of rails[i]'s device.
  IbChannel(int rank, int peer, const std::vector<IbDevice*>& rails, const IbConfig& config,
            const std::vector<ibv_comp_channel*>& events);
  ~IbChannel() override;
  IbChannel(const IbChannel&) = delete;
  IbChannel& operator=(const IbChannel&) = delete;

  PeerInfo localInfo() const;
  // Checks that the peer uses the same settings and brings every QP to RTS.
  void connect(const PeerInfo& remote);

  size_t trySend(const void* data, size_t bytes) override;
  std::span<const std::byte> peek() override;
  void consume(size_t bytes) override;
  DirectTransfer* directTransfer() override { return config_.rendezvous > 0 ? this : nullptr; }

  size_t minBytes() const override { return config_.rendezvous; }
  size_t streamedEnds() const override { return config_.rndvStreamed; }
  void sending() override { ++sendTransfer_; }
  void receiving() override { ++recvTransfer_; }
  void withdraw() override;
  bool offer(const LocalRegion* region, std::byte* data, size_t bytes) override;
  size_t bounceBytes() const override { return config_.bounce; }
  std::byte* bounce(size_t bytes) override;
  bool offerBounce(size_t bytes) override;
  size_t landedPrefix() override;
  bool landed(size_t bytes) override;
  Answer answer() override;
  size_t put(const LocalRegion& region, const std::byte* data, size_t from, size_t to) override;
  bool putDone(size_t bytes) override;

  // One-sided: an RDMA READ of `len` bytes at `remote` into `local` (postRead), or an RDMA
  // WRITE of `len` bytes at `local` to `remote` (postPeerWrite: PeerWrite, no immediate;
  // the writer's next message says the bytes are there), on the QP the striping scheduler
  // picks (reads and writes share each QP's backlog) among the QPs of rails [0, rails),
  // with that rail's keys (keys[r]); false when none has room in its send queue for now.
  // oneSidedDone(ticket) is true once its completion arrived (and forgets it): for a write
  // the peer's acknowledgement (ib_peer_memory.hpp says what that orders). postPeerWrite
  // tells the QP it took (*qp); postFlushRead posts a one-byte RDMA READ at `remote` on
  // that QP (false while its send queue is full): its answer comes only after the peer
  // placed every earlier WRITE of that QP.
  struct ReadKeys {  // (named for reads; writes take the same keys)
    uint32_t lkey = 0, rkey = 0;
  };
  bool postRead(void* local, uint64_t remote, const ReadKeys* keys, size_t rails, uint32_t len,
                uint32_t ticket);
  bool postPeerWrite(const void* local, uint64_t remote, const ReadKeys* keys, size_t rails,
                     uint32_t len, uint32_t ticket, int* qp);
  bool postFlushRead(int qp, void* local, uint64_t remote, const ReadKeys* keys, uint32_t ticket);
  const stripe::ChannelStats& stats() const { return *stats_; }  // one path per QP
  // The rails one-sided transfers may use (their devices' registrations are exchanged).
  size_t oneSidedRails() const { return putRails(); }
  bool oneSidedDone(uint32_t ticket);

  bool progress();            // reaps completions; true if any
  void flushCredits();        // grants the sender what was consumed since the last grant
  void flushBeforeSleep();    // flushCredits when the sender may run short (grantBeforeSleep)
  void arm();                 // next completion signals the completion channel
  void checkAsyncFailures();  // after the device reported QP or port events
  const std::string& failure() const { return failure_; }
  // Moves every QP to the error state before teardown: the driver stops retransmitting to
  // a peer that no longer answers and flushes what was posted, so that destroying the QPs
  // waits on less (Soft-RoCE took up to 3 s for one QP's destroy after a cut). The
  // transport stops every channel's QPs before it destroys any. Idempotent.
  void stopQps() noexcept;
  // Probes the peer's host each second from now (on) or no more (off); silence: the
  // probes unanswered for over a second, and since when nothing of ours was acknowledged.
  // silence() progresses the channel first (posts a due probe, reaps the answers): the
  // engine progresses only the channels its steps use, and probes every peer where the
  // store is silent.
  void probe(bool on);
  std::optional<PeerSilence> silence();

 private:
  struct Rail {
    IbDevice* device = nullptr;
    ibv_cq* cq = nullptr;
    ibv_mr* recvMr = nullptr;  // rails after the first: their own registration of the rings
    ibv_mr* sendMr = nullptr;
    uint32_t recvKey = 0, sendKey = 0;  // the rings' rkey (receive) and lkey (staging) here
    uint32_t remoteKey = 0;             // the peer's ring on its rail of the same index
  };
  struct Link {
    ibv_qp* qp = nullptr;
    int rail = 0;
    uint32_t psn = 0;
    int outstanding = 0;    // send work requests not completed yet
    uint64_t inFlight = 0;  // bytes of stream and rendezvous writes not completed yet
    // When each write or read in flight was posted (RC completes them in order) and when
    // the last one completed: its busy time, for the scheduler's rate (onDrained).
    std::deque<Clock::time_point> posts;
    Clock::time_point lastDone{};
    uint64_t doneBytes = 0;         // completed in the poll batch being reaped
    Clock::time_point doneStart{};  // when the first of those started going out
  };

  bool progressRail(Rail& rail);
  void probeIfDue(Clock::time_point now);
  void probeDone(ibv_wc_status status, Clock::time_point now);
  void postRecv(int q, uint32_t slot);
  void throwIfFailed() const;
  void post(int q, ibv_send_wr& wr);
  // One signaled RDMA WRITE with immediate (host order) of local [local, +bytes) on QP q.
  void postWrite(int q, uint64_t id, const void* local, size_t bytes, uint32_t lkey,
                 uint64_t remoteAddr, uint32_t rkey, uint32_t immediate);
  // The QP for a write of `bytes` among those on rails [0, rails) with room in their
  // send queue (PathScheduler), or -1 when none has room.
  int pickQp(size_t bytes, size_t rails);
  void posted(int q, size_t bytes);           // a write or read of `bytes` went out on QP q
  void drained(int q, size_t bytes);          // and completed (in the batch being reaped)
  void reportDrained(Clock::time_point now);  // the batch's samples to the scheduler
  void publishWeights(Clock::time_point now);
  void blockArrived(int q, uint32_t ringOffset, uint32_t bytes);  // a stream write landed
  void fail(const std::string& why);
  void dropBounce();  // returns the bounce buffer to the pool
  uint64_t received() const { return assembly_.contiguous(); }
  uint64_t blockEnd(uint64_t pos) const { return (pos / block_ + 1) * block_; }
  size_t putRails() const { return std::min<size_t>(rails_.size(), kRendezvousRails); }

  int rank_, peer_;
  IbDevice& device_;  // rail 0's: the rings come from its pool
  const IbConfig& config_;
  uint64_t block_, ring_;
  int dataLimit_;  // data writes in flight per QP; the rest of the queue is for grants
  std::vector<Rail> rails_;
  std::vector<Link> links_;
  std::shared_ptr<stripe::ChannelStats> stats_;  // one path per QP
  stripe::PathScheduler scheduler_;              // which QP takes the next write
  stripe::StreamAssembly assembly_;              // which stream writes have landed
  Clock::time_point lastPublish_{};
  BufferPool::Buffer recvRing_;  // the peer writes here
  BufferPool::Buffer sendRing_;  // staging for what we write to the peer
  uint64_t remoteAddr_ = 0;

  uint64_t sendPos_ = 0;         // bytes accepted by trySend
  uint64_t remoteConsumed_ = 0;  // bytes the peer granted back
  uint64_t consumed_ = 0;        // bytes released by consume
  uint64_t granted_ = 0;         // bytes we granted back to the peer
  // One-sided reads and writes (PeerMemory): tickets completed and not yet collected, and
  // those in flight with their bytes.
  std::vector<uint32_t> oneSidedDone_;
  std::unordered_map<uint32_t, uint32_t> oneSidedLengths_;
  // Posts on QP `onQp`, or on the scheduler's pick where it is -1; the QP, or -1 when it
  // (or every QP) has no room.
  int postOneSided(ibv_wr_opcode opcode, void* local, uint64_t remote, const ReadKeys* keys,
                   size_t rails, uint32_t len, uint32_t ticket, int onQp = -1);

  // Rendezvous. control_: QP 0's receive slots (answers land there), then send slots.
  BufferPool::Buffer control_;
  uint64_t answersSent_ = 0;
  uint64_t sendTransfer_ = 0;                 // the transfer this side sends now (numbered from 1)
  uint64_t recvTransfer_ = 0;                 // the transfer this side receives now
  std::deque<RendezvousAnswer> answers_;      // the peer's answers, oldest first
  std::vector<RegCache::Handle> putSources_;  // sender: the source's registration per rail
  size_t putPosted_ = 0;                      // bytes of the transfer posted
  static constexpr size_t kNoPut = SIZE_MAX;
  size_t putStart_ = kNoPut;  // the transfer's first byte put: its pieces' offsets count from it
  int putsInFlight_ = 0;      // piece writes not completed
  // Receiver: where a RecvReduce that cannot fold in its destination lets the peer write
  // (bounce()): from rail 0's pool, taken at the first such transfer, the ring's size or
  // the largest such transfer since, up to config.bounce.
  BufferPool::Buffer bounce_;
  LocalRegion bounceRegion_;
  std::vector<RegCache::Handle> landTargets_;  // receiver: the destination's, per rail
  bool landing_ = false;                       // an accepted transfer is on its way
  PieceLanding pieces_;                        // its pieces that landed
  std::string failure_;

  // Probing the peer's host: a QP for zero-length writes only, the probes in flight (when
  // each was posted; they complete in order) and when anything of ours was last
  // acknowledged (or anything of the peer's arrived).
  static constexpr int kMostProbes = 8;
  ibv_qp* probeQp_ = nullptr;
  uint32_t probePsn_ = 0;
  bool probing_ = false;
  bool probeBroken_ = false;  // the probe QP failed: no more probes
  std::deque<Clock::time_point> probes_;
  Clock::time_point lastProbe_{}, lastAnswer_{};
};

}  // namespace chorus::ib
