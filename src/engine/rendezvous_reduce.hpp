// The rendezvous of a RecvReduce (dst = local OP the peer's data): whether its data may
// land straight in its registered destination, to be folded there, or in the channel's
// bounce buffer, to be folded from there, or keeps the stream; and when a plain Recv
// clears to send. Pure decisions, unit-tested on the host (rendezvous_test.cpp);
// Engine::recvClearToSend and Engine::recvRendezvous act on them.
#pragma once

#include "engine/rendezvous.hpp"

#include <cstddef>
#include <cstdint>

namespace chorus::detail {

// Whether [a, a + bytes) and [b, b + bytes) share no byte.
inline bool apart(uintptr_t a, uintptr_t b, size_t bytes) {
  return a + bytes <= b || b + bytes <= a;
}

// Where a RecvReduce's data lands when its source is registered:
// - Destination: the destination is registered and the fold can happen there: its local
//   range lies apart from it (not in place) and is all written (the step's `after` allows
//   every element). One pass then makes dst = local OP dst (the operands in the stream's
//   order, so the result is bit-identical) before any element counts as handled.
// - Bounce: else, when the message fits the channel's bounce buffer (in place, an
//   unregistered destination, a local operand still being written: the data cannot go to
//   the destination, but it still skips the sender's staging copy and the receive ring).
//   One pass makes dst = local OP bounce, the stream's fold with the bounce buffer in the
//   ring's place (the same operands in the same order: bit-identical).
// - Stream: else.
// The engine asks this as the step begins, before the offer (clear to send unless Stream:
// the receiver takes the source as registered, and an offer that then says otherwise
// withdraws the answer), and through reduceLanding once the offer is in, when it did not
// clear to send.
enum class ReduceLanding : uint8_t { Stream, Destination, Bounce };
inline ReduceLanding reduceLandingBeforeOffer(bool destinationRegistered, bool localApart,
                                              bool localWritten, bool bounceFits) {
  if (destinationRegistered && localApart && localWritten) return ReduceLanding::Destination;
  return bounceFits ? ReduceLanding::Bounce : ReduceLanding::Stream;
}

// Where a RecvReduce's announced data lands once its offer is in: an unregistered source
// streams, a registered one lands where reduceLandingBeforeOffer says.
inline ReduceLanding reduceLanding(const RendezvousOffer& offer, bool destinationRegistered,
                                   bool localApart, bool localWritten, bool bounceFits) {
  if (!offer.registered) return ReduceLanding::Stream;
  return reduceLandingBeforeOffer(destinationRegistered, localApart, localWritten, bounceFits);
}

// Clear to send for a plain Recv: the receiver answers with its destination as soon as
// its step begins, before the offer arrives, when it would take any registered source
// (receiverAccepts): its destination is registered and free to be written now (the
// step's `after` allows every element). Otherwise it reads the offer first and answers
// it. (A RecvReduce decides by reduceLandingBeforeOffer.)
inline bool receiverClearsToSend(bool destinationRegistered, bool allAllowed) {
  return destinationRegistered && allAllowed;
}

}  // namespace chorus::detail
