// Send, Recv and RecvReduce steps of large messages over a channel with a rendezvous
// (transport.hpp's DirectTransfer, engine/rendezvous.hpp's offer): the sender announces the
// message in the stream; when both buffers are registered the data goes straight from the
// sender's buffer into the receiver's (a RecvReduce's lands in its destination and is
// folded there, when its local range is apart: rendezvous_reduce.hpp), else through the stream
// as for any message. A RecvReduce that cannot fold in its destination (in place) lets the
// sender write into the channel's bounce buffer and folds from there; a Recv into an
// unregistered destination lets it write there too and copies out from there. A receiver that will
// take any registered source answers as its step begins, without waiting for the offer
// (clear to send: receiverClearsToSend, reduceLandingBeforeOffer).
#include "algorithms/schedule_rules.hpp"
#include "engine/engine.hpp"
#include "engine/rendezvous_reduce.hpp"
#include "engine/wire_header.hpp"
#include "kernels/reduce.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace chorus {

using detail::OpState;
using detail::RendezvousOffer;
using detail::RendezvousState;

// Whether a receiver folds (or copies out) the middle's landed prefix while later pieces
// are in flight (DirectTransfer::landedPrefix), or all of it once it landed. Off: in the
// Soft-RoCE (TCG) bed folding as pieces land measured slower, against the same build
// folding at the end (1 MiB, 5 rounds: rd in place 0.67x, behind in 5 of 5 rounds; rd
// 0.88x; ring in place 0.88x; docs/verbs_striping.md, 2026-12-05): each piece wakes the
// rank for a small fold, taking the CPU that rxe's packet processing needs, with little
// fold time to hide behind the wire. Worth measuring again on hardware verbs.
constexpr bool kFoldAsPiecesLand = false;

// The channel's rendezvous for a step's message of `bytes`, or nullptr: it streams.
DirectTransfer* Engine::rendezvousFor(detail::StepProgress& p, Channel& channel, size_t bytes) {
  if (p.rendezvous == RendezvousState::Stream) return nullptr;
  DirectTransfer* rv = channel.directTransfer();
  if (!rv || !detail::announced(bytes, rv->minBytes())) {
    p.rendezvous = RendezvousState::Stream;
    return nullptr;
  }
  return rv;
}

namespace {
// The sender's offer for step `index` (its source registered or not, and the head and
// tail it streams), into p.record.
void writeOffer(OpState& op, int index, const DirectTransfer& rv) {
  const Step& step = op.schedule->steps[index];
  RendezvousOffer offer;
  offer.registered = detail::regionOf(op, step.src) ? 1 : 0;
  offer.bytes = step.src.count * op.elementSize;
  if (offer.registered) {
    offer.head = offer.tail = static_cast<uint32_t>(  // the stream stays aligned (rule 5)
        detail::streamedEnd(offer.bytes, rv.streamedEnds(), rules::kStreamAlign));
  }
  std::memcpy(op.progress[index].record.data(), &offer, sizeof offer);
}

// The offer a step sent or took (in p.record).
RendezvousOffer offerIn(const detail::StepProgress& p) {
  RendezvousOffer offer;
  std::memcpy(&offer, p.record.data(), sizeof offer);
  return offer;
}
}  // namespace

// A Send that announces its message and carries the call's fingerprint: both in one
// trySend (one write, one completion on each side over verbs, instead of two). What does
// not fit now goes on as usual: sendHeader the rest of the fingerprint, sendRendezvous
// the rest of the offer.
void Engine::sendHeaderWithOffer(OpState& op, int index, Channel& channel, bool& moved) {
  auto& p = op.progress[index];
  const Step& step = op.schedule->steps[index];
  if (p.rendezvous != RendezvousState::Undecided || p.recordBytes != 0) return;
  DirectTransfer* rv = rendezvousFor(p, channel, step.src.count * op.elementSize);
  if (!rv) return;
  const detail::WireHeader h = detail::headerOf(op);
  std::memcpy(p.header.data(), &h, sizeof h);
  writeOffer(op, index, *rv);
  constexpr size_t kHeader = sizeof(detail::WireHeader);
  std::array<std::byte, kHeader + sizeof(RendezvousOffer)> both;
  std::memcpy(both.data(), p.header.data(), kHeader);
  std::memcpy(both.data() + kHeader, p.record.data(), sizeof(RendezvousOffer));
  const size_t taken = channel.trySend(both.data(), both.size());
  if (taken == 0) return;
  moved = true;
  p.headerBytes = static_cast<uint8_t>(std::min(taken, kHeader));
  p.recordBytes = static_cast<uint8_t>(taken - p.headerBytes);
}

