// One peer's byte stream over UCP tagged messages, striped over several endpoints
// through src/striping as tcp and verbs are (docs/verbs_striping.md).
//
// - Rails and paths: one rail per device the transport has a worker for
//   (CHORUS_UCX_NET_DEVICES; a pair uses as many as the side with fewer has), and
//   CHORUS_UCX_PATHS endpoints per rail, from this rank's worker on that device to the
//   peer's worker on its device of the same index (each endpoint its own UCP endpoint, so
//   its own connection on UCX's tcp transport). A path is one endpoint. The sender cuts
//   the stream into pieces of at most config.block bytes, copies each into a staging slot
//   registered with the path's context and sends it on the path that
//   stripe::PathScheduler picks: the one that would finish it soonest from its backlog
//   (bytes whose send has not completed) and its drain rate, timed from the send
//   completions (PathScheduler::onDrained, as verbs). A slow endpoint or NIC gets fewer
//   pieces.
// - A piece's tag carries (rank, path, stream sequence, rail sequence): the rail sequence
//   counts the pieces sent on that rail. A receive is posted on one worker, so each rail
//   keeps receives posted for its next config.window rail sequences, each into its own
//   registered slot, matching whatever the path on the rail; tag matching lands each piece
//   in its slot in whatever order the paths deliver, and the stream sequence in its tag
//   says where it goes. Pieces are then placed, in sequence order, in a
//   stripe::StreamAssembly (paths = endpoints), which checks each (length, window, order
//   on its path) and gives the contiguous prefix peek() hands out. A piece the assembly
//   refuses fails the channel.
// - Credits per stream, not per path: the sender sends piece s only when s < (pieces the
//   receiver consumed) + window, so neither side ever holds more than window pieces per
//   peer (on any one rail, at most those: each rail's posted receives cover them) and UCX
//   never buffers unexpected data. The receiver reports what it consumed on a separate
//   credit tag (rail 0's first endpoint) every window/2 pieces.
// - Per-endpoint bytes, weights and rates go to stripe::ChannelStats ("ep1", or
//   "DEVICE:1" with named devices), logged at INFO as the channel closes.
// - Rendezvous (transport.hpp's DirectTransfer), for messages of at least config.rendezvous
//   bytes between registered buffers: the transfer is cut into chunks of chunkBytes(bytes)
//   (a grid both ends compute). The receiver posts tagged receives for the first
//   kRendezvousDepth chunks straight into their places in its destination and answers on
//   an answer tag (rail 0's first endpoint); the sender then sends each chunk from its own
//   buffer as a tagged message (as the source becomes ready), at most kRendezvousDepth in
//   flight. Chunk c of transfer t goes on rail (t + c) % rails (the receiver posts it on
//   that rail's worker), on whichever of the rail's endpoints the path scheduler picks, and its
//   completion is timed into the same rates as the stream's pieces. The receiver posts the
//   next chunk's receive as each lands, in whatever order, so several are in flight on
//   every rail. UCX moves each chunk its own zero-copy way (its rendezvous protocol: a GET
//   by the receiver on RDMA transports and CMA, the socket straight into the destination
//   on tcp), so neither side copies through the staging slots.
// trySend/peek/consume and the DirectTransfer calls take progress.mutex(), which the
// progress thread holds too.
#pragma once

#include "clock.hpp"
#include "memory/shared_memory.hpp"
#include "striping/path_scheduler.hpp"
#include "striping/stream_assembly.hpp"
#include "striping/stripe_stats.hpp"
#include "transports/transport.hpp"
#include "transports/ucx/ucx_progress.hpp"
#include "transports/ucx/ucx_resources.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace chorus::ucx {

