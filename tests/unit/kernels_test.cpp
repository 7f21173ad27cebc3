// reduce() and divide() for every type, op and instruction set against scalar references
// written independently of the kernels: integers in 128-bit arithmetic, fp16 with GCC's
// _Float16, bf16/fp8 decoded from their fields with ldexp and rounded by searching all
// finite values. Odd counts, vector-misaligned starts, in-place use, and guard bytes.
#include "kernels/copy.hpp"
#include "kernels/cpu/kernel_table.hpp"
#include "kernels/reduce.hpp"

#include <gtest/gtest.h>
#include <chorus/chorus.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace chorus::kernels {
namespace {

template <class T>
uint64_t toRaw(T v) {
  uint64_t r = 0;
  std::memcpy(&r, &v, sizeof v);
  return r;
}
template <class T>
T fromRaw(uint64_t r) {
  T v;
  std::memcpy(&v, &r, sizeof v);
  return v;
}

// ---- narrow formats by their fields (bf16, fp8) ---------------------------------------

struct NarrowFormat {
  int e, m;
  bool hasInf;
  int bias() const { return (1 << (e - 1)) - 1; }
  uint32_t magMask() const { return (1u << (e + m)) - 1; }
  uint32_t expAll() const { return ((1u << e) - 1) << m; }
  uint32_t maxFinite() const { return hasInf ? expAll() - 1 : magMask() - 1; }
  uint32_t nan() const { return hasInf ? expAll() | (1u << (m - 1)) : magMask(); }
  bool isNaN(uint64_t c) const {
    const uint32_t mag = uint32_t(c) & magMask();
    return hasInf ? (mag & expAll()) == expAll() && (mag & ~expAll()) : mag == magMask();
  }
  double magnitude(uint32_t k) const {  // codes past maxFinite continue the exponent
    const int exp = int(k >> m);
    const double mant = double(k & ((1u << m) - 1));
    if (exp == 0) return std::ldexp(mant, 1 - bias() - m);
    return std::ldexp(mant + std::ldexp(1.0, m), exp - bias() - m);
  }
  double decode(uint64_t c) const {
    const uint32_t mag = uint32_t(c) & magMask();
    double v = isNaN(c) ? NAN : hasInf && (mag & expAll()) == expAll() ? INFINITY : magnitude(mag);
    return (c >> (e + m)) & 1 ? -v : v;
  }
  // Nearest value, ties to the even code; overflow -> inf (or NaN without inf).
  uint64_t encode(double x) const {
    if (std::isnan(x)) return nan();
    const uint32_t sign = std::signbit(x) ? 1u << (e + m) : 0;
    const double a = std::fabs(x);
    const uint32_t over = maxFinite() + 1;
    uint32_t lo = 0, hi = over;
    if (a >= magnitude(over)) {
      lo = over;
    } else {
      while (hi - lo > 1) ((magnitude((lo + hi) / 2) <= a) ? lo : hi) = (lo + hi) / 2;
      const double dl = a - magnitude(lo), dh = magnitude(lo + 1) - a;
      if (dh < dl || (dh == dl && (lo & 1))) ++lo;
    }
    return sign | (lo == over ? (hasInf ? over : magMask()) : lo);
  }
};

// ---- one type's generator and references -----------------------------------------------

struct TypeCase {
  DataType type;
  const char* name;
  size_t size;
  uint64_t (*gen)(std::mt19937_64&);
  uint64_t (*ref)(RedOp, uint64_t, uint64_t);
  uint64_t (*div)(uint64_t, int);
  bool (*isNaN)(uint64_t);
  bool (*isZero)(uint64_t);
};
// gtest prints parameters in test listings: the type name, not the struct bytes.
void PrintTo(const TypeCase& tc, std::ostream* os) { *os << tc.name; }

template <class T>
uint64_t genInt(std::mt19937_64& rng) {
  using L = std::numeric_limits<T>;
  const T specials[] = {L::min(), L::max(), T(0), T(1), T(-1), T(L::min() + 1), T(L::max() - 1)};
  if (rng() % 6 == 0) return toRaw(specials[rng() % std::size(specials)]);
  return toRaw(T(rng()));
}

template <class T>
uint64_t refInt(RedOp op, uint64_t ra, uint64_t rb) {
  const T a = fromRaw<T>(ra), b = fromRaw<T>(rb);
  using W = unsigned __int128;  // exact for sums and products; the low bits are the wrap
  switch (op) {
    case RedOp::Sum:
    case RedOp::Avg:
      return toRaw(T(uint64_t(W(__int128(a)) + W(__int128(b)))));
    case RedOp::Prod:
      return toRaw(T(uint64_t(W(__int128(a)) * W(__int128(b)))));
    case RedOp::Max:
      return toRaw(std::max(a, b));
    case RedOp::Min:
      return toRaw(std::min(a, b));
  }
  return 0;
}

template <class T>
uint64_t divInt(uint64_t ra, int d) {
  const __int128 q = __int128(fromRaw<T>(ra)) / d;  // truncates toward zero
  return toRaw(T(uint64_t((unsigned __int128)q)));
}

bool never(uint64_t) { return false; }

template <class T>
uint64_t genFloat(std::mt19937_64& rng) {
  using L = std::numeric_limits<T>;
  const T specials[] = {
      L::quiet_NaN(),  -L::quiet_NaN(), L::infinity(), -L::infinity(), T(0), -T(0),
      L::denorm_min(), -L::min(),       L::max(),      -L::max(),      T(1)};
  switch (rng() % 8) {
    case 0:
      return toRaw(specials[rng() % std::size(specials)]);
    case 1:
    case 2:
      return rng() & (sizeof(T) == 4 ? 0xffffffffull : ~0ull);  // any bit pattern
    default:
      return toRaw(T(std::uniform_real_distribution<double>(-100, 100)(rng)));
  }
}

template <class T>
T maxMin(RedOp op, T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return op == RedOp::Max ? std::max(a, b) : std::min(a, b);
}

template <class T>
uint64_t refFloat(RedOp op, uint64_t ra, uint64_t rb) {
  const T a = fromRaw<T>(ra), b = fromRaw<T>(rb);
  if (op == RedOp::Sum || op == RedOp::Avg) return toRaw(T(a + b));
  if (op == RedOp::Prod) return toRaw(T(a * b));
  return toRaw(maxMin(op, a, b));
}

uint64_t divFloat(uint64_t ra, int d) {  // in long double: 64 >= 2*24+2 bits, one rounding
  return toRaw(float((long double)(fromRaw<float>(ra)) / d));
}
uint64_t divDouble(uint64_t ra, int d) { return toRaw(fromRaw<double>(ra) / double(d)); }

template <class T>
bool floatNaN(uint64_t r) {
  return std::isnan(fromRaw<T>(r));
}
template <class T>
bool floatZero(uint64_t r) {
  return fromRaw<T>(r) == T(0);
}

uint64_t genBits16(std::mt19937_64& rng) { return rng() & 0xffff; }
uint64_t genBits8(std::mt19937_64& rng) { return rng() & 0xff; }

// fp16 through the compiler's _Float16 (software conversions in libgcc).
uint64_t refHalf(RedOp op, uint64_t ra, uint64_t rb) {
  const _Float16 a = fromRaw<_Float16>(ra), b = fromRaw<_Float16>(rb);
  if (op == RedOp::Sum || op == RedOp::Avg) return toRaw(_Float16(a + b));
  if (op == RedOp::Prod) return toRaw(_Float16(a * b));
  return toRaw(_Float16(maxMin(op, float(a), float(b))));
}
uint64_t divHalf(uint64_t ra, int d) { return toRaw(_Float16(double(fromRaw<_Float16>(ra)) / d)); }
bool halfNaN(uint64_t r) { return std::isnan(float(fromRaw<_Float16>(r))); }
bool halfZero(uint64_t r) { return (r & 0x7fff) == 0; }

constexpr NarrowFormat kBf16{8, 7, true}, kE4m3{4, 3, false}, kE5m2{5, 2, true};

// Computed in float (as specified), rounded to the format by the search in NarrowFormat::encode.
template <const NarrowFormat& F>
uint64_t refNarrow(RedOp op, uint64_t ra, uint64_t rb) {
  const float a = float(F.decode(ra)), b = float(F.decode(rb));
  if (op == RedOp::Sum || op == RedOp::Avg) return F.encode(a + b);
  if (op == RedOp::Prod) return F.encode(a * b);
  return F.encode(maxMin(op, a, b));
}
template <const NarrowFormat& F>
uint64_t divNarrow(uint64_t ra, int d) {
  return F.encode(F.decode(ra) / d);
}
template <const NarrowFormat& F>
bool narrowNaN(uint64_t r) {
  return F.isNaN(r);
}
template <const NarrowFormat& F>
bool narrowZero(uint64_t r) {
  return (r & F.magMask()) == 0;
}

#define INT_CASE(D, T) \
  TypeCase { DataType::D, #D, sizeof(T), genInt<T>, refInt<T>, divInt<T>, never, never }
const TypeCase kTypes[] = {
    INT_CASE(Int8, int8_t),
    INT_CASE(Uint8, uint8_t),
    INT_CASE(Int32, int32_t),
    INT_CASE(Uint32, uint32_t),
    INT_CASE(Int64, int64_t),
    INT_CASE(Uint64, uint64_t),
    {DataType::Float16, "Float16", 2, genBits16, refHalf, divHalf, halfNaN, halfZero},
    {DataType::Float32, "Float32", 4, genFloat<float>, refFloat<float>, divFloat, floatNaN<float>,
     floatZero<float>},
    {DataType::Float64, "Float64", 8, genFloat<double>, refFloat<double>, divDouble,
     floatNaN<double>, floatZero<double>},
    {DataType::Bfloat16, "Bfloat16", 2, genBits16, refNarrow<kBf16>, divNarrow<kBf16>,
     narrowNaN<kBf16>, narrowZero<kBf16>},
    {DataType::Float8e4m3, "Float8e4m3", 1, genBits8, refNarrow<kE4m3>, divNarrow<kE4m3>,
     narrowNaN<kE4m3>, narrowZero<kE4m3>},
    {DataType::Float8e5m2, "Float8e5m2", 1, genBits8, refNarrow<kE5m2>, divNarrow<kE5m2>,
     narrowNaN<kE5m2>, narrowZero<kE5m2>},
};

// ---- buffers with guard bytes ---------------------------------------------------------

constexpr size_t kGuard = 64;
constexpr uint8_t kCanary = 0xa5;

// `count` elements starting `offset` elements past a 64-byte boundary, fenced by canaries.
class Buffer {
 public:
  Buffer(size_t count, size_t size, size_t offset)
      : size_(size), bytes_(2 * kGuard + 64 + (count + offset) * size, kCanary) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(bytes_.data()) + kGuard;
    start_ = (base + 63) / 64 * 64 + offset * size - reinterpret_cast<uintptr_t>(bytes_.data());
    end_ = start_ + count * size;
  }
  void* data() { return bytes_.data() + start_; }
  uint64_t get(size_t i) const {
    uint64_t r = 0;
    std::memcpy(&r, bytes_.data() + start_ + i * size_, size_);
    return r;
  }
  void set(size_t i, uint64_t r) { std::memcpy(bytes_.data() + start_ + i * size_, &r, size_); }
  bool guardsIntact() const {
    auto isCanary = [](uint8_t c) { return c == kCanary; };
    return std::all_of(bytes_.begin(), bytes_.begin() + ptrdiff_t(start_), isCanary) &&
           std::all_of(bytes_.begin() + ptrdiff_t(end_), bytes_.end(), isCanary);
  }

 private:
  size_t size_;
  std::vector<uint8_t> bytes_;
  size_t start_ = 0, end_ = 0;
};

// ---- the parameterised tests: instruction set x type --------------------------------

const char* const kIsas[] = {"public", "generic", "avx2", "avx512"};
const size_t kCounts[] = {0, 1, 7, 33, 1023, 4099};
enum class Layout { Separate, DstIsA, DstIsB };

class KernelsTest : public ::testing::TestWithParam<std::tuple<const char*, TypeCase>> {
 protected:
  void SetUp() override {
    isa_ = std::get<0>(GetParam());
    tc_ = std::get<1>(GetParam());
    if (std::strcmp(isa_, "public") != 0) {
      table_ = kernelTable(isa_);
      if (!table_) GTEST_SKIP() << "this CPU cannot run " << isa_;
    }
  }
  void runReduce(RedOp op, void* d, const void* a, const void* b, size_t n) {
    if (!table_) return reduce(tc_.type, op, d, a, b, n);
    const int o = op == RedOp::Avg ? 0 : int(op);
    table_->reduce[int(tc_.type)][o](d, a, b, n);
  }
  void runReduceMany(RedOp op, void* d, const std::vector<const void*>& srcs, size_t n) {
    if (!table_) return reduceMany(tc_.type, op, d, srcs, n);
    const int o = op == RedOp::Avg ? 0 : int(op);
    table_->reduceMany[int(tc_.type)][o](d, srcs.data(), int(srcs.size()), n);
  }
  void runDivide(void* d, const void* s, size_t n, int divisor) {
    if (!table_) return divide(tc_.type, d, s, n, divisor);
    table_->divide[int(tc_.type)](d, s, n, divisor);
  }
  // True if got matches want (any NaN for NaN; either zero for Max/Min of zeros).
  bool same(RedOp op, uint64_t got, uint64_t want) const {
    if (tc_.isNaN(want)) return tc_.isNaN(got);
    if ((op == RedOp::Max || op == RedOp::Min) && tc_.isZero(want)) return tc_.isZero(got);
    return got == want;
  }

