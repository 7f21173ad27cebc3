// The rendezvous of a RecvReduce (dst = local OP the peer's data): whether its data may
// land straight in its registered destination, to be folded there. Pure decisions,
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
