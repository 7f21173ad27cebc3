// What the GPU tests compare: a kernel's results against the CPU kernels', bit for bit,
// except where both are NaN (the GPU's arithmetic returns its canonical NaN, so payloads
// may differ). NaN is read with the multi-process tests' own decoder (dtypes.hpp), not the
// library's conversions.
#pragma once

#include "tests/multiproc/dtypes.hpp"

#include <cmath>
#include <cstddef>
#include <cstring>

namespace chorus_test {

struct BitComparison {
  size_t wrong = 0;        // elements that differ, other than NaN against NaN
  size_t nanPayloads = 0;  // NaN on both sides with other bits
  size_t first = 0;        // index of the first wrong element (valid when wrong > 0)
};

inline bool isNaN(const TypeInfo& t, const void* base, size_t i) {
  return t.kind == Kind::Float && std::isnan(decodeFloat(t, loadBits(base, i, t.size)));
}

// Elements [from, count) of `want` and `got`, arrays of type t.
inline BitComparison compareBits(const TypeInfo& t, const void* want, const void* got, size_t from,
                                 size_t count) {
  BitComparison c;
  const auto* w = static_cast<const unsigned char*>(want);
  const auto* g = static_cast<const unsigned char*>(got);
  for (size_t i = from; i < count; ++i) {
    if (std::memcmp(w + i * t.size, g + i * t.size, t.size) == 0) continue;
    if (isNaN(t, want, i) && isNaN(t, got, i)) {
      ++c.nanPayloads;
    } else {
      if (c.wrong++ == 0) c.first = i;
    }
  }
  return c;
}

}  // namespace chorus_test