  const char* isa_ = nullptr;
  TypeCase tc_{};
  const KernelTable* table_ = nullptr;
};

TEST_P(KernelsTest, ReduceMatchesReference) {
  std::mt19937_64 rng(42);
  for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg}) {
    for (size_t n : kCounts) {
      for (Layout layout : {Layout::Separate, Layout::DstIsA, Layout::DstIsB}) {
        for (size_t offset : {0, 1}) {
          Buffer a(n, tc_.size, offset), b(n, tc_.size, offset + 1), d(n, tc_.size, offset);
          std::vector<uint64_t> va(n), vb(n);
          for (size_t i = 0; i < n; ++i) {
            va[i] = tc_.gen(rng);
            vb[i] = tc_.gen(rng);
            a.set(i, va[i]);
            b.set(i, vb[i]);
          }
          Buffer& dst = layout == Layout::DstIsA ? a : layout == Layout::DstIsB ? b : d;
          runReduce(op, dst.data(), a.data(), b.data(), n);
          ASSERT_TRUE(dst.guardsIntact()) << toString(op) << " n=" << n;
          for (size_t i = 0; i < n; ++i) {
            const uint64_t want = tc_.ref(op, va[i], vb[i]), got = dst.get(i);
            ASSERT_TRUE(same(op, got, want))
                << tc_.name << " " << toString(op) << " n=" << n << " layout=" << int(layout)
                << " offset=" << offset << " i=" << i << std::hex << ": a=0x" << va[i] << " b=0x"
                << vb[i] << " got 0x" << got << " want 0x" << want;
          }
        }
      }
    }
  }
}

