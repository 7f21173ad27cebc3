// Mutual challenge-response between the side that connects (initiator) and the side that
// accepts (responder), both holding `key`. Pure message logic, no I/O:
//   1. I -> R  hello:     "CHAUTH01" | u16 context length (LE) | nonceI[16] | context
//   2. R -> I  challenge: nonceR[16] | HMAC(key, "chorus responder" | nonceI | nonceR | context)
//   3. I -> R  proof:     HMAC(key, "chorus initiator" | nonceR | nonceI | context)
// The context (the caller's own hello: rank, stream, ...) is bound into both MACs, so it
// cannot be altered in flight. Each MAC covers the other side's fresh nonce, so a recorded
// exchange cannot be replayed, and the role labels keep one side's answer from serving as
// the other's proof.
#pragma once

#include "security/crypto.hpp"

#include <optional>
#include <string>
#include <vector>

namespace chorus::security {

using Nonce = std::array<uint8_t, 16>;
Nonce randomNonce();                  // getrandom(2)
std::array<uint8_t, 32> randomKey();  // getrandom(2)

constexpr size_t kMaxContext = 256;
constexpr size_t kHelloHeader = 8 + 2 + 16;
constexpr size_t kChallengeSize = 16 + 32;
constexpr size_t kProofSize = 32;

class Initiator {
 public:
  // `context` is at most kMaxContext bytes.
  Initiator(Bytes key, Bytes context, Nonce nonce = randomNonce());
  std::vector<uint8_t> hello() const;
  // The proof to send back, or nullopt when the challenge does not prove the key.
  std::optional<Digest> answer(Bytes challenge) const;

 private:
  std::vector<uint8_t> key_, context_;
  Nonce nonce_;
};

class Responder {
 public:
  enum class State { Hello, Proof, Accepted, Refused };
  explicit Responder(Bytes key, Nonce nonce = randomNonce());

  // Bytes the current step still needs (0 once Accepted or Refused). Read no more than
  // this, so that what follows the proof stays in the stream for the caller's protocol.
  size_t wants() const;
  // Takes at most wants() bytes (the rest is ignored). When the hello completes, state()
  // turns to Proof and challenge() holds the reply to send.
  void feed(Bytes data);

  State state() const { return state_; }
  const std::vector<uint8_t>& challenge() const { return challenge_; }
  Bytes context() const;  // the initiator's context, once its hello is complete
  const std::string& reason() const { return reason_; }  // why Refused

 private:
  void refuse(std::string why);
  std::vector<uint8_t> key_, in_, challenge_;
  Nonce nonce_;
  size_t need_ = kHelloHeader;
  size_t helloEnd_ = 0;  // set when the hello is complete
  State state_ = State::Hello;
  std::string reason_;
};

}  // namespace chorus::security
