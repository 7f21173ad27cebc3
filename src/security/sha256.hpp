// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and dependency-free: enough to
// authenticate connections with the job secret. Not constant-time beyond what HMAC needs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

namespace chorus::security {

using Digest = std::array<uint8_t, 32>;
using Bytes = std::span<const uint8_t>;

inline Bytes asBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline Bytes asBytes(std::span<const std::byte> b) {
  return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
}

class Sha256 {
 public:
  Sha256();
  void update(Bytes data);
  Digest finish();  // the object must not be used afterwards

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_ = 0;  // bytes hashed so far
};

Digest sha256(Bytes data);

// HMAC over the concatenation of `parts` (so callers need not build one buffer).
Digest hmacSha256(Bytes key, std::initializer_list<Bytes> parts);

// Compares without an early exit, so timing does not tell how much of a MAC was right.
bool equalDigests(const Digest& a, const Digest& b);

}  // namespace chorus::security
