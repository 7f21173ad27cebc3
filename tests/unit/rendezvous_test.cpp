// The engine's side of the zero-copy rendezvous (src/engine/rendezvous.hpp): which
// messages are announced, the offer's wire format, and when the receiver accepts.
#include "engine/rendezvous.hpp"
#include "engine/rendezvous_reduce.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

using chorus::detail::announced;
using chorus::detail::apart;
using chorus::detail::Landing;
using chorus::detail::parseOffer;
using chorus::detail::receiverClearsToSend;
using chorus::detail::recvLanding;
using chorus::detail::reduceLanding;
using chorus::detail::reduceLandingBeforeOffer;
using chorus::detail::RendezvousOffer;

TEST(Rendezvous, AnnouncedFromTheThresholdOn) {
  EXPECT_FALSE(announced(65535, 65536));
  EXPECT_TRUE(announced(65536, 65536));
  EXPECT_TRUE(announced(size_t{1} << 30, 65536));
  EXPECT_FALSE(announced(size_t{1} << 30, 0));  // 0: the channel never announces
}

// The offer's bytes, field by field: "RDV2", the registered flag, the size, the streamed
// head and tail (little-endian hosts at both ends, as the call's fingerprint).
TEST(Rendezvous, OfferWireFormat) {
  RendezvousOffer o;
  o.registered = 1;
  o.bytes = 0x0102030405060708ull;
  o.head = 0x10000;
  o.tail = 0x2000;
  std::array<std::byte, 24> raw;
  std::memcpy(raw.data(), &o, sizeof o);
  const std::array<uint8_t, 24> want = {'R', 'D', 'V', '2', 1, 0, 0, 0, 8, 7,    6, 5,
                                        4,   3,   2,   1,   0, 0, 1, 0, 0, 0x20, 0, 0};
  for (size_t i = 0; i < raw.size(); ++i) EXPECT_EQ(static_cast<uint8_t>(raw[i]), want[i]) << i;
  auto back = parseOffer(raw.data(), o.bytes, 8);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->registered, 1u);
  EXPECT_EQ(back->bytes, o.bytes);
  EXPECT_EQ(back->head, 0x10000u);
  EXPECT_EQ(back->tail, 0x2000u);
}

// A record that is no offer, or announces another size, is refused (the caller reports
// the ranks' different schedules), never taken for a smaller or larger message; so are
// streamed ends on an unregistered source, ends over half the message or out of alignment.
TEST(Rendezvous, OfferOfAnotherSizeOrNoOfferIsRefused) {
  RendezvousOffer o;
  o.bytes = 1 << 20;
  std::array<std::byte, 24> raw;
  const auto with = [&](const RendezvousOffer& x) {
    std::memcpy(raw.data(), &x, sizeof x);
    return parseOffer(raw.data(), 1 << 20, 8).has_value();
  };
  EXPECT_TRUE(with(o));
  EXPECT_FALSE(parseOffer(raw.data(), (1 << 20) + 8, 8).has_value());
  raw[0] = std::byte{'X'};
  EXPECT_FALSE(parseOffer(raw.data(), 1 << 20, 8).has_value());
  RendezvousOffer bad = o;
  bad.registered = 2;
  EXPECT_FALSE(with(bad));
  bad = o;
  bad.head = 4096;  // streamed ends, but the source is not registered
  EXPECT_FALSE(with(bad));
  bad.registered = 1;
  EXPECT_TRUE(with(bad));
  bad.head = bad.tail = 1 << 18;  // half the message: still written in part
  EXPECT_TRUE(with(bad));
  bad.tail += 8;  // more than half
  EXPECT_FALSE(with(bad));
  bad.tail = 4100;  // not a whole number of 8-byte units
  EXPECT_FALSE(with(bad));
}

// The streamed ends: the transport's setting, at most a quarter of the message, whole
// alignment units; 0 where the setting is 0.
TEST(Rendezvous, StreamedEndsAreAtMostAQuarterInWholeUnits) {
  using chorus::detail::streamedEnd;
  EXPECT_EQ(streamedEnd(256 << 10, 64 << 10, 4096), size_t{64} << 10);
  EXPECT_EQ(streamedEnd(128 << 10, 64 << 10, 4096), size_t{32} << 10);
  EXPECT_EQ(streamedEnd(64 << 10, 64 << 10, 4096), size_t{16} << 10);
  EXPECT_EQ(streamedEnd(100000, 64 << 10, 4096), size_t{24576});  // 25000 -> 6 pages
  EXPECT_EQ(streamedEnd(1 << 20, 0, 4096), 0u);
  EXPECT_EQ(streamedEnd(1 << 20, 100, 8), 96u);
}

