// Shared by the libFuzzer harnesses: a chorus::Error is the expected answer to malformed
// input; anything else (a crash, a sanitizer report, another exception) is a bug.
#pragma once

#include <chorus/chorus.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace chorus::fuzz {

inline std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

template <typename F>
void expectOnlyChorusErrors(F&& f) {
  try {
    f();
  } catch (const chorus::Error&) {
  }
}

}  // namespace chorus::fuzz
