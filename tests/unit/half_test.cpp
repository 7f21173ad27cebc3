// Conversions of kernels/half.hpp against an independent reference: each format decoded
// from its fields with ldexp, and rounded by a nearest-value search over every finite value
// of the format (ties to the even code). fp16 is also checked against GCC's _Float16.
#include "kernels/half.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <vector>

namespace chorus::kernels {
namespace {

struct Fmt {
  const char* name;
  int e, m;
  bool hasInf;
  float (*widen)(uint32_t);
  uint32_t (*narrow)(float);
  int bits() const { return 1 + e + m; }
  int bias() const { return (1 << (e - 1)) - 1; }
  uint32_t magMask() const { return (1u << (e + m)) - 1; }
  uint32_t maxFinite() const { return hasInf ? (((1u << e) - 1) << m) - 1 : magMask() - 1; }
};

// Magnitude of code k (no sign) from its fields; NaN for NaN codes. Codes past the largest
// finite one are decoded as if the exponent went on, which gives the overflow boundary.
double fieldValue(const Fmt& f, uint32_t k) {
  const int exp = int(k >> f.m);
  const double mant = double(k & ((1u << f.m) - 1));
  if (exp == 0) return std::ldexp(mant, 1 - f.bias() - f.m);
  return std::ldexp(mant + std::ldexp(1.0, f.m), exp - f.bias() - f.m);
}

bool refIsNaN(const Fmt& f, uint32_t code) {
  const uint32_t mag = code & f.magMask();
  if (f.hasInf) return (mag >> f.m) == (1u << f.e) - 1 && (mag & ((1u << f.m) - 1)) != 0;
  return mag == f.magMask();
}

double refDecode(const Fmt& f, uint32_t code) {
  const uint32_t mag = code & f.magMask();
  const bool neg = code >> (f.e + f.m);
  double v;
  if (refIsNaN(f, code)) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (f.hasInf && (mag >> f.m) == (1u << f.e) - 1) {
    v = std::numeric_limits<double>::infinity();
  } else {
    v = fieldValue(f, mag);
  }
  return neg ? -v : v;
}

// Round x to the format: nearest value, ties to the even code; past the largest finite
// value (and its rounding boundary) -> inf, or NaN for formats without inf. NaN -> ~0u.
uint32_t refEncode(const Fmt& f, double x) {
  if (std::isnan(x)) return ~0u;
  const uint32_t sign = std::signbit(x) ? 1u << (f.e + f.m) : 0;
  const double a = std::fabs(x);
  const uint32_t over = f.maxFinite() + 1;  // the first code past the finite ones
  uint32_t lo = 0, hi = over;               // invariant: value(lo) <= a
  if (a >= fieldValue(f, over)) {
    lo = over;
  } else {
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      (fieldValue(f, mid) <= a ? lo : hi) = mid;
    }
    const double dl = a - fieldValue(f, lo), dh = fieldValue(f, lo + 1) - a;
    if (dh < dl || (dh == dl && (lo & 1))) lo += 1;
  }
  if (lo == over) return f.hasInf ? sign | over : sign | f.magMask();
  return sign | lo;
}

void PrintTo(const Fmt& f, std::ostream* os) { *os << f.name; }

uint32_t floatBits(float x) { return std::bit_cast<uint32_t>(x); }

const Fmt kFormats[] = {
    {"fp16", 5, 10, true, [](uint32_t v) { return halfToFloat(uint16_t(v)); },
     [](float x) -> uint32_t { return floatToHalf(x); }},
    {"bf16", 8, 7, true, [](uint32_t v) { return bf16ToFloat(uint16_t(v)); },
     [](float x) -> uint32_t { return floatToBf16(x); }},
    {"e4m3", 4, 3, false, [](uint32_t v) { return fp8e4m3ToFloat(uint8_t(v)); },
     [](float x) -> uint32_t { return floatToFp8e4m3(x); }},
    {"e5m2", 5, 2, true, [](uint32_t v) { return fp8e5m2ToFloat(uint8_t(v)); },
     [](float x) -> uint32_t { return floatToFp8e5m2(x); }},
};

class HalfTest : public ::testing::TestWithParam<Fmt> {
 protected:
  // Checks narrow(x) against the reference; returns false (once reported) on a mismatch.
  bool checkNarrow(float x) {
    const Fmt& f = GetParam();
    const uint32_t got = f.narrow(x), want = refEncode(f, double(x));
    if (want == ~0u ? refIsNaN(f, got) : got == want) return true;
    ADD_FAILURE() << f.name << " narrow(" << x << " = 0x" << std::hex << floatBits(x) << ") = 0x"
                  << got << ", want 0x" << want;
    return false;
  }
};

TEST_P(HalfTest, WidenEveryCode) {
  const Fmt& f = GetParam();
  for (uint32_t c = 0; c < (1u << f.bits()); ++c) {
    const float got = f.widen(c);
    const double want = refDecode(f, c);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << f.name << " code 0x" << std::hex << c;
    } else {
      ASSERT_EQ(floatBits(got), floatBits(float(want))) << f.name << " code 0x" << std::hex << c;
    }
  }
}

