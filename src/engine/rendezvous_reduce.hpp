// The rendezvous of a RecvReduce (dst = local OP the peer's data): whether its data may
// land straight in its registered destination, to be folded there, or in the channel's
// bounce buffer, to be folded from there. Pure decisions,
// unit-tested on the host (rendezvous_test.cpp); Engine::recvRendezvous acts on them.
#pragma once

#include "engine/rendezvous.hpp"

#include <cstddef>
#include <cstdint>

namespace chorus::detail {

// Whether [a, a + bytes) and [b, b + bytes) share no byte.
inline bool apart(uintptr_t a, uintptr_t b, size_t bytes) {
  return a + bytes <= b || b + bytes <= a;
}

// A Recv takes receiverAccepts' answer. A RecvReduce accepts only when both ends are
// registered and it can fold in its destination: its local range lies apart from the
// destination (not in place) and is all written (its `after` allows every element). The
// peer's data then lands in the destination, and one pass makes it dst = local OP dst
// (the operands in the stream's order, so the result is bit-identical) before any element
// counts as handled; otherwise its data keeps the stream.
inline bool receiverFoldsInDestination(const RendezvousOffer& offer, bool destinationRegistered,
                                       bool localApart, bool localWritten) {
  return receiverAccepts(offer, destinationRegistered) && localApart && localWritten;
}

// Where a RecvReduce's announced data lands: in its destination when it can fold there
// (receiverFoldsInDestination), else in the channel's bounce buffer when the source is
// registered and the message fits it (in place, an unregistered destination, a local
// operand still being written: the data cannot go to the destination, but it still skips
// the sender's staging copy and the receive ring), else through the stream. From the
// bounce buffer one pass makes dst = local OP bounce, the stream's fold with the bounce
// buffer in the ring's place (the same operands in the same order: bit-identical).
// Before the offer (clear to send) the receiver takes the source as registered: an offer
// that then says otherwise withdraws the answer.
enum class ReduceLanding : uint8_t { Stream, Destination, Bounce };
inline ReduceLanding reduceLanding(const RendezvousOffer& offer, bool destinationRegistered,
                                   bool localApart, bool localWritten, bool bounceFits) {
  if (receiverFoldsInDestination(offer, destinationRegistered, localApart, localWritten))
    return ReduceLanding::Destination;
  return offer.registered && bounceFits ? ReduceLanding::Bounce : ReduceLanding::Stream;
}

// Clear to send: the receiver answers with its destination as soon as its step begins,
// before the offer arrives, when it would take any registered source: its destination
// is registered and free to be written now (the step's `after` allows every element), and
// a RecvReduce's local range lies apart from it (allowed also means that range is all
// written: receiverFoldsInDestination's conditions but the sender's). Otherwise the
// receiver reads the offer first and answers it, as before.
inline bool receiverClearsToSend(bool destinationRegistered, bool reducing, bool localApart,
                                 bool allAllowed) {
  return destinationRegistered && allAllowed && (!reducing || localApart);
}

}  // namespace chorus::detail
