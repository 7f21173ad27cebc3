// Branch-free conversions between float and the narrow float formats, on raw bits.
// Each works on one value (uint32_t) or on a GCC vector of them (Lanes<Bytes>::U) with the
// same code, so the scalar API, the vector loops and their scalar tails round identically.
// Everything is always_inline: the per-ISA kernel files inline these into functions
// compiled for their own target, and no out-of-line copy (of one ISA or another) is ever
// shared between them through the linker. Include this before any `#pragma GCC target`.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#define CHORUS_ALWAYS_INLINE [[gnu::always_inline]] inline

// The vector helpers are always inlined, so the ABI of passing vectors by value (which GCC
// warns about for targets without AVX) never applies.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace chorus::kernels::bits {

// GCC vectors of 32-bit lanes. Use the target's register width: GCC lowers compares on
// wider vectors to scalar code.
template <int Bytes>
struct Lanes {
  typedef uint32_t U __attribute__((vector_size(Bytes)));
  typedef int32_t I __attribute__((vector_size(Bytes)));
  typedef float F __attribute__((vector_size(Bytes)));
};
struct Scalar {
  using U = uint32_t;
  using I = int32_t;
  using F = float;
};
template <class U>
using LanesOf = std::conditional_t<std::is_same_v<U, uint32_t>, Scalar, Lanes<sizeof(U)>>;
template <class U>
using FloatOf = typename LanesOf<U>::F;

// Order comparisons go through signed lanes (all operands are below 2^31): x86 before
// AVX-512 has no unsigned vector compare.
template <class U>
CHORUS_ALWAYS_INLINE auto asSigned(U v) {
  return std::bit_cast<typename LanesOf<U>::I>(v);
}

// c ? a : b as bit masks (c is a bool, or a vector compare's lane mask of 0 / -1). Not a
// ternary: on scalars GCC would sink the float arithmetic of one side into a branch and
// then refuse to if-convert (and vectorise) it because it may trap.
template <class C, class U>
CHORUS_ALWAYS_INLINE U select(C c, U a, U b) {
  U m;
  if constexpr (std::is_same_v<U, uint32_t>) {
    m = 0u - uint32_t(c);
  } else {
    m = std::bit_cast<U>(c);
  }
  return (a & m) | (b & ~m);
}

// A binary float format with E exponent bits and M mantissa bits, bias 2^(E-1)-1.
// HasInf: IEEE-like (all-ones exponent is inf/NaN). Otherwise the OCP "fn" variant: no inf,
// only the all-ones magnitude is NaN, and overflow gives NaN.
template <int E, int M, bool HasInf>
struct Format {
  static constexpr int kBias = (1 << (E - 1)) - 1;
  static constexpr uint32_t kMagMask = (1u << (E + M)) - 1;
  static constexpr uint32_t kSign = 1u << (E + M);
  static constexpr uint32_t kExpMask = ((1u << E) - 1) << M;
  static constexpr uint32_t kNaN = HasInf ? kExpMask | (1u << (M - 1)) : kMagMask;
  static constexpr uint32_t kOverflow = HasInf ? kExpMask : kNaN;
  static constexpr uint32_t kMaxFinite = HasInf ? kExpMask - 1 : kMagMask - 1;

  // Narrow bits -> float bits (exact).
  template <class U>
  CHORUS_ALWAYS_INLINE static U widen(U v) {
    using F = FloatOf<U>;
    const U sign = (v & kSign) << (31 - E - M);
    const U mag = v & kMagMask;
    const U exp = mag & kExpMask;
    // Rebias a normal number: exponent + (127 - bias), mantissa shifted into place.
    const U normal = (mag << (23 - M)) + (uint32_t(127 - kBias) << 23);
    // Subnormal (exponent 0): mant * 2^(1-bias-M), computed exactly in float as
    // 2^(1-bias) * (1 + mant/2^M) - 2^(1-bias).
    const float magic = std::bit_cast<float>(uint32_t(127 - kBias + 1) << 23);
    const U sub = std::bit_cast<U>(std::bit_cast<F>(normal + (1u << 23)) - magic);
    const U finite = select(exp == 0, sub, normal);
    if constexpr (HasInf) {  // inf/NaN: payload kept, quiet bit set for NaN
      const U mant = (mag & ((1u << M) - 1)) << (23 - M);
      const U special = select(mant != 0, mant | 0x7fc00000u, mant | 0x7f800000u);
      return sign | select(exp == kExpMask, special, finite);
    } else {
      return sign | select(mag == kMagMask, U{} + 0x7fc00000u, finite);
    }
  }

  // Float bits -> narrow bits, round to nearest-even; NaN stays NaN (quiet); overflow
  // gives inf (or NaN without inf).
  template <class U>
  CHORUS_ALWAYS_INLINE static U narrow(U u) {
    using F = FloatOf<U>;
    constexpr int kShift = 23 - M;
    const U sign = (u >> (31 - E - M)) & kSign;
    const U abs = u & 0x7fffffffu;
    // Normal result: rebias the exponent and round the dropped mantissa bits to
    // nearest-even; a carry out of the mantissa correctly bumps the exponent (or overflows).
    const U rebased = abs - (uint32_t(127 - kBias) << 23);
    const U rounded = (rebased + ((1u << (kShift - 1)) - 1) + ((rebased >> kShift) & 1)) >> kShift;
    // Subnormal result: adding a float whose ulp is the target's smallest subnormal makes
    // the FPU round (to nearest-even); the low bits are then the target's mantissa.
    constexpr uint32_t kMagicBits = uint32_t(127 - kBias - M + 24) << 23;
    const float magic = std::bit_cast<float>(kMagicBits);
    const U sub = std::bit_cast<U>(std::bit_cast<F>(abs) + magic) - kMagicBits;
    U r = select(asSigned(abs) < int32_t(127 - kBias + 1) << 23, sub, rounded);
    r = select(asSigned(r) > int32_t(kMaxFinite), U{} + kOverflow, r);  // inf lands here too
    U nan = U{} + kNaN;
    if constexpr (HasInf) nan |= (abs >> kShift) & ((1u << M) - 1);  // keep the payload
    return sign | select(asSigned(abs) > 0x7f800000, nan, r);
  }
};

using Half = Format<5, 10, true>;
using E4m3 = Format<4, 3, false>;
using E5m2 = Format<5, 2, true>;

// bf16 is the top half of a float: widening is a shift, narrowing rounds the low 16 bits.
struct Bf16 {
  template <class U>
  CHORUS_ALWAYS_INLINE static U widen(U v) {
    return v << 16;
  }
  template <class U>
  CHORUS_ALWAYS_INLINE static U narrow(U u) {
    const U rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const U nan = (u >> 16) | 0x40u;  // keep sign and payload, set the quiet bit
    return select(asSigned(u & 0x7fffffffu) > 0x7f800000, nan, rounded);
  }
};

template <class Fmt>
CHORUS_ALWAYS_INLINE float toFloat(uint32_t v) {
  return std::bit_cast<float>(Fmt::widen(v));
}
template <class Fmt>
CHORUS_ALWAYS_INLINE uint32_t fromFloat(float f) {
  return Fmt::narrow(std::bit_cast<uint32_t>(f));
}

}  // namespace chorus::kernels::bits

#pragma GCC diagnostic pop