bool Engine::sendRendezvous(OpState& op, int index, Channel& channel, bool& moved) {
  auto& p = op.progress[index];
  const Step& step = op.schedule->steps[index];
  const size_t dataBytes = step.src.count * op.elementSize;
  DirectTransfer* rv = rendezvousFor(p, channel, dataBytes);
  if (!rv) return false;
  const LocalRegion* region = detail::regionOf(op, step.src);
  if (p.rendezvous == RendezvousState::Undecided) {
    if (p.recordBytes == 0) writeOffer(op, index, *rv);
    while (p.recordBytes < sizeof(RendezvousOffer)) {
      const size_t taken =
          channel.trySend(p.record.data() + p.recordBytes, sizeof(RendezvousOffer) - p.recordBytes);
      if (taken == 0) return true;
      p.recordBytes += static_cast<uint8_t>(taken);
      moved = true;
    }
    rv->sending();  // the transfer's number; its answer may be here already (clear to send)
    p.rendezvous = region ? RendezvousState::Answering : RendezvousState::Stream;
    if (!region) return false;
  }
  const RendezvousOffer offer = offerIn(p);
  const std::byte* data = detail::resolve(op, step.src);
  // What the schedule allows (the source may still be filling, element by element, from
  // an earlier step of this op).
  const size_t allowed = std::min(allowedElements(op, index), step.src.count) * op.elementSize;
  // Streams source bytes [from + *done, to) (as far as allowed and the stream takes them).
  const auto stream = [&](size_t from, size_t to, size_t& done) {
    while (from + done < std::min(to, allowed)) {
      const size_t taken = channel.trySend(data + from + done, std::min(to, allowed) - from - done);
      if (taken == 0) break;
      done += taken;
      moved = true;
    }
    return from + done == to;
  };
  if (p.rendezvous == RendezvousState::Answering) {
    // The head goes through the stream while the answer travels (all of it, whatever the
    // answer: the receiver reads it from the stream either way).
    size_t head = p.bytes;
    const bool headDone = stream(0, offer.head, head);
    p.bytes = head;
    if (!headDone) return true;
    const DirectTransfer::Answer answer = rv->answer();
    if (answer == DirectTransfer::Answer::None) return true;
    moved = true;
    p.rendezvous = answer == DirectTransfer::Answer::Accepted ? RendezvousState::Direct
                                                              : RendezvousState::Stream;
    if (p.rendezvous == RendezvousState::Stream) return false;  // the rest follows the head
  }
  // Direct: put the middle, stream the tail, then wait for the writes to complete.
  const size_t middleEnd = dataBytes - offer.tail;
  if (p.bytes < std::min(allowed, middleEnd)) {
    const size_t posted = rv->put(*region, data, p.bytes, std::min(allowed, middleEnd));
    moved = moved || posted > p.bytes;
    p.bytes = posted;
  }
  if (p.bytes < middleEnd || !stream(middleEnd, dataBytes, p.tailBytes)) return true;
  if (rv->putDone(middleEnd)) {
    p.bytes = dataBytes;
    p.elements = step.src.count;
    completeStep(op, index);
    moved = true;
  }
  return true;
}

// The offer in the stream, once all of it is in (nullopt until then); throws when the
// peer announced no such message.
std::optional<RendezvousOffer> Engine::takeOffer(OpState& op, int index, Channel& channel,
                                                 bool& moved) {
  auto& p = op.progress[index];
  const Step& step = op.schedule->steps[index];
  const size_t dataBytes = step.dst.count * op.elementSize;
  while (p.recordBytes < sizeof(RendezvousOffer)) {
    std::span<const std::byte> incoming = channel.peek();
    if (incoming.empty()) return std::nullopt;
    const size_t used = std::min(incoming.size(), sizeof(RendezvousOffer) - p.recordBytes);
    std::memcpy(p.record.data() + p.recordBytes, incoming.data(), used);
    channel.consume(used);
    p.recordBytes += static_cast<uint8_t>(used);
    moved = true;
  }
  const auto offer = detail::parseOffer(p.record.data(), dataBytes, rules::kStreamAlign);
  if (!offer)
    throw Error(Result::InvalidUsage,
                op.describe() + ": rank " + std::to_string(step.peer) + " did not announce the " +
                    std::to_string(dataBytes) +
                    "-byte message this rank receives (the ranks run different schedules "
                    "or settings)");
  return offer;
}