// reduceMany of k = 1..9 sources against the reference folded left to right, one source
// after the other (the kernel must round as k-1 pairwise reduces would): odd counts, a
// count past the kernel's block for every element size, sources at different offsets from
// a vector boundary, and dst apart from or the same as the first source.
TEST_P(KernelsTest, ReduceManyMatchesLeftFoldOfReference) {
  std::mt19937_64 rng(11);
  const size_t pastBlock = kReduceManyBlockBytes / tc_.size + 5;
  for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg}) {
    for (int k = 1; k <= 9; ++k) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{33}, size_t{1027}, pastBlock}) {
        if (n == pastBlock && k % 4 != 1) continue;  // k = 1, 5, 9 past the block: seconds
        for (bool dstIsFirst : {false, true}) {
          std::vector<Buffer> src;
          std::vector<std::vector<uint64_t>> v;
          v.assign(size_t(k), std::vector<uint64_t>(n));
          std::vector<const void*> ptrs;
          for (int j = 0; j < k; ++j) {
            src.emplace_back(n, tc_.size, size_t(j) % 3);
            for (size_t i = 0; i < n; ++i) src.back().set(i, v[size_t(j)][i] = tc_.gen(rng));
          }
          for (Buffer& b : src) ptrs.push_back(b.data());
          Buffer d(n, tc_.size, 1);
          Buffer& dst = dstIsFirst ? src[0] : d;
          runReduceMany(op, dst.data(), ptrs, n);
          ASSERT_TRUE(dst.guardsIntact()) << toString(op) << " k=" << k << " n=" << n;
          for (size_t i = 0; i < n; ++i) {
            uint64_t want = v[0][i];
            for (int j = 1; j < k; ++j) want = tc_.ref(op, want, v[size_t(j)][i]);
            const uint64_t got = dst.get(i);
            ASSERT_TRUE(same(op, got, want))
                << tc_.name << " " << toString(op) << " k=" << k << " n=" << n
                << " dstIsFirst=" << dstIsFirst << " i=" << i << std::hex << ": got 0x" << got
                << " want 0x" << want;
          }
        }
      }
    }
  }
}

