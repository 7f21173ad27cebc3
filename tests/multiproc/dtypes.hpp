// Element types of the multi-process tests, with the test's own encodings of every type
// (fp16, bf16 and fp8 included): the reference never goes through the library's kernels.
#pragma once

#include <chorus/chorus.hpp>

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace chorus_test {

enum class Kind { Signed, Unsigned, Float };

struct TypeInfo {
  chorus::DataType type;
  const char* name;
  int size;  // bytes per element
  Kind kind;
  int mantBits;  // floats: explicit mantissa bits
  int expBits;   // floats: exponent bits
  // OCP FP8 E4M3 ("fn"): no infinities; the top exponent holds normal numbers except
  // S.1111.111, the only NaN; overflow gives that NaN (sign kept).
  bool noInf = false;
};

inline constexpr TypeInfo kTypes[] = {
    {chorus::DataType::Int8, "int8", 1, Kind::Signed, 0, 0},
    {chorus::DataType::Uint8, "uint8", 1, Kind::Unsigned, 0, 0},
    {chorus::DataType::Int32, "int32", 4, Kind::Signed, 0, 0},
    {chorus::DataType::Uint32, "uint32", 4, Kind::Unsigned, 0, 0},
    {chorus::DataType::Int64, "int64", 8, Kind::Signed, 0, 0},
    {chorus::DataType::Uint64, "uint64", 8, Kind::Unsigned, 0, 0},
    {chorus::DataType::Float16, "float16", 2, Kind::Float, 10, 5},
    {chorus::DataType::Float32, "float32", 4, Kind::Float, 23, 8},
    {chorus::DataType::Float64, "float64", 8, Kind::Float, 52, 11},
    {chorus::DataType::Bfloat16, "bfloat16", 2, Kind::Float, 7, 8},
    {chorus::DataType::Float8e4m3, "f8e4m3", 1, Kind::Float, 3, 4, true},
    {chorus::DataType::Float8e5m2, "f8e5m2", 1, Kind::Float, 2, 5},
};

inline uint64_t sizeMask(int size) { return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1; }

// Two's-complement truncation of v to the type's width (wrap-around).
inline uint64_t encodeInt(const TypeInfo& t, uint64_t v) { return v & sizeMask(t.size); }

// Sign- or zero-extends the element bits.
inline int64_t decodeSigned(const TypeInfo& t, uint64_t bits) {
  if (t.size >= 8) return static_cast<int64_t>(bits);
  int shift = 64 - 8 * t.size;
  return static_cast<int64_t>(bits << shift) >> shift;
}

// Rounds a finite double to the float format (mantBits, expBits), round to nearest even,
// subnormals included, overflow to infinity.
inline uint64_t encodeFloat(const TypeInfo& t, double x) {
  const int m = t.mantBits;
  const int e = t.expBits;
  const int bias = (1 << (e - 1)) - 1;
  const uint64_t signBit = std::signbit(x) ? 1ull << (m + e) : 0;
  const uint64_t nanBits =
      t.noInf ? (1ull << (m + e)) - 1 : (((1ull << e) - 1) << m) | (1ull << (m - 1));
  if (std::isnan(x)) return nanBits;
  double a = std::fabs(x);
  if (a == 0) return signBit;
  const uint64_t infBits = t.noInf ? nanBits : ((1ull << e) - 1) << m;
  if (std::isinf(a)) return signBit | infBits;
  int ex = 0;
  std::frexp(a, &ex);
  int E = ex - 1;  // a = 1.f * 2^E
  const int minE = 1 - bias;
  if (E < minE) {  // subnormal; q == 2^m rounds up to the smallest normal, same bits
    return signBit | static_cast<uint64_t>(std::nearbyint(std::ldexp(a, m - minE)));
  }
  auto q = static_cast<uint64_t>(std::nearbyint(std::ldexp(a, m - E)));
  if (q == (2ull << m)) {
    q >>= 1;
    ++E;
  }
  // The top exponent: inf/NaN (IEEE-like), or normal numbers but for the NaN code (fn).
  const int maxE = t.noInf ? bias + 1 : bias;
  const uint64_t bits = (static_cast<uint64_t>(E + bias) << m) | (q - (1ull << m));
  if (E > maxE || (t.noInf && bits == nanBits)) return signBit | infBits;
  return signBit | bits;
}

inline double decodeFloat(const TypeInfo& t, uint64_t bits) {
  const int m = t.mantBits;
  const int e = t.expBits;
  const int bias = (1 << (e - 1)) - 1;
  const bool neg = (bits >> (m + e)) & 1;
  const uint64_t ef = (bits >> m) & ((1ull << e) - 1);
  const uint64_t mf = bits & ((1ull << m) - 1);
  double v;
  if (ef == 0) {
    v = std::ldexp(static_cast<double>(mf), 1 - bias - m);
  } else if (ef == (1ull << e) - 1 && !t.noInf) {
    v = mf ? NAN : INFINITY;
  } else if (ef == (1ull << e) - 1 && mf == (1ull << m) - 1) {
    v = NAN;  // fn: S.1111.111
  } else {
    v = std::ldexp(static_cast<double>((1ull << m) | mf), static_cast<int>(ef) - bias - m);
  }
  return neg ? -v : v;
}

inline uint64_t loadBits(const void* base, size_t index, int size) {
  const auto* p = static_cast<const unsigned char*>(base) + index * size;
  switch (size) {
    case 1:
      return *p;
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

inline void storeBits(void* base, size_t index, int size, uint64_t bits) {
  auto* p = static_cast<unsigned char*>(base) + index * size;
  switch (size) {
    case 1:
      *p = static_cast<unsigned char>(bits);
      break;
    case 2: {
      auto v = static_cast<uint16_t>(bits);
      std::memcpy(p, &v, 2);
      break;
    }
    case 4: {
      auto v = static_cast<uint32_t>(bits);
      std::memcpy(p, &v, 4);
      break;
    }
    default:
      std::memcpy(p, &bits, 8);
  }
}

// "0x3c00 (1)": the raw bits and the value they encode.
inline std::string formatValue(const TypeInfo& t, uint64_t bits) {
  char buf[96];
  int width = 2 * t.size;
  if (t.kind == Kind::Float) {
    std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%.17g)", width, bits, decodeFloat(t, bits));
  } else if (t.kind == Kind::Signed) {
    std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%" PRId64 ")", width, bits,
                  decodeSigned(t, bits));
  } else {
    std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%" PRIu64 ")", width, bits, bits);
  }
  return buf;
}

