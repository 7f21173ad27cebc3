// One peer's byte stream over UCP tagged messages.
//
// The sender cuts the stream into blocks of at most config.block bytes, copies each into a
// registered staging slot and sends it with the tag (rank, block sequence). The receiver
// keeps receives posted for the next config.window blocks, each into its own registered
// slot, so a block lands straight where peek() hands it out, in sequence order whatever
// order the receives complete in. Flow control is by credits: the sender sends block s
// only when s < (blocks the receiver consumed) + window, so neither side ever holds more
// than window blocks per peer, and UCX never buffers unexpected data. The receiver
// reports what it consumed on a separate credit tag every window/2 blocks.
// trySend/peek/consume take progress.mutex(), which the progress thread holds too.
#pragma once

#include "transports/transport.hpp"
#include "transports/ucx/ucx_progress.hpp"
#include "transports/ucx/ucx_resources.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace chorus::ucx {

// Read once, when a transport is made; every rank must use the same values.
struct UcxConfig {
  size_t block = 256 << 10;  // CHORUS_UCX_BLOCK: bytes per message, multiple of 8
  int window = 8;            // CHORUS_UCX_WINDOW: blocks in flight per peer, 2..1024
  // CHORUS_UCX_ERR_MODE=peer (default): UCX reports a dead peer (UCP_ERR_HANDLING_MODE_PEER),
  // at the price of transports without failure detection (sysv, posix shared memory).
  // none: every transport, shared memory included; a dead rank is then found through the
  // rendezvous store only.
  bool peerErrors = true;
  static UcxConfig fromEnv();
};

class UcxChannel final : public Channel {
 public:
  UcxChannel(const Context& context, Worker& worker, Progress& progress, int rank, int peer,
             const std::string& peerAddress, const UcxConfig& config);
  ~UcxChannel() override = default;
  UcxChannel(const UcxChannel&) = delete;
  UcxChannel& operator=(const UcxChannel&) = delete;

  size_t trySend(const void* data, size_t bytes) override;
  std::span<const std::byte> peek() override;
  void consume(size_t bytes) override;

  // Takes credits that arrived and reports consumption when due; never throws. Called
  // with progress.mutex() held, after every progress pass.
  void flushCredit();
  // Tear-down, with the progress thread stopped, in this order: cancel the receives,
  // close the endpoint, then progress the worker until idle() (or give up at a deadline).
  void cancelReceives();
  void closeEndpoint();
  bool idle();

 private:
  struct Slot {
    UcxChannel* owner = nullptr;
    void* request = nullptr;  // outstanding UCP request, null when none
    bool busy = false;        // posted and not completed
    size_t length = 0;        // receive: bytes that arrived (0: not yet)
    size_t offset = 0;        // receive: bytes consumed so far
    uint64_t credit = 0;      // credit slots: the consumed-block count on the wire
  };

  static void onSent(void* request, ucs_status_t status, void* user);
  static void onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                         void* user);
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);

  void postReceive(uint64_t seq);
  void postCreditReceive();
  void post(Slot& slot, void* buffer, size_t bytes, ucp_tag_t tag, bool registered);
  void fail(const std::string& what, ucs_status_t status);
  std::byte* sendBuffer(uint64_t seq) const;
  std::byte* recvBuffer(uint64_t seq) const;

  ucp_worker_h worker_;
  Progress& progress_;
  int rank_;
  int peer_;
  size_t block_;
  uint64_t window_;
  bool peerErrors_;
  ucp_ep_h ep_ = nullptr;
  void* closeRequest_ = nullptr;
  MappedMemory sendMemory_;
  MappedMemory recvMemory_;
  std::vector<Slot> sendSlots_;
  std::vector<Slot> recvSlots_;
  std::vector<Slot> creditSlots_;  // [0..1] outgoing credits, [2] the posted credit receive
  uint64_t sendSeq_ = 0;           // blocks sent
  uint64_t granted_;               // the peer has room for blocks below this sequence
  uint64_t head_ = 0;              // sequence of the block peek() reads from
  uint64_t credited_ = 0;          // the last consumed count sent to the peer
  std::string failure_;            // non-empty once the peer is gone
};

}  // namespace chorus::ucx