// Receiver, from the step's first pass on, before the call's fingerprint from the peer is
// in (the first message of each call carries one; waiting for it would leave the answer
// no head start there): numbers the transfer and, when the step will take any registered
// source (receiverClearsToSend for a Recv, reduceLandingBeforeOffer for a RecvReduce, say
// Destination or Bounce), sends the answer at once. A peer running
// another call is still caught by the fingerprint; the most it could write first is the
// size this rank offered, into this call's destination.
void Engine::recvClearToSend(OpState& op, int index, Channel& channel, bool& moved) {
  auto& p = op.progress[index];
  if (p.rendezvous != RendezvousState::Undecided && p.rendezvous != RendezvousState::ClearToSend)
    return;
  const Step& step = op.schedule->steps[index];
  const size_t dataBytes = step.dst.count * op.elementSize;
  DirectTransfer* rv = rendezvousFor(p, channel, dataBytes);
  if (!rv) return;
  const LocalRegion* region = detail::regionOf(op, step.dst);
  if (p.rendezvous == RendezvousState::Undecided) {  // the step's first pass
    rv->receiving();
    const bool reducing = step.kind == StepKind::RecvReduce;
    const bool allAllowed = allowedElements(op, index) >= step.dst.count;
    const bool bounceFits = dataBytes <= rv->bounceBytes();
    // The source is taken as registered: a stream offer withdraws.
    const detail::Landing landing =
        reducing ? detail::reduceLandingBeforeOffer(
                       region != nullptr,
                       detail::apart(reinterpret_cast<uintptr_t>(detail::resolve(op, step.dst)),
                                     reinterpret_cast<uintptr_t>(detail::resolve(op, step.src)),
                                     dataBytes),
                       allAllowed, bounceFits)
                 : detail::receiverClearsToSend(region != nullptr, allAllowed, bounceFits);
    p.intoBounce = landing == detail::Landing::Bounce;
    p.rendezvous = landing != detail::Landing::Stream ? RendezvousState::ClearToSend
                                                      : RendezvousState::Reading;
  }
  if (p.rendezvous == RendezvousState::ClearToSend &&
      (p.intoBounce ? rv->offerBounce(dataBytes)
                    : rv->offer(region, detail::resolve(op, step.dst), dataBytes))) {
    moved = true;
    p.rendezvous = RendezvousState::Cleared;
  }
}