TEST(Kernels, ReduceManyRejectsBadArguments) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, c[4] = {2, 2, 2, 2};
  const std::vector<const void*> none, laterIsDst = {a, b, c};
  EXPECT_THROW(reduceMany(DataType::Float32, RedOp::Sum, a, none, 4), Error);
  EXPECT_THROW(reduceMany(DataType::Float32, RedOp::Sum, c, laterIsDst, 4), Error);
  EXPECT_THROW(reduceMany(DataType::Float32, RedOp(99), a, laterIsDst, 4), Error);
  reduceMany(DataType::Float32, RedOp::Sum, a, laterIsDst, 4);  // dst is the first: fine
  EXPECT_EQ(a[0], 4.0f);
  EXPECT_EQ(a[3], 7.0f);
}

TEST_P(KernelsTest, DivideMatchesReference) {
  const bool isUnsigned =
      tc_.type == DataType::Uint8 || tc_.type == DataType::Uint32 || tc_.type == DataType::Uint64;
  std::mt19937_64 rng(7);
  for (int divisor : {1, 2, 3, 7, 8, 1000, 65537, -1, -3}) {
    if (isUnsigned && divisor < 0) continue;
    for (size_t n : kCounts) {
      for (bool inPlace : {false, true}) {
        Buffer s(n, tc_.size, 1), d(n, tc_.size, 0);
        std::vector<uint64_t> v(n);
        for (size_t i = 0; i < n; ++i) s.set(i, v[i] = tc_.gen(rng));
        Buffer& dst = inPlace ? s : d;
        runDivide(dst.data(), s.data(), n, divisor);
        ASSERT_TRUE(dst.guardsIntact());
        for (size_t i = 0; i < n; ++i) {
          const uint64_t want = tc_.div(v[i], divisor), got = dst.get(i);
          ASSERT_TRUE(same(RedOp::Sum, got, want))
              << tc_.name << " / " << divisor << " n=" << n << " i=" << i << std::hex << ": x=0x"
              << v[i] << " got 0x" << got << " want 0x" << want;
        }
      }
    }
  }
}