// Read once, when a transport is made; every rank must use the same values.
struct UcxConfig {
  size_t block = 256 << 10;  // CHORUS_UCX_BLOCK: bytes per message, multiple of 8
  int window = 8;            // CHORUS_UCX_WINDOW: blocks in flight per peer, 2..1024
  int paths = 1;             // CHORUS_UCX_PATHS: endpoints per peer, 1..64
  // CHORUS_UCX_ERR_MODE=peer (default): UCX reports a dead peer (UCP_ERR_HANDLING_MODE_PEER),
  // at the price of transports without failure detection (sysv, posix shared memory).
  // none: every transport, shared memory included; a dead rank is then found through the
  // rendezvous store only.
  bool peerErrors = true;
  size_t rendezvous = 0;     // CHORUS_UCX_RNDV_BYTES: messages from this size zero-copy; 0: never
  size_t bounce = 16 << 20;  // CHORUS_UCX_BOUNCE: the largest message landing in the bounce buffer
  std::chrono::milliseconds keepalive{30'000};  // CHORUS_KEEPALIVE (ucx::Context)
  static UcxConfig fromEnv();
};

// One of the transport's devices: its context and worker (both outlive the channels).
struct Device {
  std::string name;  // the NET_DEVICES value it was made with; empty: UCX's choice
  const Context* context = nullptr;
  Worker* worker = nullptr;
};

class UcxChannel final : public Channel, public DirectTransfer {
 public:
  // peerAddresses: the peer's worker address per device (its record's order).
  UcxChannel(std::span<const Device> devices, Progress& progress, int rank, int peer,
             const std::vector<std::string>& peerAddresses, const UcxConfig& config);
  ~UcxChannel() override = default;
  UcxChannel(const UcxChannel&) = delete;
  UcxChannel& operator=(const UcxChannel&) = delete;

  size_t trySend(const void* data, size_t bytes) override;
  std::span<const std::byte> peek() override;
  void consume(size_t bytes) override;
  DirectTransfer* directTransfer() override { return rendezvous_ > 0 ? this : nullptr; }

  // DirectTransfer (see above).
  size_t minBytes() const override { return rendezvous_; }
  void sending() override;
  void receiving() override;
  void withdraw() override;
  bool offer(const LocalRegion* region, std::byte* data, size_t bytes) override;
  size_t landedPrefix() override;
  bool landed(size_t bytes) override;
  Answer answer() override;
  size_t put(const LocalRegion& region, const std::byte* data, size_t from, size_t to) override;
  bool putDone(size_t bytes) override;
  // The bounce buffer (transport.hpp): heap memory of this channel, grown to the largest
  // transfer yet, at most config.bounce; a receive into it that outlives an aborted op
  // lands in memory this channel owns until its receives are cancelled.
  size_t bounceBytes() const override { return bounceLimit_; }
  std::byte* bounce(size_t bytes) override;
  bool offerBounce(size_t bytes) override;
  // A rendezvous transfer's chunk: two per endpoint (the same count on both ends), 4
  // KiB-aligned, at least kRendezvousChunk bytes (the last may be shorter) and 1/65536 of
  // the transfer (the chunk number in the tag stays below 2^18). 64 KiB chunks ran at
  // 0.75-0.85x of one message per transfer over one endpoint of UCX's tcp here (each is
  // its own UCX rendezvous); from 256 KiB, level (perf/README.md).
  static constexpr size_t kRendezvousChunk = 256 << 10;
  size_t chunkBytes(size_t transferBytes) const;
  // Chunks in flight per transfer: receives posted ahead, sends outstanding.
  static constexpr size_t kRendezvousDepth = 8;

  // Takes credits that arrived, places pieces that arrived, feeds send completions to
  // the scheduler and reports consumption when due; never throws. Called with
  // progress.mutex() held, after every progress pass.
  void flushCredit();
  // Tear-down, with the progress thread stopped, in this order: cancel the receives,
  // close the endpoints, then progress the worker until idle() (or give up at a deadline),
  // then releaseRequests(): what is still going (a flush towards a dead peer without UCX's
  // peer error handling never ends) is handed to UCX, which frees it as the worker goes;
  // a worker destroyed under a request never freed fails UCX's assertion and aborts.
  void cancelReceives();
  void closeEndpoint();
  bool idle();
  void releaseRequests();
  // Calls visit(slot) on every slot, each receive slot of every rail included, while it
  // returns true; false when one returned false.
  template <class Visit>
  bool everySlot(Visit visit);
  // Whether UCX has wired every endpoint (its connections up, whichever end opened them): a
  // flush of each, started on the first call, completes then (or fails). Called with the
  // progress thread stopped, between progress passes; forgetWiring() lets go of the
  // flushes still going.
  bool wired();
  void forgetWiring();
  // One-sided transfers (ucx_peer_memory.hpp), striped as the stream's pieces, all with
  // progress.mutex() held. oneSidedCheck() progresses the workers and throws the channel's
  // PeerError once it failed. pickOneSided() gives the path the scheduler picks for a piece
  // of `bytes` among the paths of the first `rails` rails (those the peer's record has keys
  // for), counted in flight on it until oneSidedDone(), which also counts the bytes as read
  // from or written to the peer on that path.
  void oneSidedCheck();
  int pickOneSided(size_t bytes, int rails);
  void oneSidedDone(int path, size_t bytes, Clock::time_point posted, bool read);
  ucp_ep_h endpoint(int path) const { return eps_[static_cast<size_t>(path)]; }
  int railOf(int path) const { return path / pathsPerRail_; }
  int endpointsPerRail() const { return pathsPerRail_; }
  int rails() const { return static_cast<int>(rails_.size()); }
  // A one-sided transfer (`doing`: "reading from") failed: fails the channel, throws.
  [[noreturn]] void oneSidedFailed(const std::string& doing, ucs_status_t status);

