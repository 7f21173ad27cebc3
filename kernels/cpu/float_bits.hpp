// Branch-free conversions between float and the narrow float formats, on raw bits.
// Written with bit-mask selects instead of branches so that GCC auto-vectorises the loops
// that inline them (the portable kernels); the scalar API uses the same code.
// Everything is always_inline: the per-ISA kernel files inline these into functions
// compiled for their own target, and no out-of-line copy (of one ISA or another) is ever
// shared between them through the linker. Include this before any `#pragma GCC target`.
#pragma once

#include <bit>
#include <cstdint>

// nvcc compiles the same code for the GPU (kernels/cuda/reduce.cu): there everything here
// is a forced-inline host and device function.
#if defined(__CUDACC__)
#define CHORUS_ALWAYS_INLINE __host__ __device__ __forceinline__
#define CHORUS_HD __host__ __device__
#else
#define CHORUS_ALWAYS_INLINE [[gnu::always_inline]] inline
#define CHORUS_HD
#endif

namespace chorus::kernels::bits {

// The bits of a float and back (std::bit_cast on the CPU, the intrinsics on the GPU).
CHORUS_ALWAYS_INLINE float asFloat(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(v);
#else
  return std::bit_cast<float>(v);
#endif
}
CHORUS_ALWAYS_INLINE uint32_t asBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}

// c ? a : b as bit masks. Not a ternary: GCC would sink the float arithmetic of one side
// into a branch and then refuse to if-convert (and vectorise) it because it may trap.
CHORUS_ALWAYS_INLINE uint32_t select(bool c, uint32_t a, uint32_t b) {
  const uint32_t m = 0u - uint32_t(c);
  return (a & m) | (b & ~m);
}

// Order comparisons are signed (every operand is below 2^31): x86 before AVX-512 has no
// unsigned vector compare, so vectorised code is shorter.
CHORUS_ALWAYS_INLINE int32_t asSigned(uint32_t v) { return int32_t(v); }

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
  CHORUS_ALWAYS_INLINE static uint32_t widen(uint32_t v) {
    const uint32_t sign = (v & kSign) << (31 - E - M);
    const uint32_t mag = v & kMagMask;
    const uint32_t exp = mag & kExpMask;
    // Rebias a normal number: exponent + (127 - bias), mantissa shifted into place.
    const uint32_t normal = (mag << (23 - M)) + (uint32_t(127 - kBias) << 23);
    // Subnormal (exponent 0): mant * 2^(1-bias-M), computed exactly in float as
    // 2^(1-bias) * (1 + mant/2^M) - 2^(1-bias).
    const float magic = asFloat(uint32_t(127 - kBias + 1) << 23);
    const uint32_t sub = asBits(asFloat(normal + (1u << 23)) - magic);
    const uint32_t finite = select(exp == 0, sub, normal);
    if constexpr (HasInf) {  // inf/NaN: payload kept, quiet bit set for NaN
      const uint32_t mant = (mag & ((1u << M) - 1)) << (23 - M);
      const uint32_t special = select(mant != 0, mant | 0x7fc00000u, mant | 0x7f800000u);
      return sign | select(exp == kExpMask, special, finite);
    } else {
      return sign | select(mag == kMagMask, 0x7fc00000u, finite);
    }
  }

  // Float bits -> narrow bits, round to nearest-even; NaN stays NaN (quiet); overflow
  // gives inf (or NaN without inf).
  CHORUS_ALWAYS_INLINE static uint32_t narrow(uint32_t u) {
    constexpr int kShift = 23 - M;
    const uint32_t sign = (u >> (31 - E - M)) & kSign;
    const uint32_t abs = u & 0x7fffffffu;
    // Normal result: rebias the exponent and round the dropped mantissa bits to
    // nearest-even; a carry out of the mantissa correctly bumps the exponent (or overflows).
    const uint32_t rebased = abs - (uint32_t(127 - kBias) << 23);
    const uint32_t rounded =
        (rebased + ((1u << (kShift - 1)) - 1) + ((rebased >> kShift) & 1)) >> kShift;
    // Subnormal result: adding a float whose ulp is the target's smallest subnormal makes
    // the FPU round (to nearest-even); the low bits are then the target's mantissa.
    constexpr uint32_t kMagicBits = uint32_t(127 - kBias - M + 24) << 23;
    const float magic = asFloat(kMagicBits);
    const uint32_t sub = asBits(asFloat(abs) + magic) - kMagicBits;
    uint32_t r = select(asSigned(abs) < int32_t(127 - kBias + 1) << 23, sub, rounded);
    r = select(asSigned(r) > int32_t(kMaxFinite), kOverflow, r);  // inf lands here too
    uint32_t nan = kNaN;
    if constexpr (HasInf) nan |= (abs >> kShift) & ((1u << M) - 1);  // keep the payload
    return sign | select(asSigned(abs) > 0x7f800000, nan, r);
  }
};

using Half = Format<5, 10, true>;
using E4m3 = Format<4, 3, false>;
using E5m2 = Format<5, 2, true>;

// bf16 is the top half of a float: widening is a shift, narrowing rounds the low 16 bits.
struct Bf16 {
  CHORUS_ALWAYS_INLINE static uint32_t widen(uint32_t v) { return v << 16; }
  CHORUS_ALWAYS_INLINE static uint32_t narrow(uint32_t u) {
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = (u >> 16) | 0x40u;  // keep sign and payload, set the quiet bit
    return select(asSigned(u & 0x7fffffffu) > 0x7f800000, nan, rounded);
  }
};

template <class Fmt>
CHORUS_ALWAYS_INLINE float toFloat(uint32_t v) {
  return asFloat(Fmt::widen(v));
}
template <class Fmt>
CHORUS_ALWAYS_INLINE uint32_t fromFloat(float f) {
  return Fmt::narrow(asBits(f));
}

}  // namespace chorus::kernels::bits
