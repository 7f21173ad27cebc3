// IEEE binary16, bfloat16 and OCP FP8 (E4M3, E5M2) conversions for the benchmark's
// correctness check. Written here on purpose (not taken from kernels/) so the check stays
// independent of the code it checks. float -> narrow rounds to nearest even; overflow
// gives inf (E4M3, which has none: NaN); NaN stays NaN.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace perf {

inline float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf or NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // zero
  } else {
    // Subnormal half: normalise into a float.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | static_cast<uint32_t>(112 - e) << 23 | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t floatToHalf(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t absBits = bits & 0x7fffffffu;
  if (absBits >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (absBits > 0x7f800000u ? 0x200u : 0u));
  }
  if (absBits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  const int exp = static_cast<int>(absBits >> 23) - 127;
  if (exp >= -14) {  // normal half
    uint32_t mant = absBits & 0x7fffffu;
    uint32_t h = (static_cast<uint32_t>(exp + 15) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into exp correctly
    return static_cast<uint16_t>(sign | h);
  }
  if (exp < -25) return sign;  // below half the smallest subnormal: zero
  // Subnormal half: value = mant * 2^-24.
  const uint32_t mant = (absBits & 0x7fffffu) | 0x800000u;
  const int shift = -exp - 1;  // 14..24 (exp -15 -> 14)
  uint32_t h = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float bf16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t floatToBf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// ---- FP8: a small float of E exponent bits, M mantissa bits, bias 2^(E-1)-1 ------------
// E5M2 reserves the top exponent for inf/NaN as IEEE does; E4M3 ("fn") has no inf and uses
// only S.1111.111 for NaN, so its top exponent holds normal numbers (max 1.75 * 2^8 = 448).
template <int E, int M, bool kIeee>
double fp8ToDouble(uint8_t v) {
  constexpr int bias = (1 << (E - 1)) - 1;
  const bool neg = v & 0x80;
  const int exp = (v >> M) & ((1 << E) - 1);
  const int mant = v & ((1 << M) - 1);
  double x;
  if (kIeee && exp == (1 << E) - 1) {
    x = mant ? __builtin_nan("") : __builtin_inf();
  } else if (!kIeee && exp == (1 << E) - 1 && mant == (1 << M) - 1) {
    x = __builtin_nan("");
  } else if (exp == 0) {
    x = __builtin_ldexp(mant, 1 - bias - M);
  } else {
    x = __builtin_ldexp((1 << M) + mant, exp - bias - M);
  }
  return neg ? -x : x;
}

// Every code's value, computed once by fp8ToDouble (the binary search below reads it
// ~8 times a conversion: through ldexp that was 85% of a megabyte fp8 check at np 8).
template <int E, int M, bool kIeee>
const std::array<double, 256>& fp8Values() {
  static const std::array<double, 256> table = [] {
    std::array<double, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = fp8ToDouble<E, M, kIeee>(static_cast<uint8_t>(c));
    return t;
  }();
  return table;
}

// Nearest, ties to the even code, by binary search over the non-negative finite codes
// (their values increase with the code): obviously right.
template <int E, int M, bool kIeee>
uint8_t doubleToFp8Search(double x) {
  constexpr uint8_t nan = kIeee ? static_cast<uint8_t>(((1 << E) - 1) << M | 1) : 0x7f;
  if (x != x) return nan;
  const uint8_t sign = x < 0 || (x == 0 && __builtin_signbit(x)) ? 0x80 : 0;
  const double a = x < 0 ? -x : x;
  const int top = kIeee ? (((1 << E) - 1) << M) - 1 : 0x7e;  // largest finite code
  const std::array<double, 256>& values = fp8Values<E, M, kIeee>();
  auto value = [&values](int c) { return values[static_cast<size_t>(c)]; };
  // Half a step beyond the largest finite value or more: inf (E5M2) or NaN (E4M3).
  if (a >= value(top) + (value(top) - value(top - 1)) / 2)
    return static_cast<uint8_t>(sign | (kIeee ? ((1 << E) - 1) << M : nan));
  int lo = 0, hi = top;  // value(lo) <= a; find the last such code
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (value(mid) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  int best = lo;
  if (lo < top) {
    const double below = a - value(lo), above = value(lo + 1) - a;
    if (above < below || (above == below && (lo & 1))) best = lo + 1;
  }
  return static_cast<uint8_t>(sign | best);
}

// doubleToFp8Search, with the integers -512..512 (the benchmark's inputs and most of its
// references are small integers) read from a table it filled once.
template <int E, int M, bool kIeee>
uint8_t doubleToFp8(double x) {
  constexpr int kCached = 512;
  static const std::array<uint8_t, 2 * kCached + 1> small = [] {
    std::array<uint8_t, 2 * kCached + 1> t{};
    for (int i = -kCached; i <= kCached; ++i)
      t[static_cast<size_t>(i + kCached)] = doubleToFp8Search<E, M, kIeee>(i);
    return t;
  }();
  if (x >= -kCached && x <= kCached && x == static_cast<int>(x) &&
      (x != 0 || !__builtin_signbit(x)))
    return small[static_cast<size_t>(static_cast<int>(x) + kCached)];
  return doubleToFp8Search<E, M, kIeee>(x);
}

inline double fp8e4m3ToDouble(uint8_t v) { return fp8ToDouble<4, 3, false>(v); }
inline uint8_t doubleToFp8e4m3(double x) { return doubleToFp8<4, 3, false>(x); }
inline double fp8e5m2ToDouble(uint8_t v) { return fp8ToDouble<5, 2, true>(v); }
inline uint8_t doubleToFp8e5m2(double x) { return doubleToFp8<5, 2, true>(x); }

}  // namespace perf