// The narrow float formats only (fp16, bf16, fp8).
class NarrowKernelsTest : public KernelsTest {};

std::vector<TypeCase> narrowTypes() {
  std::vector<TypeCase> out;
  for (const TypeCase& tc : kTypes)
    if (tc.type == DataType::Float16 || tc.type == DataType::Bfloat16 ||
        tc.type == DataType::Float8e4m3 || tc.type == DataType::Float8e5m2)
      out.push_back(tc);
  return out;
}

// Every code of a narrow format through the widen/narrow pair of each path: x max x = x
// and x + (-0) = x, NaN staying NaN.
TEST_P(NarrowKernelsTest, EveryNarrowCodeSurvives) {
  const size_t n = size_t(1) << (8 * tc_.size);
  const uint64_t negZero = uint64_t(1) << (8 * tc_.size - 1);
  Buffer all(n, tc_.size, 1), zeros(n, tc_.size, 0), d(n, tc_.size, 0);
  for (size_t i = 0; i < n; ++i) {
    all.set(i, i);
    zeros.set(i, negZero);
  }
  for (RedOp op : {RedOp::Max, RedOp::Sum}) {
    runReduce(op, d.data(), all.data(), op == RedOp::Max ? all.data() : zeros.data(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(tc_.isNaN(i) ? tc_.isNaN(d.get(i)) : d.get(i) == i)
          << tc_.name << " " << toString(op) << std::hex << " code 0x" << i << " got 0x"
          << d.get(i);
    }
  }
}

// Quotients of narrow floats have bits far below the format's precision, which the fp8
// paths must round once only: every 8-bit code (a sample of 16-bit ones) by many divisors.
TEST_P(NarrowKernelsTest, DivideNarrowByManyDivisors) {
  const size_t n = 256;
  const uint64_t stride = tc_.size == 1 ? 1 : 257;  // 16-bit formats: codes 0, 257, 514, ...
  Buffer s(n, tc_.size, 0), d(n, tc_.size, 0);
  for (size_t i = 0; i < n; ++i) s.set(i, i * stride);
  for (int divisor = 2; divisor <= 1000; ++divisor) {
    runDivide(d.data(), s.data(), n, divisor);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t want = tc_.div(i * stride, divisor), got = d.get(i);
      ASSERT_TRUE(same(RedOp::Sum, got, want))
          << tc_.name << " / " << divisor << std::hex << ": x=0x" << i * stride << " got 0x" << got
          << " want 0x" << want;
    }
  }
}

