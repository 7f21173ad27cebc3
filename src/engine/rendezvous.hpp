// The engine's side of a channel's rendezvous (transport.hpp's DirectTransfer): the offer
// that announces a large message in the stream, and where a Send or Recv step stands in
// the protocol. Pure data and decisions, unit-tested on the host (rendezvous_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace chorus::detail {

// 16 bytes in the stream, after the call's fingerprint and before the data (if any):
// a message of at least DirectTransfer::minBytes() on a channel that has a rendezvous.
struct RendezvousOffer {
  static constexpr uint32_t kMagic = 0x31564452;  // "RDV1"
  uint32_t magic = kMagic;
  uint32_t registered = 0;  // 1: the source is registered, the sender waits for an answer
  uint64_t bytes = 0;       // of the message, checked against the receiver's step
};
static_assert(sizeof(RendezvousOffer) == 16);

// A Send or Recv step's place in the protocol (StepProgress::rendezvous).
enum class RendezvousState : uint8_t {
  Undecided,    // sender: the offer is not all sent yet; receiver: the step's first pass
  Stream,       // the data goes through the stream as usual (small, unregistered, refused)
  Reading,      // receiver: takes the offer, then answers it
  ClearToSend,  // receiver: answers with its destination before the offer (has to send it)
  Cleared,      // receiver: answered so; takes the offer (it says direct or stream)
  Answering,    // sender: waits for the answer; receiver: has to send it
  Direct,       // sender: puts into the peer's buffer; receiver: waits for it to land
};

// Whether a message of `bytes` is announced with an offer (both ends decide alike).
inline bool announced(size_t bytes, size_t minBytes) { return minBytes > 0 && bytes >= minBytes; }

// A Recv accepts (the data lands straight in its destination) only when both ends are
// registered. A RecvReduce folds into its destination and decides by
// receiverFoldsInDestination (rendezvous_reduce.hpp), which asks this and more.
inline bool receiverAccepts(const RendezvousOffer& offer, bool destinationRegistered) {
  return offer.registered && destinationRegistered;
}

// The offer in `raw`, when it is one and announces `bytes`; nullopt otherwise.
inline std::optional<RendezvousOffer> parseOffer(const std::byte* raw, uint64_t bytes) {
  RendezvousOffer o;
  std::memcpy(&o, raw, sizeof o);
  if (o.magic != RendezvousOffer::kMagic || o.registered > 1 || o.bytes != bytes)
    return std::nullopt;
  return o;
}

}  // namespace chorus::detail
