// The engine's side of a channel's rendezvous (transport.hpp's DirectTransfer): the offer
// that announces a large message in the stream, and where a Send or Recv step stands in
// the protocol. Pure data and decisions, unit-tested on the host (rendezvous_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace chorus::detail {

// 24 bytes in the stream, after the call's fingerprint and before the data (if any):
// a message of at least DirectTransfer::minBytes() on a channel that has a rendezvous.
// A registered source streams its first `head` and last `tail` bytes (streamedEnd) and
// writes only the middle [head, bytes - tail) into the receiver's buffer: the head goes
// out while the answer travels, the tail while the last write's completion comes back.
// In the stream the head follows the offer; the tail follows it once the middle is
// posted (refused: the rest of the message follows the head, as any streamed message).
struct RendezvousOffer {
  static constexpr uint32_t kMagic = 0x32564452;  // "RDV2"
  uint32_t magic = kMagic;
  uint32_t registered = 0;  // 1: the source is registered, the sender waits for an answer
  uint64_t bytes = 0;       // of the message, checked against the receiver's step
  uint32_t head = 0;        // bytes streamed before the written middle (0 unless registered)
  uint32_t tail = 0;        // bytes streamed after it
};
static_assert(sizeof(RendezvousOffer) == 24);

// The bytes of a registered message's head, and as many of its tail, that the sender
// streams: `setting` (the transport's, e.g. CHORUS_IB_RNDV_STREAMED), at most a quarter of
// the message (at least half of it goes zero-copy), in whole `align` units (the stream
// stays aligned). 0: the whole message is written.
inline size_t streamedEnd(size_t bytes, size_t setting, size_t align) {
  const size_t e = setting < bytes / 4 ? setting : bytes / 4;
  return align == 0 ? e : e / align * align;
}

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

// A receiver's announced message of `bytes` whose middle is written and whose `head` and
// `tail` come through the stream (in that order, the tail once the middle is posted):
// the bytes [0, ready) of where it lands that are in, given the streamed bytes read so
// far (the head's, then the tail's), the middle's landed prefix (pieces land in any order
// across QPs; DirectTransfer::landedPrefix) and whether all of the middle landed. The
// receiver folds or copies out up to there while later pieces are in flight.
inline size_t landedReady(size_t bytes, size_t head, size_t tail, size_t streamedRead,
                          size_t middlePrefix, bool middleLanded) {
  if (streamedRead < head) return streamedRead;
  if (!middleLanded) return head + middlePrefix;
  return bytes - tail + (streamedRead - head);
}

// Whether a message of `bytes` is announced with an offer (both ends decide alike).
inline bool announced(size_t bytes, size_t minBytes) { return minBytes > 0 && bytes >= minBytes; }

// The offer in `raw`, when it is one and announces `bytes`, with streamed ends that fit
// the message in whole `align` units (none unless registered); nullopt otherwise.
inline std::optional<RendezvousOffer> parseOffer(const std::byte* raw, uint64_t bytes,
                                                 size_t align) {
  RendezvousOffer o;
  std::memcpy(&o, raw, sizeof o);
  if (o.magic != RendezvousOffer::kMagic || o.registered > 1 || o.bytes != bytes)
    return std::nullopt;
  if ((!o.registered && (o.head || o.tail)) || uint64_t{o.head} + o.tail > bytes / 2 ||
      (align && (o.head % align || o.tail % align)))
    return std::nullopt;
  return o;
}

}  // namespace chorus::detail
