#include "security/handshake.hpp"

#include "errors.hpp"

#include <algorithm>
#include <cstring>

namespace chorus::security {
namespace {

constexpr char kMagic[8] = {'C', 'H', 'A', 'U', 'T', 'H', '0', '1'};
constexpr std::string_view kResponderLabel = "chorus responder";
constexpr std::string_view kInitiatorLabel = "chorus initiator";

}  // namespace

Nonce randomNonce() {
  Nonce n;
  randomBytes(n);
  return n;
}

std::array<uint8_t, 32> randomKey() {
  std::array<uint8_t, 32> key;
  randomBytes(key);
  return key;
}

Initiator::Initiator(Bytes key, Bytes context, Nonce nonce)
    : key_(key.begin(), key.end()), context_(context.begin(), context.end()), nonce_(nonce) {
  if (context_.size() > kMaxContext) throwInvalid("handshake context too long");
}

std::vector<uint8_t> Initiator::hello() const {
  std::vector<uint8_t> out(kMagic, kMagic + sizeof(kMagic));
  out.push_back(uint8_t(context_.size() & 0xff));
  out.push_back(uint8_t(context_.size() >> 8));
  out.insert(out.end(), nonce_.begin(), nonce_.end());
  out.insert(out.end(), context_.begin(), context_.end());
  return out;
}

std::optional<Digest> Initiator::answer(Bytes challenge) const {
  if (challenge.size() != kChallengeSize) return std::nullopt;
  Bytes theirs = challenge.first(16);
  Digest mac;
  std::memcpy(mac.data(), challenge.data() + 16, mac.size());
  Digest want = hmacSha256(key_, {asBytes(kResponderLabel), nonce_, theirs, context_});
  if (!equalDigests(mac, want)) return std::nullopt;
  return hmacSha256(key_, {asBytes(kInitiatorLabel), theirs, nonce_, context_});
}

Responder::Responder(Bytes key, Nonce nonce) : key_(key.begin(), key.end()), nonce_(nonce) {}

size_t Responder::wants() const {
  return state_ == State::Hello || state_ == State::Proof ? need_ - in_.size() : 0;
}

Bytes Responder::context() const {
  if (helloEnd_ == 0) return {};
  return Bytes(in_).subspan(kHelloHeader, helloEnd_ - kHelloHeader);
}

void Responder::refuse(std::string why) {
  state_ = State::Refused;
  reason_ = std::move(why);
}

void Responder::feed(Bytes data) {
  while (!data.empty() && wants() > 0) {
    size_t take = std::min(data.size(), wants());
    in_.insert(in_.end(), data.begin(), data.begin() + take);
    data = data.subspan(take);
    if (wants() > 0) return;
    if (state_ == State::Hello && need_ == kHelloHeader) {
      if (std::memcmp(in_.data(), kMagic, sizeof(kMagic)) != 0)
        return refuse("not a Chorus handshake (bad magic)");
      size_t length = in_[8] | size_t(in_[9]) << 8;
      if (length > kMaxContext) return refuse("handshake context too long");
      need_ += length;
      if (length > 0) continue;
    }
    if (state_ == State::Hello) {  // hello complete: answer it
      helloEnd_ = in_.size();
      Bytes theirs = Bytes(in_).subspan(10, 16);
      Digest mac = hmacSha256(key_, {asBytes(kResponderLabel), theirs, nonce_, context()});
      challenge_.assign(nonce_.begin(), nonce_.end());
      challenge_.insert(challenge_.end(), mac.begin(), mac.end());
      state_ = State::Proof;
      need_ = in_.size() + kProofSize;
      continue;
    }
    // Proof complete.
    Digest got;
    std::memcpy(got.data(), in_.data() + helloEnd_, got.size());
    Digest want =
        hmacSha256(key_, {asBytes(kInitiatorLabel), nonce_, Bytes(in_).subspan(10, 16), context()});
    if (!equalDigests(got, want)) return refuse("wrong proof (does not know the job secret)");
    state_ = State::Accepted;
  }
}

}  // namespace chorus::security
