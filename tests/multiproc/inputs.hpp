// Deterministic inputs: element i of rank r is a function of (seed, r, i mod kPeriod), so
// every rank can rebuild every other rank's data, and the per-element reference of a
// large reduction repeats with period kPeriod (a prime, so chunk offsets rarely alias).
//
// Values are chosen so the reduction is exact in any order:
// - integers, sum/prod/min/max: any bits (sum and prod wrap modulo 2^bits: exact);
// - integers, avg: small values (|sum| fits the type, so avg has no overflow question);
// - floats, sum/avg: integers with |x| <= 14 (fp16, bf16) or 2^20 (fp32) or 2^40 (fp64),
//   so every partial sum of <= 9 ranks is an exactly representable integer; fp8: |x| <= 2
//   (e4m3) or 1 (e5m2) on ranks 0-7 and 0 beyond, so partial sums stay within 16 / 8;
// - floats, prod: {1, -1, 2, -2, 0.5}: every partial product is a power of two (fp8 e4m3:
//   no 2 or -2 on rank 8, so no product reaches 2^9, past its largest value 448);
// - floats, min/max: nonzero integers, exactly representable;
// - copies (allGather, broadcast, send/recv): arbitrary bits, NaN patterns included, since
//   data movement must be bit-exact.
#pragma once

#include "dtypes.hpp"

#include <chorus/chorus.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace chorus_test {

inline constexpr size_t kPeriod = 65521;

inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) { return mix64(a ^ mix64(b ^ mix64(c))); }

// Uniform integer in [lo, hi] from a hash.
inline int64_t pick(uint64_t h, int64_t lo, int64_t hi) {
  auto span = static_cast<unsigned __int128>(hi - lo + 1);
  return lo + static_cast<int64_t>((span * (h >> 11)) >> 53);
}

// out[k] = table[(first + k) % kPeriod] for k < count; elements of `size` bytes.
inline void periodicCopy(unsigned char* out, const unsigned char* table, size_t first, size_t count,
                         int size) {
  const auto s = static_cast<size_t>(size);
  for (size_t done = 0; done < count;) {
    size_t j = (first + done) % kPeriod;
    size_t n = std::min(count - done, kPeriod - j);
    std::memcpy(out + done * s, table + j * s, n * s);
    done += n;
  }
}

enum class ValueKind { Bits, IntAny, IntSmall, FloatSum, FloatProd, FloatMinMax };

inline ValueKind valueKindFor(const TypeInfo& t, bool reduction, chorus::RedOp op) {
  if (!reduction) return ValueKind::Bits;
  if (t.kind != Kind::Float)
    return op == chorus::RedOp::Avg ? ValueKind::IntSmall : ValueKind::IntAny;
  switch (op) {
    case chorus::RedOp::Prod:
      return ValueKind::FloatProd;
    case chorus::RedOp::Min:
    case chorus::RedOp::Max:
      return ValueKind::FloatMinMax;
    default:
      return ValueKind::FloatSum;
  }
}

class Inputs {
 public:
  // `tabulate`: keep each rank's first period of encoded elements (for large counts, where
  // encoding every element again would dominate the run time).
  Inputs(const TypeInfo& type, ValueKind kind, uint64_t seed, bool tabulate = false)
      : type_(type), kind_(kind), seed_(seed), tabulate_(tabulate) {}

  const TypeInfo& type() const { return type_; }

  // Raw element bits of rank r at index i.
  uint64_t bits(int r, size_t i) const {
    if (tabulate_) return loadBits(table(r), i % kPeriod, type_.size);
    return compute(r, i);
  }

  // Integer value (IntAny/IntSmall), sign- or zero-extended per the type, as uint64 bits.
  uint64_t intValue(int r, size_t i) const {
    uint64_t b = bits(r, i);
    return type_.kind == Kind::Signed ? static_cast<uint64_t>(decodeSigned(type_, b)) : b;
  }

  // Float value, exact (FloatSum/FloatProd/FloatMinMax).
  double floatValueAt(int r, size_t i) const {
    return floatValue(hash3(seed_, static_cast<uint64_t>(r), i % kPeriod), r);
  }

  void fill(void* buf, int r, size_t first, size_t count) const {
    if (!tabulate_) {
      for (size_t i = 0; i < count; ++i) storeBits(buf, i, type_.size, compute(r, first + i));
      return;
    }
    periodicCopy(static_cast<unsigned char*>(buf), table(r), first, count, type_.size);
  }

 private:
  const unsigned char* table(int r) const {
    if (tables_.size() <= static_cast<size_t>(r)) tables_.resize(static_cast<size_t>(r) + 1);
    std::vector<unsigned char>& t = tables_[static_cast<size_t>(r)];
    if (t.empty()) {
      t.resize(kPeriod * static_cast<size_t>(type_.size));
      for (size_t j = 0; j < kPeriod; ++j) storeBits(t.data(), j, type_.size, compute(r, j));
    }
    return t.data();
  }

  uint64_t compute(int r, size_t i) const {
    uint64_t h = hash3(seed_, static_cast<uint64_t>(r), i % kPeriod);
    switch (kind_) {
      case ValueKind::Bits:
      case ValueKind::IntAny:
        return h & sizeMask(type_.size);
      case ValueKind::IntSmall:
        return encodeInt(type_, static_cast<uint64_t>(intSmall(h)));
      default:
        return encodeFloat(type_, floatValue(h, r));
    }
  }

  int64_t intSmall(uint64_t h) const {
    return type_.kind == Kind::Signed ? pick(h, -14, 14) : pick(h, 0, 28);
  }

  double floatValue(uint64_t h, int r) const {
    const bool fp8 = type_.size == 1;
    switch (kind_) {
      case ValueKind::FloatProd: {
        static constexpr double kFactors[] = {1.0, -1.0, 0.5, 2.0, -2.0};
        return kFactors[pick(h, 0, type_.noInf && r >= 8 ? 2 : 4)];
      }
      case ValueKind::FloatMinMax: {
        int64_t lim = fp8 ? int64_t{2} << type_.mantBits  // 16 (e4m3), 8 (e5m2): exact
                      : type_.size == 2 ? (type_.mantBits == 10 ? 2048 : 256)
                                        : (type_.size == 4 ? (1 << 24) : (1ll << 53));
        int64_t v = pick(h, -lim, lim - 1);
        return static_cast<double>(v >= 0 ? v + 1 : v);  // never zero: no -0/+0 ties
      }
      default: {
        if (fp8) {
          const int64_t lim = type_.noInf ? 2 : 1;  // e4m3, e5m2
          return r >= 8 ? 0.0 : static_cast<double>(pick(h, -lim, lim));
        }
        int64_t lim = type_.size == 2 ? 14 : (type_.size == 4 ? (1 << 20) : (1ll << 40));
        return static_cast<double>(pick(h, -lim, lim));
      }
    }
  }

  TypeInfo type_;
  ValueKind kind_;
  uint64_t seed_;
  bool tabulate_;
  mutable std::vector<std::vector<unsigned char>> tables_;
};

}  // namespace chorus_test
