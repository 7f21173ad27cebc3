// The job secret: 256 bits that every rank of a job holds and strangers do not. It keys
// the HMAC handshake of every store and TCP connection (handshake.hpp).
#pragma once

#include "security/crypto.hpp"

#include <array>
#include <compare>
#include <string>
#include <string_view>

namespace chorus::security {

struct JobSecret {
  std::array<uint8_t, 32> bytes{};
  // Derived from what every rank sees (torchrun-style launch without CHORUS_JOB_SECRET):
  // it keeps two jobs apart but is no protection against a hostile process, so a store
  // holding such a secret also checks that local peers run as the job's own uid.
  bool derived = false;

  static JobSecret random();  // getrandom
  // CHORUS_JOB_SECRET: any text, hashed (HMAC-SHA256 under a fixed label) to 256 bits.
  static JobSecret fromPassphrase(std::string_view text);
  // 1..64 hexadecimal digits, optionally 0x-prefixed, read as a big-endian number (so
  // "ff" is 31 zero bytes and 0xff). Throws Error(InvalidArgument) naming `what`.
  static JobSecret fromHex(std::string_view hex, const std::string& what);
  std::string hex() const;  // 64 digits, what fromHex reads back
  Bytes key() const { return bytes; }

  friend bool operator==(const JobSecret&, const JobSecret&) = default;
  friend auto operator<=>(const JobSecret&, const JobSecret&) = default;
};

}  // namespace chorus::security
