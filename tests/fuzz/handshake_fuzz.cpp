// The connection handshake as the accepting side reads it (store and tcp transport):
// the input is what a stranger sends, fed in pieces whose sizes come from the input too.
// The first bytes choose between a raw stranger and one that starts with a valid hello.
#include "fuzz_input.hpp"
#include "security/handshake.hpp"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus::security;
  if (size < 1) return 0;
  const std::array<uint8_t, 8> key = {1, 2, 3, 4, 5, 6, 7, 8};
  Nonce nonce{};  // fixed, so that runs repeat
  Responder r(key, nonce);
  std::vector<uint8_t> stream;
  if (data[0] & 1) {  // a real hello first, then the fuzzer's bytes as the proof and beyond
    Initiator i(key, asBytes("context"), nonce);
    stream = i.hello();
  }
  stream.insert(stream.end(), data + 1, data + size);
  size_t at = 0, piece = (data[0] >> 1) + 1;
  while (at < stream.size() && r.wants() > 0) {
    size_t n = std::min({piece, r.wants(), stream.size() - at});
    r.feed({stream.data() + at, n});
    at += n;
    if (r.state() == Responder::State::Proof && r.challenge().size() != kChallengeSize)
      __builtin_trap();
  }
  if (r.state() == Responder::State::Accepted && r.context().size() > kMaxContext) __builtin_trap();
  // The connecting side reading a challenge.
  Initiator i(key, asBytes("context"), nonce);
  chorus::fuzz::expectOnlyChorusErrors([&] { (void)i.answer({data + 1, size - 1}); });
  return 0;
}
