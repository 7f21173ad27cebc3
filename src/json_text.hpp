// JSON text the library writes by hand (chorus-topo's JSON, the per-step trace): a string
// as a JSON string literal. The core library carries no JSON dependency; nlohmann-json is
// only a tool's (chorus-info).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace chorus {

// `text` quoted: '"' and '\' escaped, other control characters as \u00XX.
inline std::string jsonQuoted(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

}  // namespace chorus