// Known encodings, so a broken conversion in the test itself cannot hide a library bug.
// Returns an empty string when all hold, else a description of the first mismatch.
inline std::string selfCheckEncodings() {
  const TypeInfo& f16 = kTypes[6];
  const TypeInfo& f32 = kTypes[7];
  const TypeInfo& bf16 = kTypes[9];
  const TypeInfo& e4m3 = kTypes[10];
  const TypeInfo& e5m2 = kTypes[11];
  struct Known {
    const TypeInfo* t;
    double v;
    uint64_t bits;
  };
  // fp8 from the OCP FP8 tables: E4M3 max 448, smallest subnormal 2^-9, 17 ties to 16;
  // E5M2 max 57344, smallest subnormal 2^-16.
  const Known known[] = {
      {&f16, 1.0, 0x3c00},     {&f16, -2.0, 0xc000},    {&f16, 0.5, 0x3800},
      {&f16, 65504.0, 0x7bff}, {&f16, 1.0 / 3, 0x3555}, {&f16, 2049.0, 0x6800},
      {&f16, 2051.0, 0x6802},  {&f16, 70000.0, 0x7c00}, {&f16, 0x1p-24, 0x0001},
      {&bf16, 1.0, 0x3f80},    {&bf16, 3.0, 0x4040},    {&bf16, 1.0 / 3, 0x3eab},
      {&bf16, 257.0, 0x4380},  {&bf16, 259.0, 0x4382},  {&bf16, -126.0, 0xc2fc},
      {&f32, 1.0, 0x3f800000}, {&f32, 0.1, 0x3dcccccd}, {&f32, -3.0, 0xc0400000},
      {&e4m3, 1.0, 0x38},      {&e4m3, -2.0, 0xc0},     {&e4m3, 448.0, 0x7e},
      {&e4m3, 0x1p-9, 0x01},   {&e4m3, 17.0, 0x58},     {&e4m3, 0.5, 0x30},
      {&e5m2, 1.0, 0x3c},      {&e5m2, 57344.0, 0x7b},  {&e5m2, 0x1p-16, 0x01},
      {&e5m2, -3.0, 0xc2},     {&e5m2, 10.0, 0x49},     {&e5m2, 0.5, 0x38},
  };
  if (encodeFloat(e4m3, 480.0) != 0x7f || encodeFloat(e4m3, -1e6) != 0xff)
    return "encode f8e4m3 overflow: want NaN 0x7f / 0xff";
  if (encodeFloat(e5m2, 65536.0) != 0x7c) return "encode f8e5m2 overflow: want inf 0x7c";
  for (const Known& k : known) {
    uint64_t got = encodeFloat(*k.t, k.v);
    if (got != k.bits) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "encode %s %.17g: got 0x%" PRIx64 " want 0x%" PRIx64,
                    k.t->name, k.v, got, k.bits);
      return buf;
    }
    double back = decodeFloat(*k.t, k.bits);
    if (encodeFloat(*k.t, back) != k.bits) return std::string("decode round trip ") + k.t->name;
  }
  return {};
}

}  // namespace chorus_test
