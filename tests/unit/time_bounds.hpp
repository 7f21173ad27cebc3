// Upper bounds on how soon something must happen ("a dead peer is noticed within 1 s", far
// below the deadline that would also end the wait) scale with the slowdown of a sanitizer
// build, so the asan and tsan labels check the same property without flaking.
#pragma once

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

}  // namespace chorus::test
