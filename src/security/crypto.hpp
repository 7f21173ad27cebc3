// The primitives Chorus authenticates with, from OpenSSL's libcrypto: HMAC-SHA256 (RFC
// 2104), a constant-time compare (CRYPTO_memcmp), and secrets from getrandom(2). No
// cryptography is written here; this file only gives the calls a narrow, typed shape.
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

// HMAC-SHA256 over the concatenation of `parts` (so callers need not build one buffer).
Digest hmacSha256(Bytes key, std::initializer_list<Bytes> parts);

// Compares without an early exit (CRYPTO_memcmp), so timing does not tell how much of a
// MAC was right.
bool equalDigests(const Digest& a, const Digest& b);

// Fills `out` from the kernel's CSPRNG (getrandom, blocking until it is seeded).
void randomBytes(std::span<uint8_t> out);

}  // namespace chorus::security