bool Engine::recvRendezvous(OpState& op, int index, Channel& channel, bool& moved) {
  auto& p = op.progress[index];
  const Step& step = op.schedule->steps[index];
  const size_t dataBytes = step.dst.count * op.elementSize;
  DirectTransfer* rv = rendezvousFor(p, channel, dataBytes);
  if (!rv) return false;
  const bool reducing = step.kind == StepKind::RecvReduce;
  const LocalRegion* region = detail::regionOf(op, step.dst);
  const auto localApart = [&] {
    return detail::apart(reinterpret_cast<uintptr_t>(detail::resolve(op, step.dst)),
                         reinterpret_cast<uintptr_t>(detail::resolve(op, step.src)), dataBytes);
  };
  recvClearToSend(op, index, channel, moved);
  if (p.rendezvous == RendezvousState::ClearToSend) return true;  // not sent yet
  if (p.rendezvous == RendezvousState::Cleared) {
    const auto offer = takeOffer(op, index, channel, moved);
    if (!offer) return true;
    if (!offer->registered) {  // the data keeps the stream; the sender drops the answer
      rv->withdraw();
      p.rendezvous = RendezvousState::Stream;
      p.intoBounce = false;
      return false;
    }
    p.rendezvous = RendezvousState::Direct;
  }
  if (p.rendezvous == RendezvousState::Reading) {
    const auto offer = takeOffer(op, index, channel, moved);
    if (!offer) return true;
    if (!offer->registered) {
      p.rendezvous = RendezvousState::Stream;
      return false;
    }
    p.rendezvous = RendezvousState::Answering;
    // Which answer, until it is sent (1: accept); `readElements` is free until then.
    bool accept;
    if (reducing) {  // in its destination, or in the bounce buffer, or refused
      const auto landing = detail::reduceLanding(*offer, region != nullptr, localApart(),
                                                 allowedElements(op, index) >= step.dst.count,
                                                 dataBytes <= rv->bounceBytes());
      accept = landing != detail::Landing::Stream;
      p.intoBounce = landing == detail::Landing::Bounce;
    } else {  // in its destination if free to be written, else in the bounce buffer, or refused
      const auto landing = detail::recvLanding(*offer, region != nullptr,
                                               allowedElements(op, index) >= step.dst.count,
                                               dataBytes <= rv->bounceBytes());
      accept = landing != detail::Landing::Stream;
      p.intoBounce = landing == detail::Landing::Bounce;
    }
    p.readElements = accept ? 1 : 0;
  }
  if (p.rendezvous == RendezvousState::Answering) {
    const bool accept = p.readElements == 1;
    const bool sent = accept && p.intoBounce ? rv->offerBounce(dataBytes)
                                             : rv->offer(accept ? region : nullptr,
                                                         detail::resolve(op, step.dst), dataBytes);
    if (!sent) return true;
    moved = true;
    p.readElements = 0;
    p.rendezvous = accept ? RendezvousState::Direct : RendezvousState::Stream;
    if (!accept) return false;
  }
  // Direct: the head and the tail come through the stream (in that order; a RecvReduce
  // lands them beside the middle too), the middle is written into the destination, or
  // into the bounce buffer. What is in (the head, then the middle's prefix that landed,
  // pieces landing in any order across QPs, then the tail) is folded, or copied out of
  // the bounce buffer, while the rest is in flight.
  std::byte* const dst = detail::resolve(op, step.dst);
  std::byte* const landing = p.intoBounce ? rv->bounce(dataBytes) : dst;
  const RendezvousOffer offer = offerIn(p);
  const size_t streamed = size_t{offer.head} + offer.tail;
  const size_t middle = dataBytes - streamed;
  // Reads streamed bytes up to `upTo` (p.bytes counts them: the head's, then the tail's).
  const auto readStream = [&](size_t upTo) {
    while (p.bytes < upTo) {
      // The destination must be free to write (the bounce buffer is).
      if (!p.intoBounce && allowedElements(op, index) < step.dst.count) return;
      std::span<const std::byte> incoming = channel.peek();
      if (incoming.empty()) return;
      const bool inHead = p.bytes < offer.head;
      const size_t at = inHead ? p.bytes : middle + p.bytes;
      const size_t used = std::min(incoming.size(), (inHead ? offer.head : upTo) - p.bytes);
      std::memcpy(landing + at, incoming.data(), used);
      channel.consume(used);
      p.bytes += used;
      moved = true;
    }
  };
  readStream(offer.head);
  if (p.bytes < offer.head) return true;
  if (!p.middleLanded && rv->landed(middle)) {
    p.middleLanded = true;
    moved = true;
  }
  readStream(streamed);
  const size_t ready = detail::landedReady(dataBytes, offer.head, offer.tail, p.bytes,
                                           p.middleLanded      ? middle
                                           : kFoldAsPiecesLand ? rv->landedPrefix()
                                                               : 0,
                                           p.middleLanded);
  // dst = local OP landed (a RecvReduce), or the bounce buffer copied out (a Recv into an
  // unregistered destination), as far as the local operand is written and the
  // destination free (all of it when folding in the destination: its local range was
  // written before the answer). A Recv whose data lands in its destination only counts it.
  const bool inPlace = !reducing && !p.intoBounce;
  const size_t to = std::min({inPlace ? step.dst.count : allowedElements(op, index), step.dst.count,
                              ready / op.elementSize});
  if (to > p.elements) {
    const size_t at = p.elements * op.elementSize;
    if (reducing) {
      kernels::reduce(op.type, op.op, dst + at, detail::resolve(op, step.src) + at, landing + at,
                      to - p.elements);
      if (step.finalize && op.op == RedOp::Avg && config_.nranks > 1)
        kernels::divide(op.type, dst + at, dst + at, to - p.elements, config_.nranks);
    } else if (p.intoBounce) {
      std::memcpy(dst + at, landing + at, (to - p.elements) * op.elementSize);
    }
    p.elements = to;
    moved = true;
  }
  if (!p.middleLanded || p.bytes < streamed || p.elements < step.dst.count) return true;
  p.elements = step.dst.count;
  completeStep(op, index);
  moved = true;
  return true;
}

}  // namespace chorus
