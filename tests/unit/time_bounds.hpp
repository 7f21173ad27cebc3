// Upper bounds on how soon something must happen ("a dead peer is noticed within 1 s", far
// below the deadline that would also end the wait) scale with the slowdown of a sanitizer
// build, so the asan and tsan labels check the same property without flaking.
#pragma once

#include <cstddef>

namespace chorus::test {

#if defined(__SANITIZE_THREAD__)
inline constexpr int kInstrumentationSlowdown = 10;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr int kInstrumentationSlowdown = 3;
#else
inline constexpr int kInstrumentationSlowdown = 1;
#endif

template <class Duration>
constexpr Duration within(Duration bound) {
  return bound * kInstrumentationSlowdown;
}

// Bulk test work (bytes exchanged, random cases tried) shrinks under ThreadSanitizer: its
// range checks and the page faults of fresh shadow memory made TcpTransport's 64 MiB
// exchange take 26 s instead of 1 s. The threads and the code paths are the same at a
// quarter of the size, and the full size runs in the uninstrumented tree.
#if defined(__SANITIZE_THREAD__)
inline constexpr size_t kBulkDivisor = 4;
#else
inline constexpr size_t kBulkDivisor = 1;
#endif

constexpr size_t bulk(size_t amount) { return amount / kBulkDivisor; }

}  // namespace chorus::test