 private:
  struct Slot {
    UcxChannel* owner = nullptr;
    void* request = nullptr;     // outstanding UCP request, null when none
    bool busy = false;           // posted and not completed
    int path = -1;               // send: the endpoint it went on; receive: the one it came on
    int rail = -1;               // receive: the rail it is posted on (a stream piece's)
    int chunkRail = -1;          // a rendezvous chunk's receive: the rail it is posted on
    uint64_t railSeq = 0;        // receive: the rail sequence it is posted for
    uint64_t seq = 0;            // receive: the stream sequence of the piece that arrived
    size_t length = 0;           // send: bytes sent; receive: bytes that arrived (0: not yet)
    size_t offset = 0;           // receive: bytes consumed so far
    Clock::time_point posted{};  // send: when it was handed to UCX
    uint64_t credit = 0;         // credit slots: the consumed-piece count on the wire
    uint64_t answer[2] = {};     // answer slots: the transfer answered, its bytes (0: refused)
    bool received = false;       // a control or rendezvous receive completed (length set)
  };
  // One device's worker, with this channel's staging memory registered with its context
  // and the receives posted on it.
  struct Rail {
    ucp_worker_h worker = nullptr;
    std::unique_ptr<MappedMemory> sendMemory;  // window slots, indexed by stream sequence
    std::unique_ptr<MappedMemory> recvMemory;  // window slots, indexed by rail sequence
    std::vector<Slot> recvSlots;               // indexed by rail sequence % window
    uint64_t sent = 0;                         // pieces sent on this rail
  };
  // One endpoint's send-side accounting for the scheduler.
  struct Link {
    uint64_t inFlight = 0;  // bytes sent whose completion has not come
    size_t doneBytes = 0;   // completed since the last report to the scheduler
    Clock::time_point doneStart{}, lastDone{};
  };

