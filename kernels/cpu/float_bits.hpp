// Branch-free conversions between float and the narrow float formats, on raw bits.
// Written with selects instead of branches so that GCC vectorises the loops that inline
// them. Everything is always_inline: the per-ISA kernel files inline these into functions
// compiled for their own target, and no out-of-line copy (of one ISA or another) is ever
// shared between them through the linker. Include this before any `#pragma GCC target`.
#pragma once

#include <bit>
#include <cstdint>

#define CHORUS_ALWAYS_INLINE [[gnu::always_inline]] inline

namespace chorus::kernels::bits {

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
};

using Half = Format<5, 10, true>;
using E5M2 = Format<5, 2, true>;
using E4M3 = Format<4, 3, false>;

// Narrow bits -> float bits (exact).
template <int E, int M, bool HasInf>
CHORUS_ALWAYS_INLINE uint32_t widen(uint32_t v) {
  using F = Format<E, M, HasInf>;
  constexpr int kBias = F::kBias;
  const uint32_t sign = (v & F::kSign) << (31 - E - M);
  const uint32_t mag = v & F::kMagMask;
  const uint32_t exp = mag & F::kExpMask;
  // Rebias a normal number: exponent field + (127 - bias), mantissa shifted into place.
  const uint32_t normal = (mag << (23 - M)) + (uint32_t(127 - kBias) << 23);
  // Subnormal (exponent 0): mant * 2^(1-bias-M), computed as (2^(1-bias) * (1 + mant/2^M))
  // - 2^(1-bias), which is exact in float.
  const uint32_t magic = uint32_t(127 - kBias + 1) << 23;
  const float sub = std::bit_cast<float>(normal + (1u << 23)) - std::bit_cast<float>(magic);
  const uint32_t subBits = std::bit_cast<uint32_t>(sub);
  const bool special = HasInf ? exp == F::kExpMask : mag == F::kMagMask;
  // Inf/NaN: all-ones float exponent, payload kept, quiet bit set for NaN.
  const uint32_t mant = (mag & ((1u << M) - 1)) << (23 - M);
  const uint32_t infNan = HasInf ? 0x7f800000u | mant | (mant ? 0x00400000u : 0u) : 0x7fc00000u;
  const uint32_t r = special ? infNan : exp == 0 ? subBits : normal;
  return sign | r;
}

// Float bits -> narrow bits, round to nearest-even; NaN stays NaN (quiet); overflow gives
// inf (or NaN without inf).
template <int E, int M, bool HasInf>
CHORUS_ALWAYS_INLINE uint32_t narrow(uint32_t u) {
  using F = Format<E, M, HasInf>;
  constexpr int kBias = F::kBias;
  constexpr int kShift = 23 - M;
  const uint32_t sign = (u >> (31 - E - M)) & F::kSign;
  const uint32_t abs = u & 0x7fffffffu;
  // Normal result: rebias the exponent and round the dropped mantissa bits to nearest-even;
  // a carry out of the mantissa correctly bumps the exponent (and may overflow).
  const uint32_t rebased = abs - (uint32_t(127 - kBias) << 23);
  const uint32_t rounded =
      (rebased + ((1u << (kShift - 1)) - 1) + ((rebased >> kShift) & 1)) >> kShift;
  // Subnormal result: adding a float whose ulp is the target's smallest subnormal makes
  // the FPU do the rounding (nearest-even); the low bits are then the target mantissa.
  const uint32_t magicBits = uint32_t(127 - kBias - M + 24) << 23;
  const float magic = std::bit_cast<float>(magicBits);
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(abs) + magic) - magicBits;
  const uint32_t minNormal = uint32_t(127 - kBias + 1) << 23;
  uint32_t r = abs < minNormal ? sub : rounded;
  r = r > F::kMaxFinite ? F::kOverflow : r;  // inf lands here too
  const uint32_t nan = HasInf ? F::kNaN | ((abs >> kShift) & ((1u << M) - 1)) : F::kNaN;
  r = abs > 0x7f800000u ? nan : r;
  return sign | r;
}

CHORUS_ALWAYS_INLINE float halfToFloat(uint16_t h) {
  return std::bit_cast<float>(widen<5, 10, true>(h));
}
CHORUS_ALWAYS_INLINE uint16_t floatToHalf(float f) {
  return uint16_t(narrow<5, 10, true>(std::bit_cast<uint32_t>(f)));
}

// bf16 is the top half of a float: widening is a shift, narrowing rounds the low 16 bits.
CHORUS_ALWAYS_INLINE float bf16ToFloat(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
CHORUS_ALWAYS_INLINE uint16_t floatToBf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;  // keep sign and payload, set the quiet bit
  return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

CHORUS_ALWAYS_INLINE float e4m3ToFloat(uint8_t v) {
  return std::bit_cast<float>(widen<4, 3, false>(v));
}
CHORUS_ALWAYS_INLINE uint8_t floatToE4m3(float f) {
  return uint8_t(narrow<4, 3, false>(std::bit_cast<uint32_t>(f)));
}
CHORUS_ALWAYS_INLINE float e5m2ToFloat(uint8_t v) {
  return std::bit_cast<float>(widen<5, 2, true>(v));
}
CHORUS_ALWAYS_INLINE uint8_t floatToE5m2(float f) {
  return uint8_t(narrow<5, 2, true>(std::bit_cast<uint32_t>(f)));
}

}  // namespace chorus::kernels::bits
