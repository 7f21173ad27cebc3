#include "security/job_secret.hpp"

#include "errors.hpp"

#include <algorithm>
#include <cctype>

namespace chorus::security {

JobSecret JobSecret::random() {
  JobSecret s;
  randomBytes(s.bytes);
  return s;
}

JobSecret JobSecret::fromPassphrase(std::string_view text) {
  JobSecret s;
  s.bytes = hmacSha256(asBytes("chorus job secret"), {asBytes(text)});
  return s;
}

JobSecret JobSecret::fromHex(std::string_view hex, const std::string& what) {
  if (hex.rfind("0x", 0) == 0 || hex.rfind("0X", 0) == 0) hex.remove_prefix(2);
  bool digits = std::all_of(hex.begin(), hex.end(),
                            [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (hex.empty() || hex.size() > 64 || !digits)
    throwInvalid(what + " must be 1 to 64 hexadecimal digits, not '" + std::string(hex) + "'");
  JobSecret s;
  auto value = [](char c) {
    return uint8_t(std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                                                               : std::tolower(c) - 'a' + 10);
  };
  // From the last digit backwards: digit i (from the right) is nibble i of the number.
  for (size_t i = 0; i < hex.size(); ++i) {
    uint8_t v = value(hex[hex.size() - 1 - i]);
    s.bytes[31 - i / 2] |= uint8_t(i % 2 ? v << 4 : v);
  }
  return s;
}

std::string JobSecret::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) out += {digits[b >> 4], digits[b & 15]};
  return out;
}

}  // namespace chorus::security