auto paramName = [](const auto& info) {
  return std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
};
INSTANTIATE_TEST_SUITE_P(All, KernelsTest,
                         ::testing::Combine(::testing::ValuesIn(kIsas),
                                            ::testing::ValuesIn(kTypes)),
                         paramName);
INSTANTIATE_TEST_SUITE_P(Narrow, NarrowKernelsTest,
                         ::testing::Combine(::testing::ValuesIn(kIsas),
                                            ::testing::ValuesIn(narrowTypes())),
                         paramName);

// ---- fixed edge cases through the public entry points -----------------------------------

template <class T>
std::vector<T> reduced(DataType type, RedOp op, std::vector<T> a, const std::vector<T>& b) {
  reduce(type, op, a.data(), a.data(), b.data(), a.size());
  return a;
}

TEST(Kernels, IntegerOverflowWraps) {
  EXPECT_EQ(reduced<int8_t>(DataType::Int8, RedOp::Sum, {127, -128}, {1, -1}),
            (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(reduced<uint8_t>(DataType::Uint8, RedOp::Sum, {255}, {2}), (std::vector<uint8_t>{1}));
  EXPECT_EQ(reduced<int8_t>(DataType::Int8, RedOp::Prod, {-128, 16}, {-1, 16}),
            (std::vector<int8_t>{-128, 0}));
  EXPECT_EQ(reduced<int32_t>(DataType::Int32, RedOp::Sum, {INT32_MAX}, {1}),
            (std::vector<int32_t>{INT32_MIN}));
  EXPECT_EQ(reduced<int64_t>(DataType::Int64, RedOp::Prod, {INT64_MIN, 3}, {-1, INT64_MAX}),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX - 2}));
  EXPECT_EQ(reduced<uint64_t>(DataType::Uint64, RedOp::Max, {~0ull}, {1}),
            (std::vector<uint64_t>{~0ull}));
  EXPECT_EQ(reduced<int64_t>(DataType::Int64, RedOp::Min, {-1}, {1}), (std::vector<int64_t>{-1}));
}

TEST(Kernels, FloatEdges) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto mx = reduced<float>(DataType::Float32, RedOp::Max, {nan, 1, 2, -0.0f}, {1, nan, 1, -0.0f});
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 2.0f);
  EXPECT_TRUE(std::signbit(mx[3]));
  auto mn = reduced<double>(DataType::Float64, RedOp::Min, {NAN, 1}, {1, NAN});
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  // fp16: 60000 + 60000 overflows to inf; -0 + -0 = -0; NaN max.
  auto h = reduced<uint16_t>(DataType::Float16, RedOp::Sum, {0x7b53, 0x8000, 0x3c00},
                             {0x7b53, 0x8000, 0x7e00});
  EXPECT_EQ(h[0], 0x7c00);
  EXPECT_EQ(h[1], 0x8000);
  EXPECT_EQ(h[2] & 0x7c00, 0x7c00);
  EXPECT_NE(h[2] & 0x3ff, 0);
  // fp16 subnormals: 2^-24 + 2^-24 = 2^-23.
  EXPECT_EQ(reduced<uint16_t>(DataType::Float16, RedOp::Sum, {1}, {1})[0], 2);
  // bf16: 1 + 2^-8 ties to even (1); e4m3: 448 + 32 overflows to NaN.
  EXPECT_EQ(reduced<uint16_t>(DataType::Bfloat16, RedOp::Sum, {0x3f80}, {0x3b80})[0], 0x3f80);
  EXPECT_EQ(reduced<uint8_t>(DataType::Float8e4m3, RedOp::Sum, {0x7e}, {0x60})[0], 0x7f);
}