  static void onSent(void* request, ucs_status_t status, void* user);
  static void onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                         void* user);
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);

  void progressLocked();
  void arrived(Slot& slot, ucp_tag_t tag);
  // The path for `bytes` among those in `paths` (a bit per path).
  int pickPath(size_t bytes, Clock::time_point now, uint64_t paths);
  static uint64_t firstPaths(size_t n);  // the bits of paths 0..n-1
  void sendDone(Slot& slot);
  // Sends `bytes` on `path` with the slot as its completion, counted in the path's backlog
  // until sendDone (at once when UCX completes it in place). False after fail(what).
  bool sendOnPath(Slot& slot, int path, const void* buffer, size_t bytes, ucp_tag_t tag,
                  ucp_mem_h memh, const char* what, Clock::time_point now);
  // A path's backlog: bytes posted on it (the scheduler told), then completed.
  void linkPosted(int path, size_t bytes);
  void linkDone(int path, size_t bytes, Clock::time_point posted);
  void reportDrained(Clock::time_point now);
  void placeArrived();
  void postReceive(int rail, uint64_t railSeq);
  void postCreditReceive();
  void postAnswerReceive();
  void postLandings();  // the receives of the landing transfer's chunks, kRendezvousDepth ahead
  bool landingBusy() const;  // a chunk's receive is posted (or cancelling)
  void cancelLandings();     // cancels the chunks' posted receives, each on its rail
  // The rail a transfer's chunk goes on: round robin from a rail that moves on with each
  // transfer (so one-chunk transfers use every rail too).
  size_t chunkRail(uint64_t transfer, uint64_t chunk) const;
  void takeRendezvous();  // answers and landed chunks that arrived (flushCredit)
  void post(Slot& slot, ucp_worker_h worker, void* buffer, size_t bytes, ucp_tag_t tag,
            ucp_tag_t mask, ucp_mem_h memh);
  // Sends bytes from buffer with the slot as its completion: the slot is busy while the send
  // is outstanding, and not when it completed in place (no callback then comes). False after
  // fail(what) when UCX refused it.
  bool postSend(Slot& slot, ucp_ep_h ep, const void* buffer, size_t bytes, ucp_tag_t tag,
                ucp_mem_h memh, const char* what);
  void fail(const std::string& what, ucs_status_t status);
  void failWith(const std::string& why);
  [[noreturn]] void throwFailure() const;  // failure_, as a PeerError
  std::byte* recvBuffer(const Slot& slot) const;

  Progress& progress_;
  int rank_;
  int peer_;
  size_t block_;
  uint64_t window_;
  bool peerErrors_;
  int pathsPerRail_;
  std::vector<Rail> rails_;    // filled once, before any receive is posted: slots stay put
  std::vector<ucp_ep_h> eps_;  // one per path (path p on rail p / pathsPerRail_); null once closed
  std::vector<void*> closeRequests_;
  bool released_ = false;  // releaseRequests() ran: completions no longer free their request
  std::vector<void*> wireRequests_;  // wired(): flushes still going
  bool wiringStarted_ = false;
  std::vector<Slot> sendSlots_;    // indexed by stream sequence % window
  std::vector<Slot*> arrived_;     // the slot holding stream sequence s at s % window, or null
  std::vector<Slot> creditSlots_;  // [0..1] outgoing credits, [2] the posted credit receive
  std::vector<Link> links_;        // one per path
  std::shared_ptr<stripe::ChannelStats> stats_;  // one path per endpoint
  stripe::PathScheduler scheduler_;              // which endpoint takes the next piece
  stripe::StreamAssembly assembly_;              // which pieces have arrived, in order
  Clock::time_point lastPublish_{};
  uint64_t sendSeq_ = 0;   // pieces sent
  uint64_t granted_;       // the peer has room for pieces below this sequence
  uint64_t head_ = 0;      // sequence of the piece peek() reads from
  uint64_t placed_ = 0;    // pieces below this sequence are in the assembly
  uint64_t consumed_ = 0;  // stream bytes consumed
  uint64_t credited_ = 0;  // the last consumed count sent to the peer
  std::string failure_;    // non-empty once the peer is gone

  bool unreachable_ = false;  // failure_ says the peer's host does not answer

  // Rendezvous. Transfers are numbered from 1 in each direction, alike on both ends.
  size_t rendezvous_;
  uint64_t sendTransfer_ = 0;      // the transfer this side sends (sending())
  uint64_t recvTransfer_ = 0;      // the transfer this side receives (receiving())
  std::vector<Slot> answerSlots_;  // [0, 2) outgoing, [2] the posted receive
  struct ReceivedAnswer {
    uint64_t transfer;
    uint64_t bytes;  // 0: refused
  };
  std::deque<ReceivedAnswer> answers_;  // the peer's, oldest first
  // Receiver: the accepted transfer landing in [landData_, landData_ + landBytes_), chunk c
  // received into landSlots_[c % kRendezvousDepth] (Slot::seq: the chunk posted there).
  std::vector<Slot> landSlots_;
  bool landing_ = false;
  std::byte* landData_ = nullptr;
  size_t landBytes_ = 0;
  size_t landChunkBytes_ = 0;
  uint64_t landChunks_ = 0;  // chunks of the transfer
  uint64_t landFront_ = 0;   // the first chunk not landed (all before it have)
  uint64_t landPosted_ = 0;  // chunks whose receive has been posted
  size_t landed_ = 0;        // bytes of the chunks before landFront_
  size_t bounceLimit_;
  std::unique_ptr<std::byte[]> bounce_;
  size_t bounceSize_ = 0;
  LocalRegion bounceRegion_;
  // Sender: the accepted transfer's chunks posted, chunk c's send in putSlots_[c %
  // kRendezvousDepth] (a chunk waits for the one kRendezvousDepth before it).
  std::vector<Slot> putSlots_;
  size_t putChunkBytes_ = 0;
  size_t putPosted_ = 0;
  uint64_t putChunk_ = 0;
};

}  // namespace chorus::ucx
