// HMAC-SHA256 (RFC 4231 test vectors: they check our wiring of libcrypto, key handling
// and the split input included), the constant-time compare, and the challenge-response
// handshake with right and wrong keys.
#include "security/handshake.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace chorus::security;

namespace {

std::string hex(const Digest& d, size_t bytes = 32) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < bytes; ++i) s += {digits[d[i] >> 4], digits[d[i] & 15]};
  return s;
}

std::vector<uint8_t> repeat(uint8_t byte, size_t n) { return std::vector<uint8_t>(n, byte); }

std::vector<uint8_t> unhex(const std::string& h) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(uint8_t(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

}  // namespace

TEST(HmacSha256, Rfc4231) {
  struct Case {
    std::vector<uint8_t> key, data;
    std::string mac;
    size_t bytes = 32;
  };
  const std::string longData =
      "This is a test using a larger than block-size key and a larger than block-size data. The "
      "key needs to be hashed before being used by the HMAC algorithm.";
  auto bytesOf = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  Case cases[] = {
      {repeat(0x0b, 20), bytesOf("Hi There"),
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {bytesOf("Jefe"), bytesOf("what do ya want for nothing?"),
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {repeat(0xaa, 20), repeat(0xdd, 50),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"), repeat(0xcd, 50),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {repeat(0x0c, 20), bytesOf("Test With Truncation"), "a3b6167473100ee06e0c796c2955552b", 16},
      {repeat(0xaa, 131), bytesOf("Test Using Larger Than Block-Size Key - Hash Key First"),
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {repeat(0xaa, 131), bytesOf(longData),
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (const auto& c : cases) EXPECT_EQ(hex(hmacSha256(c.key, {c.data}), c.bytes), c.mac);
  // Split input gives the same MAC as one piece.
  auto whole = hmacSha256(cases[1].key, {cases[1].data});
  auto split = hmacSha256(cases[1].key, {asBytes("what do ya"), asBytes(" want for nothing?")});
  EXPECT_TRUE(equalDigests(whole, split));
  // An empty key and empty parts are valid HMAC input (RFC 2104), not an error.
  EXPECT_EQ(hex(hmacSha256({}, {})),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(EqualDigests, EveryByteCounts) {
  Digest a{};
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 7);
  EXPECT_TRUE(equalDigests(a, a));
  for (size_t i = 0; i < a.size(); ++i) {
    Digest b = a;
    b[i] ^= 0x80;
    EXPECT_FALSE(equalDigests(a, b)) << "byte " << i;
  }
}

namespace {

// Runs a whole exchange; `feedInPieces` feeds the responder one byte at a time.
Responder::State exchange(Bytes initiatorKey, Bytes responderKey, Bytes context,
                          bool* initiatorTrusted = nullptr, bool feedInPieces = false) {
  Initiator i(initiatorKey, context);
  Responder r(responderKey);
  auto hello = i.hello();
  if (feedInPieces) {
    for (uint8_t b : hello) r.feed({&b, 1});
  } else {
    r.feed(hello);
  }
  if (r.state() != Responder::State::Proof) return r.state();
  auto proof = i.answer(r.challenge());
  if (initiatorTrusted) *initiatorTrusted = proof.has_value();
  Digest sent = proof.value_or(Digest{});  // a stranger sends something anyway
  r.feed(sent);
  return r.state();
}

}  // namespace

TEST(Handshake, SameKeyBothSidesTrust) {
  auto key = randomKey();
  bool trusted = false;
  EXPECT_EQ(exchange(key, key, asBytes("rank 3 stream 1"), &trusted), Responder::State::Accepted);
  EXPECT_TRUE(trusted);
  EXPECT_EQ(exchange(key, key, {}, &trusted, true), Responder::State::Accepted);
  EXPECT_TRUE(trusted);
}

TEST(Handshake, WrongKeyRefusedBothWays) {
  auto a = randomKey(), b = randomKey();
  bool trusted = true;
  Responder r(b);
  EXPECT_EQ(exchange(a, b, asBytes("ctx"), &trusted), Responder::State::Refused);
  EXPECT_FALSE(trusted);  // the initiator does not trust a responder without the key
  // One bit of the key is enough.
  auto c = a;
  c[31] ^= 1;
  EXPECT_EQ(exchange(a, c, asBytes("ctx"), &trusted), Responder::State::Refused);
  EXPECT_FALSE(trusted);
}

TEST(Handshake, GarbageAndOversizedContextRefused) {
  auto key = randomKey();
  Responder r(key);
  std::string junk(100, 'x');
  r.feed(asBytes(junk));
  EXPECT_EQ(r.state(), Responder::State::Refused);
  EXPECT_NE(r.reason().find("magic"), std::string::npos);

  Initiator i(key, {});
  auto hello = i.hello();
  hello[8] = 0xff, hello[9] = 0xff;  // claims a 64 KiB context
  Responder big(key);
  big.feed(hello);
  EXPECT_EQ(big.state(), Responder::State::Refused);
  std::vector<uint8_t> tooLong(kMaxContext + 1);
  EXPECT_ANY_THROW(Initiator(key, tooLong));
}

TEST(Handshake, TamperedContextOrReplayedProofRefused) {
  auto key = randomKey();
  // The context is bound into the MACs: change it in flight and neither side trusts.
  Initiator i(key, asBytes("rank 1"));
  auto hello = i.hello();
  hello.back() = '2';
  Responder r(key);
  r.feed(hello);
  ASSERT_EQ(r.state(), Responder::State::Proof);
  EXPECT_FALSE(i.answer(r.challenge()).has_value());

  // A proof recorded from one exchange does not open another (fresh responder nonce).
  Initiator i2(key, asBytes("ctx"));
  Responder first(key), second(key);
  first.feed(i2.hello());
  auto proof = i2.answer(first.challenge());
  ASSERT_TRUE(proof);
  first.feed(*proof);
  EXPECT_EQ(first.state(), Responder::State::Accepted);
  second.feed(i2.hello());
  second.feed(*proof);
  EXPECT_EQ(second.state(), Responder::State::Refused);
}

TEST(Handshake, ResponderNeverReadsPastTheProof) {
  auto key = randomKey();
  Initiator i(key, asBytes("c"));
  Responder r(key);
  auto hello = i.hello();
  EXPECT_EQ(r.wants(), kHelloHeader);
  r.feed(hello);
  EXPECT_EQ(r.wants(), kProofSize);
  auto proof = *i.answer(r.challenge());
  std::vector<uint8_t> more(proof.begin(), proof.end());
  more.insert(more.end(), 10, 0xee);  // the protocol's first bytes: not taken
  r.feed(more);
  EXPECT_EQ(r.state(), Responder::State::Accepted);
  EXPECT_EQ(r.wants(), 0u);
  EXPECT_EQ(std::string(r.context().begin(), r.context().end()), "c");
}
