#include "chorus_perf_data.hpp"

#include "chorus_perf_half.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace perf {
namespace {

// ---- per-type codecs: storage type and conversions ---------------------------------------
template <class S>
struct IntCodec {
  using Storage = S;
  static constexpr bool kFloat = false;
  static constexpr int kDigits = std::numeric_limits<S>::digits;
};

template <class S, int Digits>
struct FloatCodec {
  using Storage = S;
  static constexpr bool kFloat = true;
  static constexpr int kDigits = Digits;  // significand bits, implicit one included
  static S fromDouble(double d) { return static_cast<S>(d); }
  static double toDouble(S s) { return static_cast<double>(s); }
  using Bits = std::conditional_t<sizeof(S) == 4, uint32_t, uint64_t>;
  static Bits bits(S s) { return std::bit_cast<Bits>(s); }
};

struct HalfCodec {
  using Storage = uint16_t;
  static constexpr bool kFloat = true;
  static constexpr int kDigits = 11;
  static uint16_t fromDouble(double d) { return floatToHalf(static_cast<float>(d)); }
  static double toDouble(uint16_t s) { return halfToFloat(s); }
  static uint16_t bits(uint16_t s) { return s; }
};

struct Bf16Codec {
  using Storage = uint16_t;
  static constexpr bool kFloat = true;
  static constexpr int kDigits = 8;
  static uint16_t fromDouble(double d) { return floatToBf16(static_cast<float>(d)); }
  static double toDouble(uint16_t s) { return bf16ToFloat(s); }
  static uint16_t bits(uint16_t s) { return s; }
};

template <double (*ToDouble)(uint8_t), uint8_t (*FromDouble)(double), int Digits>
struct Fp8Codec {
  using Storage = uint8_t;
  static constexpr bool kFloat = true;
  static constexpr int kDigits = Digits;
  static uint8_t fromDouble(double d) { return FromDouble(d); }
  static double toDouble(uint8_t s) { return ToDouble(s); }
  static uint8_t bits(uint8_t s) { return s; }
};
using E4m3Codec = Fp8Codec<fp8e4m3ToDouble, doubleToFp8e4m3, 4>;
using E5m2Codec = Fp8Codec<fp8e5m2ToDouble, doubleToFp8e5m2, 3>;

// Calls fn(Codec{}) for the codec of `type`.
template <class Fn>
auto withCodec(Type type, Fn&& fn) {
  switch (type) {
    case Type::Int8:
      return fn(IntCodec<int8_t>{});
    case Type::Uint8:
      return fn(IntCodec<uint8_t>{});
    case Type::Int32:
      return fn(IntCodec<int32_t>{});
    case Type::Uint32:
      return fn(IntCodec<uint32_t>{});
    case Type::Int64:
      return fn(IntCodec<int64_t>{});
    case Type::Uint64:
      return fn(IntCodec<uint64_t>{});
    case Type::Float16:
      return fn(HalfCodec{});
    case Type::Float32:
      return fn(FloatCodec<float, 24>{});
    case Type::Float64:
      return fn(FloatCodec<double, 53>{});
    case Type::Bfloat16:
      return fn(Bf16Codec{});
    case Type::Float8e4m3:
      return fn(E4m3Codec{});
    case Type::Float8e5m2:
      return fn(E5m2Codec{});
  }
  return fn(IntCodec<uint8_t>{});
}

// ---- value generation ---------------------------------------------------------------------
uint64_t mix(uint64_t seed, int rank, size_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + (static_cast<uint64_t>(rank) << 44) + index;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Values are lo + uniform[0, span) in wrapping 64-bit arithmetic; span 0 = all 2^64.
// For floats the result is read as a signed integer. `prodFloat` picks from {-1, 1, 2}.
struct Gen {
  uint64_t lo = 0;
  uint64_t span = 0;
  bool prodFloat = false;
  uint64_t raw(uint64_t seed, int rank, size_t index) const {
    const uint64_t h = mix(seed, rank, index);
    if (prodFloat) {
      constexpr int64_t kVals[3] = {-1, 1, 2};
      return static_cast<uint64_t>(kVals[(h >> 32) % 3]);
    }
    if (span == 0) return h;
    return lo + static_cast<uint64_t>((static_cast<unsigned __int128>(h) * span) >> 64);
  }
};

Gen symmetric(uint64_t m) { return Gen{0 - m, 2 * m + 1, false}; }

template <class C>
Gen genFor(const DataSpec& spec) {
  const uint64_t n = static_cast<uint64_t>(std::max(spec.nranks, 1));
  if constexpr (C::kFloat) {
    const int digits = std::min(C::kDigits, 62);
    const uint64_t exact = uint64_t{1} << digits;  // every integer up to this is exact
    switch (spec.op) {
      case Op::Prod:
        return Gen{0, 0, true};
      case Op::Min:
      case Op::Max:
        return symmetric(exact);
      default:  // sum, avg: every partial sum of n values stays exact
        return symmetric(std::max<uint64_t>(exact / n, 1));
    }
  } else {
    using S = typename C::Storage;
    if (spec.op == Op::Prod) return Gen{1, 3, false};  // 1..3: products rarely wrap to 0
    if (spec.op != Op::Avg) return Gen{};              // full range, sums wrap
    const uint64_t m = static_cast<uint64_t>(std::numeric_limits<S>::max()) / n;
    if (std::is_signed_v<S>) return symmetric(m);
    return Gen{0, m + 1, false};  // m + 1 <= 2^64 - 1 for n >= 2; n == 1 wraps to "all"
  }
}

template <class C>
typename C::Storage encode(uint64_t raw) {
  if constexpr (C::kFloat) {
    return C::fromDouble(static_cast<double>(static_cast<int64_t>(raw)));
  } else {
    return static_cast<typename C::Storage>(raw);
  }
}

// ---- references -------------------------------------------------------------------------
template <class C>
typename C::Storage reduceIntRef(const DataSpec& spec, const Gen& gen, size_t index) {
  using S = typename C::Storage;
  uint64_t acc = spec.op == Op::Prod ? 1 : 0;
  int64_t sacc = 0;
  S best = encode<C>(gen.raw(spec.seed, 0, index));
  for (int r = 0; r < spec.nranks; ++r) {
    const S v = encode<C>(gen.raw(spec.seed, r, index));
    switch (spec.op) {
      case Op::Sum:
        acc += static_cast<uint64_t>(v);
        break;
      case Op::Prod:
        acc *= static_cast<uint64_t>(v);
        break;
      case Op::Max:
        best = std::max(best, v);
        break;
      case Op::Min:
        best = std::min(best, v);
        break;
      case Op::Avg:
        if constexpr (std::is_signed_v<S>) {
          sacc += static_cast<int64_t>(v);
        } else {
          acc += static_cast<uint64_t>(v);
        }
        break;
    }
  }
  switch (spec.op) {
    case Op::Max:
    case Op::Min:
      return best;
    case Op::Avg:
      if constexpr (std::is_signed_v<S>) return static_cast<S>(sacc / spec.nranks);
      return static_cast<S>(acc / static_cast<uint64_t>(spec.nranks));
    default:
      return static_cast<S>(acc);
  }
}

// Exact reduction in double (inputs are chosen so it is exact), except avg's final divide.
template <class C>
double reduceFloatRef(const DataSpec& spec, const Gen& gen, size_t index) {
  double acc = spec.op == Op::Prod ? 1.0 : 0.0;
  double best = C::toDouble(encode<C>(gen.raw(spec.seed, 0, index)));
  for (int r = 0; r < spec.nranks; ++r) {
    const double v = C::toDouble(encode<C>(gen.raw(spec.seed, r, index)));
    switch (spec.op) {
      case Op::Prod:
        acc *= v;
        break;
      case Op::Max:
        best = std::max(best, v);
        break;
      case Op::Min:
        best = std::min(best, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  if (spec.op == Op::Max || spec.op == Op::Min) return best;
  if (spec.op == Op::Avg) return acc / spec.nranks;
  return acc;
}

// Position of a float in the ordered sequence of its type's values: adjacent values
// differ by 1 (one ULP), -0 and +0 included (-0 is one below +0, not equal).
template <class C>
int64_t ordered(typename C::Storage s) {
  const auto bits = C::bits(s);
  using B = decltype(bits);
  constexpr B kSign = B{1} << (sizeof(B) * 8 - 1);
  const int64_t mag = static_cast<int64_t>(bits & ~kSign);
  return (bits & kSign) ? -mag - 1 : mag;
}

// Avg: the library sums exactly (the inputs make every partial sum exact) and divides
// once; float and double round the quotient once (0 ULP from the reference), the narrow
// types round it to float and then to the type, which can be 1 ULP off. So at most 1 ULP
// of the element's type, for every float type.
constexpr int64_t kAvgUlps = 1;

template <class C>
size_t countWrongReducedT(const DataSpec& spec, const void* got, size_t count, size_t first) {
  using S = typename C::Storage;
  const Gen gen = genFor<C>(spec);
  const S* g = static_cast<const S*>(got);
  size_t wrong = 0;
  if constexpr (C::kFloat) {
    // Exact results must match bit for bit (+0 is not -0); NaN (an E4M3 product that
    // overflows) matches NaN; avg within kAvgUlps of the correctly rounded quotient.
    for (size_t i = 0; i < count; ++i) {
      const S refS = C::fromDouble(reduceFloatRef<C>(spec, gen, first + i));
      if (C::bits(g[i]) == C::bits(refS)) continue;
      if (std::isnan(C::toDouble(g[i])) && std::isnan(C::toDouble(refS))) continue;
      if (spec.op == Op::Avg && std::isfinite(C::toDouble(g[i]))) {
        const int64_t ulps = ordered<C>(g[i]) - ordered<C>(refS);
        if (ulps >= -kAvgUlps && ulps <= kAvgUlps) continue;
      }
      ++wrong;
    }
  } else {
    for (size_t i = 0; i < count; ++i) {
      if (g[i] != reduceIntRef<C>(spec, gen, first + i)) ++wrong;
    }
  }
  return wrong;
}

}  // namespace

void fillInput(const DataSpec& spec, int rank, void* buf, size_t count, size_t firstIndex) {
  withCodec(spec.type, [&](auto codec) {
    using C = decltype(codec);
    const Gen gen = genFor<C>(spec);
    auto* out = static_cast<typename C::Storage*>(buf);
    for (size_t i = 0; i < count; ++i) out[i] = encode<C>(gen.raw(spec.seed, rank, firstIndex + i));
    return 0;
  });
}

void fillPoison(void* buf, size_t bytes) { std::memset(buf, 0xA5, bytes); }

size_t countWrongReduced(const DataSpec& spec, const void* got, size_t count, size_t firstIndex) {
  return withCodec(spec.type, [&](auto codec) {
    return countWrongReducedT<decltype(codec)>(spec, got, count, firstIndex);
  });
}

size_t countWrongCopied(const DataSpec& spec, const void* got, size_t count, int srcRank,
                        size_t firstIndex) {
  return withCodec(spec.type, [&](auto codec) {
    using C = decltype(codec);
    using S = typename C::Storage;
    const Gen gen = genFor<C>(spec);
    const auto* g = static_cast<const S*>(got);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      const S want = encode<C>(gen.raw(spec.seed, srcRank, firstIndex + i));
      if (std::memcmp(&g[i], &want, sizeof(S)) != 0) ++wrong;
    }
    return wrong;
  });
}

}  // namespace perf