// A plain Recv takes the data straight into its destination only when both buffers are
// registered and the destination is free to be written (recvLanding, asked once the offer
// is in): in place, pairwise all-to-all receives from j into the block it still sends to
// j, and a peer writing there before that send has left overwrites it.
TEST(Rendezvous, RecvLandsInItsDestinationOnlyRegisteredAndFree) {
  RendezvousOffer reg, unreg;
  reg.registered = 1;
  EXPECT_EQ(recvLanding(reg, true, true, false), Landing::Destination);
  EXPECT_EQ(recvLanding(reg, true, true, true), Landing::Destination);
  EXPECT_EQ(recvLanding(reg, true, false, false), Landing::Stream);  // still being sent
  EXPECT_EQ(recvLanding(reg, true, false, true), Landing::Bounce);
  EXPECT_EQ(recvLanding(reg, false, true, false), Landing::Stream);
  EXPECT_EQ(recvLanding(reg, false, true, true), Landing::Bounce);
  for (bool registered : {false, true})
    for (bool free : {false, true})
      for (bool fits : {false, true})
        EXPECT_EQ(recvLanding(unreg, registered, free, fits), Landing::Stream);
  // Overlap (a RecvReduce's "local apart"): a byte shared is enough to fold in place.
  EXPECT_TRUE(apart(0, 64, 64));
  EXPECT_TRUE(apart(64, 0, 64));
  EXPECT_FALSE(apart(0, 63, 64));
  EXPECT_FALSE(apart(63, 0, 64));
  EXPECT_FALSE(apart(0, 0, 64));
}

// A plain Recv clears to send (answers before the offer) into its registered destination
// when it is free to be written (every element allowed), into the bounce buffer when its
// destination is unregistered and the message fits; otherwise it reads the offer first.
TEST(Rendezvous, RecvClearsToSendIntoItsDestinationOrTheBounceBuffer) {
  // (destination registered, every element allowed, bounce fits): every combination
  EXPECT_EQ(receiverClearsToSend(true, true, true), Landing::Destination);
  EXPECT_EQ(receiverClearsToSend(true, true, false), Landing::Destination);
  EXPECT_EQ(receiverClearsToSend(true, false, true), Landing::Stream);  // not free yet
  EXPECT_EQ(receiverClearsToSend(true, false, false), Landing::Stream);
  EXPECT_EQ(receiverClearsToSend(false, true, true), Landing::Bounce);   // unregistered
  EXPECT_EQ(receiverClearsToSend(false, false, true), Landing::Bounce);  // copied out later
  EXPECT_EQ(receiverClearsToSend(false, true, false), Landing::Stream);  // too large
  EXPECT_EQ(receiverClearsToSend(false, false, false), Landing::Stream);
}

// A RecvReduce, as its step begins (the engine's clear to send: anything but Stream
// answers at once): its destination when it can fold there (registered, local range
// apart and written), else the bounce buffer when the message fits it, else it waits for
// the offer.
TEST(Rendezvous, ReduceClearsToSendIntoItsDestinationOrTheBounceBuffer) {
  // (destination registered, local apart, local written, bounce fits): each condition fails
  EXPECT_EQ(reduceLandingBeforeOffer(true, true, true, true), Landing::Destination);
  EXPECT_EQ(reduceLandingBeforeOffer(true, true, true, false), Landing::Destination);
  EXPECT_EQ(reduceLandingBeforeOffer(true, false, true, true), Landing::Bounce);  // in place
  EXPECT_EQ(reduceLandingBeforeOffer(true, true, false, true),
            Landing::Bounce);  // local still written
  EXPECT_EQ(reduceLandingBeforeOffer(false, true, true, true),
            Landing::Bounce);  // unregistered
  EXPECT_EQ(reduceLandingBeforeOffer(true, false, true, false),
            Landing::Stream);  // in place, larger than the bounce buffer: read the offer
  EXPECT_EQ(reduceLandingBeforeOffer(false, true, true, false), Landing::Stream);
  EXPECT_EQ(reduceLandingBeforeOffer(true, true, false, false), Landing::Stream);
}

// Once the offer is in (a RecvReduce that did not clear to send): a registered source
// lands as before the offer; an unregistered one streams wherever the data could land.
TEST(Rendezvous, ReduceThatCannotFoldInItsDestinationLandsInTheBounceBuffer) {
  RendezvousOffer reg, unreg;
  reg.registered = 1;
  for (int bits = 0; bits < 16; ++bits) {
    const bool registered = bits & 1, localApart = bits & 2, written = bits & 4, fits = bits & 8;
    EXPECT_EQ(reduceLanding(reg, registered, localApart, written, fits),
              reduceLandingBeforeOffer(registered, localApart, written, fits))
        << bits;
    EXPECT_EQ(reduceLanding(unreg, registered, localApart, written, fits), Landing::Stream) << bits;
  }
  // (offer, destination registered, local apart, local written, bounce fits)
  EXPECT_EQ(reduceLanding(reg, true, true, true, false), Landing::Destination);
  EXPECT_EQ(reduceLanding(reg, false, false, false, true), Landing::Bounce);
  EXPECT_EQ(reduceLanding(reg, true, false, true, false), Landing::Stream);  // too large
}