TEST(Kernels, DivideEdges) {
  std::vector<int32_t> i{-7, 7, INT32_MIN, 5};
  divide(DataType::Int32, i.data(), i.data(), i.size(), 2);
  EXPECT_EQ(i, (std::vector<int32_t>{-3, 3, INT32_MIN / 2, 2}));
  std::vector<int64_t> l{INT64_MIN, -7};
  divide(DataType::Int64, l.data(), l.data(), l.size(), -1);
  EXPECT_EQ(l, (std::vector<int64_t>{INT64_MIN, 7}));
  std::vector<int8_t> c{-128, -7};
  divide(DataType::Int8, c.data(), c.data(), c.size(), -1);
  EXPECT_EQ(c, (std::vector<int8_t>{-128, 7}));
  std::vector<float> f{1.0f};
  divide(DataType::Float32, f.data(), f.data(), 1, 3);
  EXPECT_EQ(std::bit_cast<uint32_t>(f[0]), 0x3eaaaaabu);  // 1/3 correctly rounded
}

TEST(Kernels, InvalidArguments) {
  int32_t x = 0;
  auto expectInvalid = [](auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << "no exception";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Result::InvalidArgument);
    }
  };
  expectInvalid([&] { reduce(DataType(12), RedOp::Sum, &x, &x, &x, 1); });
  expectInvalid([&] { reduce(DataType(-1), RedOp::Sum, &x, &x, &x, 1); });
  expectInvalid([&] { reduce(DataType::Int32, RedOp(5), &x, &x, &x, 1); });
  expectInvalid([&] { reduce(DataType::Int32, RedOp::Sum, nullptr, &x, &x, 1); });
  expectInvalid([&] { divide(DataType::Int32, &x, &x, 1, 0); });
  expectInvalid([&] { divide(DataType::Uint32, &x, &x, 1, -2); });
  expectInvalid([&] { divide(DataType(99), &x, &x, 1, 2); });
  reduce(DataType::Int32, RedOp::Sum, nullptr, nullptr, nullptr, 0);  // empty: fine
}

// copyStreaming writes exactly [dst, dst + bytes) with src's bytes: every head and tail
// length around the 64-byte lines, misaligned both ways, guard bytes on each side.
TEST(Kernels, CopyStreamingCopiesExactly) {
  std::vector<uint8_t> src(4096 + 256), dst(src.size() + 128);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t bytes : {0, 1, 15, 63, 64, 65, 127, 128, 191, 1000, 4096, 4096 + 129}) {
    for (size_t srcOffset : {0, 1, 17, 64}) {
      for (size_t dstOffset : {0, 3, 32, 63}) {
        std::fill(dst.begin(), dst.end(), uint8_t{0xA5});
        copyStreaming(dst.data() + 64 + dstOffset, src.data() + srcOffset, bytes);
        for (size_t i = 0; i < dst.size(); ++i) {
          const size_t at = 64 + dstOffset;
          const uint8_t want = i >= at && i < at + bytes ? src[srcOffset + i - at] : 0xA5;
          ASSERT_EQ(dst[i], want) << "bytes " << bytes << " src+" << srcOffset << " dst+"
                                  << dstOffset << " at " << i;
        }
      }
    }
  }
}

TEST(Kernels, IsaName) {
  const std::string name = isaName();
  EXPECT_TRUE(name == "generic" || name == "avx2" || name == "avx512") << name;
  EXPECT_EQ(name, activeKernels().name);
  // The best supported table, unless CHORUS_KERNEL_ISA caps the choice.
  const char* cap = std::getenv("CHORUS_KERNEL_ISA");
  if (cap && kernelTable(cap)) {
    EXPECT_EQ(name, cap);
  } else if (kernelTable("avx512")) {
    EXPECT_EQ(name, "avx512");
  } else if (kernelTable("avx2")) {
    EXPECT_EQ(name, "avx2");
  }
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
    EXPECT_NE(kernelTable("avx2"), nullptr);
  }
#endif
}

}  // namespace
}  // namespace chorus::kernels
