// Shared bookkeeping of chorus_errors_test: a pass/fail tally that prints every result
// with the library's message, keyword checks on messages, and the hang watchdog.
#pragma once

#include "watchdog.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <string>

namespace chorus_test {

// Each check must finish within this; argument errors should be reported at once.
inline constexpr std::chrono::seconds kCheckLimit{30};

struct Report {
  int rank = -1;
  int passed = 0;
  int failed = 0;
  Watchdog watchdog;

  void pass(const std::string& check, const std::string& detail) {
    ++passed;
    std::printf("ok   rank %d %s: %s\n", rank, check.c_str(), detail.c_str());
    std::fflush(stdout);
  }
  void fail(const std::string& check, const std::string& detail) {
    ++failed;
    std::printf("FAIL rank %d %s: %s\n", rank, check.c_str(), detail.c_str());
    std::fflush(stdout);
  }
};

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// True if the message names the problem: contains one of the keywords (any case).
inline bool mentionsAny(const std::string& message, std::initializer_list<const char*> words) {
  std::string m = lower(message);
  for (const char* w : words) {
    if (m.find(lower(w)) != std::string::npos) return true;
  }
  return false;
}

inline std::string joinWords(std::initializer_list<const char*> words) {
  std::string out;
  for (const char* w : words) out += (out.empty() ? "'" : " or '") + std::string(w) + "'";
  return out;
}

}  // namespace chorus_test
