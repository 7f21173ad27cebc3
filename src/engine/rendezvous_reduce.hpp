// Where an announced message lands at the receiver: a RecvReduce's (dst = local OP the
// peer's data) straight in its registered destination, to be folded there, or in the
// channel's bounce buffer, to be folded from there, or it keeps the stream; a plain
// Recv's in its registered destination, or in the bounce buffer (an unregistered
// destination), copied out from there. Pure decisions, unit-tested on the host
// (rendezvous_test.cpp); Engine::recvClearToSend and Engine::recvRendezvous act on them.
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
enum class Landing : uint8_t { Stream, Destination, Bounce };
inline Landing reduceLandingBeforeOffer(bool destinationRegistered, bool localApart,
                                        bool localWritten, bool bounceFits) {
  if (destinationRegistered && localApart && localWritten) return Landing::Destination;
  return bounceFits ? Landing::Bounce : Landing::Stream;
}

// Where a RecvReduce's announced data lands once its offer is in: an unregistered source
// streams, a registered one lands where reduceLandingBeforeOffer says.
inline Landing reduceLanding(const RendezvousOffer& offer, bool destinationRegistered,
                             bool localApart, bool localWritten, bool bounceFits) {
  if (!offer.registered) return Landing::Stream;
  return reduceLandingBeforeOffer(destinationRegistered, localApart, localWritten, bounceFits);
}

// Clear to send for a plain Recv, as its step begins (before the offer; the source is
// taken as registered, and an offer that then says otherwise withdraws the answer):
// - Destination: its destination is registered and free to be written now (the step's
//   `after` allows every element): the data lands there, no copy on either side.
// - Bounce: its destination is not registered and the message fits the channel's bounce
//   buffer (free at every step's start): the data lands there and is copied out into the
//   destination as its pieces land (as far as the `after` allows): one copy on the
//   receiver instead of the ring's two (the sender's staging copy, the receiver's).
// - Stream: else: it reads the offer first and answers it (recvLanding).
inline Landing receiverClearsToSend(bool destinationRegistered, bool allAllowed, bool bounceFits) {
  if (destinationRegistered) return allAllowed ? Landing::Destination : Landing::Stream;
  return bounceFits ? Landing::Bounce : Landing::Stream;
}

// Where a plain Recv's announced data lands once its offer is in (it did not clear to
// send): an unregistered source streams; a registered one lands in the registered
// destination only if that is free to be written now (every element allowed: in place, a
// block still being sent from there must leave first; pairwise all-to-all's receive from j
// into the block it sends to j), else in the bounce buffer when it fits (copied out as the
// `after` allows), else it streams (the stream is read only as far as allowed).
inline Landing recvLanding(const RendezvousOffer& offer, bool destinationRegistered,
                           bool allAllowed, bool bounceFits) {
  if (!offer.registered) return Landing::Stream;
  if (destinationRegistered && allAllowed) return Landing::Destination;
  return bounceFits ? Landing::Bounce : Landing::Stream;
}

}  // namespace chorus::detail
