// One peer's byte stream over RDMA, in the shape of the TCP channel (tcp_channel.hpp):
//
// - The receiver owns a ring of config.ring bytes, registered for remote writes. The
//   sender copies stream bytes into a registered staging ring of the same size, at the
//   same offset, and RDMA-WRITEs them WITH_IMM (imm = length) to the receiver's ring, so
//   the receiver learns of the arrival from a completion, without polling memory.
// - Receiver-driven flow control: the sender may have at most `ring` bytes not yet
//   consumed by the receiver. The receiver grants space back with a zero-byte
//   SEND_WITH_IMM (imm = bytes consumed since its last grant): every ring/4 consumed, and
//   before the engine sleeps, so a grant never waits on more traffic.
// - Striping: the stream is cut into blocks of config.block bytes; block k travels on
//   QP k % qps (RC keeps each QP in order). Both sides know the mapping, so no headers;
//   each QP's writes land in their block's place and peek() hands out the contiguous
//   prefix, exactly as the TCP channel does with its sockets.
// - A failed work completion or a QP error event fails the channel; trySend throws
//   PeerError naming the peer at once, peek once nothing that arrived is left.
// - One-sided reads (IbPeerMemory) share the QPs and the CQ: postRead/readDone.
// Not thread-safe: one engine thread drives a transport.
#pragma once

#include "transports/ib/ib_config.hpp"
#include "transports/ib/ib_device.hpp"
#include "transports/ib/ib_qp.hpp"
#include "transports/ib/reg_cache.hpp"
#include "transports/transport.hpp"

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace chorus::ib {

class IbChannel final : public Channel {
 public:
  IbChannel(int rank, int peer, IbDevice& device, const IbConfig& config, ibv_comp_channel* events);
  ~IbChannel() override;
  IbChannel(const IbChannel&) = delete;
  IbChannel& operator=(const IbChannel&) = delete;

  PeerInfo localInfo() const;
  // Checks that the peer uses the same settings and brings every QP to RTS.
  void connect(const PeerInfo& remote);

  size_t trySend(const void* data, size_t bytes) override;
  std::span<const std::byte> peek() override;
  void consume(size_t bytes) override;

  // One-sided: an RDMA READ of `len` bytes at (remote, rkey) into (local, lkey) on QP
  // `ticket % qps` (reads of one peer spread over its QPs); false when that QP's queue is
  // full for now. readDone(ticket) is true once its completion arrived (and forgets it).
  bool postRead(void* local, uint32_t lkey, uint64_t remote, uint32_t rkey, uint32_t len,
                uint32_t ticket);
  bool readDone(uint32_t ticket);

  bool progress();            // reaps completions; true if any
  void flushCredits();        // grants the sender what was consumed since the last grant
  void arm();                 // next completion signals the completion channel
  void checkAsyncFailures();  // after the device reported QP or port events
  const std::string& failure() const { return failure_; }

 private:
  struct Link {
    ibv_qp* qp = nullptr;
    uint32_t psn = 0;
    int outstanding = 0;   // send work requests not completed yet
    uint64_t recvPos = 0;  // stream offset of the next byte this QP delivers
  };

  void postRecv(int q);
  void post(int q, ibv_send_wr& wr);
  void advance(Link& l, uint64_t bytes);
  void fail(const std::string& why);
  uint64_t received() const;
  uint64_t blockEnd(uint64_t pos) const { return (pos / block_ + 1) * block_; }

  int rank_, peer_;
  IbDevice& device_;
  const IbConfig& config_;
  uint64_t block_, ring_;
  int dataLimit_;  // data writes in flight per QP; the rest of the queue is for grants
  ibv_cq* cq_ = nullptr;
  std::vector<Link> links_;
  BufferPool::Buffer recvRing_;  // the peer writes here
  BufferPool::Buffer sendRing_;  // staging for what we write to the peer
  uint64_t remoteAddr_ = 0;
  uint32_t remoteKey_ = 0;

  uint64_t sendPos_ = 0;             // bytes accepted by trySend
  uint64_t remoteConsumed_ = 0;      // bytes the peer granted back
  uint64_t consumed_ = 0;            // bytes released by consume
  uint64_t granted_ = 0;             // bytes we granted back to the peer
  std::vector<uint32_t> readsDone_;  // tickets of completed reads not yet collected
  std::string failure_;
};

}  // namespace chorus::ib