TEST_P(HalfTest, RoundTripEveryCode) {
  const Fmt& f = GetParam();
  for (uint32_t c = 0; c < (1u << f.bits()); ++c) {
    const uint32_t back = f.narrow(f.widen(c));
    if (refIsNaN(f, c)) {
      ASSERT_TRUE(refIsNaN(f, back)) << f.name << " NaN 0x" << std::hex << c;
    } else {
      ASSERT_EQ(back, c) << f.name;
    }
  }
}

// Every rounding boundary: each value, the midpoint to the next one, and the floats just
// on either side of both, with both signs.
TEST_P(HalfTest, NarrowAtEveryBoundary) {
  const Fmt& f = GetParam();
  const float inf = std::numeric_limits<float>::infinity();
  for (uint32_t k = 0; k <= f.maxFinite(); ++k) {
    const double v = fieldValue(f, k), mid = (v + fieldValue(f, k + 1)) / 2;
    for (double base : {v, mid}) {
      const float b = float(base);
      ASSERT_EQ(double(b), base);  // all of these are exact in float
      for (float x : {b, std::nextafter(b, inf), std::nextafter(b, -inf)}) {
        if (!checkNarrow(x) || !checkNarrow(-x)) return;
      }
    }
  }
}

TEST_P(HalfTest, NarrowRandomFloats) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 300000; ++i) {
    if (!checkNarrow(std::bit_cast<float>(uint32_t(rng())))) return;
  }
}

TEST_P(HalfTest, NarrowSpecials) {
  const Fmt& f = GetParam();
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::min(),
                  std::bit_cast<float>(0x7f800001u), std::bit_cast<float>(0xffc00000u),
                  std::bit_cast<float>(0x7fbfffffu)}) {
    checkNarrow(x);
  }
  EXPECT_EQ(f.narrow(-0.0f), 1u << (f.e + f.m));  // -0 keeps its sign
  EXPECT_TRUE(refIsNaN(f, f.narrow(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(refIsNaN(f, f.narrow(std::bit_cast<float>(0x7f800001u))));  // signalling NaN
}

INSTANTIATE_TEST_SUITE_P(Formats, HalfTest, ::testing::ValuesIn(kFormats),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- fp16 against the compiler's _Float16, and fixed values ---------------------------

uint16_t f16Bits(_Float16 h) { return std::bit_cast<uint16_t>(h); }

TEST(Half, MatchesFloat16Type) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const _Float16 h = std::bit_cast<_Float16>(uint16_t(c));
    const float want = float(h), got = halfToFloat(uint16_t(c));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got));
      continue;
    }
    ASSERT_EQ(floatBits(got), floatBits(want)) << std::hex << c;
    // The midpoint to the next code (toward +inf in magnitude) and its neighbours.
    const float next = float(std::bit_cast<_Float16>(uint16_t(c + 1)));
    if ((c & 0x7fff) >= 0x7c00 || std::isnan(next)) continue;
    const float mid = float((double(want) + double(next)) / 2);
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      ASSERT_EQ(floatToHalf(x), f16Bits(_Float16(x))) << x;
    }
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.99f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // ties to even: overflows to inf
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);         // tie to even 0
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);         // above the tie
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 ulp: tie to 2
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie to even (up)
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);   // tie to even
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);  // overflow to inf
  EXPECT_EQ(floatToFp8e4m3(448.0f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(464.0f), 0x7e);  // tie: to even 448
  EXPECT_EQ(floatToFp8e4m3(465.0f), 0x7f);  // overflow: NaN (no inf in e4m3)
  EXPECT_EQ(floatToFp8e4m3(-1e9f), 0xff);
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(1.0f, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(floatToFp8e5m2(57344.0f), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(61440.0f), 0x7c);  // tie: to even inf
  EXPECT_EQ(floatToFp8e5m2(-std::numeric_limits<float>::infinity()), 0xfc);
  EXPECT_EQ(fp8e4m3ToFloat(0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(fp8e4m3ToFloat(0xff)));
  EXPECT_EQ(fp8e4m3ToFloat(0x78), 256.0f);  // e4m3 uses the top exponent for numbers
  EXPECT_EQ(fp8e5m2ToFloat(0x7c), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16ToFloat(0x0001), std::ldexp(1.0f, -133));  // bf16 subnormal
}

}  // namespace
}  // namespace chorus::kernels
