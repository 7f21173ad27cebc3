// chorus-perf's correctness check (perf/chorus_perf_data.cpp) and options, on their own:
// the #wrong column is only worth something if the check can fail. Label `unit`.
#include "chorus_perf_args.hpp"
#include "chorus_perf_data.hpp"
#include "chorus_perf_half.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

using perf::DataSpec;
using perf::Op;
using perf::Type;

// The small integers come from a table the search filled: the same codes as the search,
// on and beyond the table's edges, -0.0 keeping its sign.
TEST(PerfCheck, Fp8SmallIntegerTableMatchesTheSearch) {
  for (int i = -600; i <= 600; ++i) {
    EXPECT_EQ((perf::doubleToFp8<4, 3, false>(i)), (perf::doubleToFp8Search<4, 3, false>(i))) << i;
    EXPECT_EQ((perf::doubleToFp8<5, 2, true>(i)), (perf::doubleToFp8Search<5, 2, true>(i))) << i;
    EXPECT_EQ((perf::doubleToFp8<4, 3, false>(i + 0.5)),
              (perf::doubleToFp8Search<4, 3, false>(i + 0.5)))
        << i;
  }
  EXPECT_EQ(perf::doubleToFp8e4m3(-0.0), 0x80);
  EXPECT_EQ(perf::doubleToFp8e4m3(0.0), 0x00);
  EXPECT_EQ(perf::doubleToFp8e4m3(3.0), 0x44);
  EXPECT_EQ(perf::doubleToFp8e5m2(-3.0), 0xc2);
}

// E4M3 ("fn") and E5M2 codes from the OCP FP8 specification's tables.
TEST(PerfCheck, Fp8KnownEncodings) {
  EXPECT_EQ(perf::doubleToFp8e4m3(1.0), 0x38);
  EXPECT_EQ(perf::doubleToFp8e4m3(-2.0), 0xc0);
  EXPECT_EQ(perf::doubleToFp8e4m3(448.0), 0x7e);         // the largest
  EXPECT_EQ(perf::doubleToFp8e4m3(0x1p-9), 0x01);        // the smallest subnormal
  EXPECT_EQ(perf::doubleToFp8e4m3(17.0), 0x58);          // 17 ties to 16 (even code)
  EXPECT_EQ(perf::doubleToFp8e4m3(19.0), 0x5a);          // 19 ties to 20 (even code)
  EXPECT_EQ(perf::doubleToFp8e4m3(512.0) & 0x7f, 0x7f);  // no inf: NaN
  EXPECT_TRUE(std::isnan(perf::fp8e4m3ToDouble(0x7f)));
  EXPECT_EQ(perf::fp8e4m3ToDouble(0x7e), 448.0);
  EXPECT_EQ(perf::doubleToFp8e5m2(1.0), 0x3c);
  EXPECT_EQ(perf::doubleToFp8e5m2(57344.0), 0x7b);  // the largest
  EXPECT_EQ(perf::doubleToFp8e5m2(65536.0), 0x7c);  // inf
  EXPECT_EQ(perf::doubleToFp8e5m2(0x1p-16), 0x01);  // the smallest subnormal
  EXPECT_EQ(perf::doubleToFp8e5m2(-0.0), 0x80);
  EXPECT_TRUE(std::isinf(perf::fp8e5m2ToDouble(0x7c)));
  for (int c = 0; c < 256; ++c) {  // every finite code round-trips
    const double e4 = perf::fp8e4m3ToDouble(static_cast<uint8_t>(c));
    if (!std::isnan(e4)) EXPECT_EQ(perf::doubleToFp8e4m3(e4), c) << c;
    const double e5 = perf::fp8e5m2ToDouble(static_cast<uint8_t>(c));
    if (!std::isnan(e5)) EXPECT_EQ(perf::doubleToFp8e5m2(e5), c) << c;
  }
}

// An exact result checks bit for bit: a -0 where the reference is +0 is wrong. (Types
// whose small inputs often sum to exactly 0.)
TEST(PerfCheck, SignedZeroIsWrong) {
  struct Zeroes {
    Type type;
    uint16_t plus, minus;
  };
  for (Zeroes z : {Zeroes{Type::Bfloat16, 0x0000, 0x8000}, Zeroes{Type::Float8e5m2, 0x00, 0x80},
                   Zeroes{Type::Float8e4m3, 0x00, 0x80}}) {
    const DataSpec spec{z.type, Op::Sum, 4, 7};
    int tested = 0;
    for (size_t i = 0; i < 20000 && tested < 5; ++i) {
      // The sum is 0 exactly when +0 is counted right.
      unsigned char plus[2], minus[2];
      std::memcpy(plus, &z.plus, 2);
      std::memcpy(minus, &z.minus, 2);
      if (perf::countWrongReduced(spec, plus, 1, i) != 0) continue;
      EXPECT_EQ(perf::countWrongReduced(spec, minus, 1, i), 1u)
          << perf::typeName(z.type) << ": -0 passed for +0 at " << i;
      ++tested;
    }
    EXPECT_EQ(tested, 5) << perf::typeName(z.type) << ": too few elements sum to 0";
  }
}

// The test's own view of an element of a float type (the codecs of chorus_perf_half.hpp).
double decode(Type type, const unsigned char* p) {
  float f;
  double d;
  uint16_t h;
  std::memcpy(&h, p, 2);
  switch (type) {
    case Type::Float32:
      std::memcpy(&f, p, 4);
      return f;
    case Type::Float64:
      std::memcpy(&d, p, 8);
      return d;
    case Type::Float16:
      return perf::halfToFloat(h);
    case Type::Bfloat16:
      return perf::bf16ToFloat(h);
    case Type::Float8e4m3:
      return perf::fp8e4m3ToDouble(p[0]);
    default:
      return perf::fp8e5m2ToDouble(p[0]);
  }
}

void encode(Type type, double x, unsigned char* p) {
  const float f = static_cast<float>(x);
  uint16_t h = 0;
  switch (type) {
    case Type::Float32:
      std::memcpy(p, &f, 4);
      return;
    case Type::Float64:
      std::memcpy(p, &x, 8);
      return;
    case Type::Float16:
      h = perf::floatToHalf(f);
      break;
    case Type::Bfloat16:
      h = perf::floatToBf16(f);
      break;
    case Type::Float8e4m3:
      p[0] = perf::doubleToFp8e4m3(x);
      return;
    default:
      p[0] = perf::doubleToFp8e5m2(x);
      return;
  }
  std::memcpy(p, &h, 2);
}

// Avg: the correctly rounded quotient and 1 ULP either side pass; 2 ULP and a result
// 1.5 away (the old tolerance was about 2.0 absolute) fail, for every float type.
TEST(PerfCheck, AvgToleranceIsOneUlp) {
  for (Type type : {Type::Float32, Type::Float16, Type::Bfloat16, Type::Float8e4m3,
                    Type::Float8e5m2, Type::Float64}) {
    const DataSpec spec{type, Op::Avg, 3, 11};
    const size_t es = perf::typeSize(type);
    int checked = 0;
    for (size_t i = 0; i < 200 && checked < 20; ++i) {
      double sum = 0;  // exact: the inputs are small integers
      for (int r = 0; r < spec.nranks; ++r) {
        unsigned char in[8] = {};
        perf::fillInput(spec, r, in, 1, i);
        sum += decode(type, in);
      }
      const double q = sum / spec.nranks;
      if (std::fabs(q) < 1) continue;  // stay clear of zero and the subnormals
      unsigned char ref[8] = {};
      encode(type, q, ref);
      auto shifted = [&](int64_t ulps) {  // +-ulps along the type's order
        std::vector<unsigned char> out(ref, ref + es);
        uint64_t bits = 0;
        std::memcpy(&bits, ref, es);
        bits += static_cast<uint64_t>(q > 0 ? ulps : -ulps);  // sign-magnitude
        std::memcpy(out.data(), &bits, es);
        return out;
      };
      const char* name = perf::typeName(type);
      EXPECT_EQ(perf::countWrongReduced(spec, ref, 1, i), 0u) << name;
      EXPECT_EQ(perf::countWrongReduced(spec, shifted(1).data(), 1, i), 0u) << name;
      EXPECT_EQ(perf::countWrongReduced(spec, shifted(-1).data(), 1, i), 0u) << name;
      EXPECT_EQ(perf::countWrongReduced(spec, shifted(2).data(), 1, i), 1u) << name;
      EXPECT_EQ(perf::countWrongReduced(spec, shifted(-2).data(), 1, i), 1u) << name;
      unsigned char off[8] = {};
      encode(type, q + 1.5, off);  // many ULP away for every type at |q| >= 1
      if (std::fabs(decode(type, off) - decode(type, ref)) > 1)
        EXPECT_EQ(perf::countWrongReduced(spec, off, 1, i), 1u) << name;
      ++checked;
    }
    EXPECT_GT(checked, 0) << perf::typeName(type);
  }
}

perf::ParseStatus parse(std::vector<std::string> words, perf::Args& args, std::string& error) {
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  return perf::parseArgs(static_cast<int>(argv.size()), argv.data(), {"chorus-perf", true}, args,
                         error);
}

// -R is nccl-tests' buffer registration: 0 ordinary buffers, 1 registered, 2 memAlloc;
// and 3, the send buffer registered only (a registered source into a plain destination);
// anything else is refused. The rounds of -A each moved to -K.
TEST(PerfCheck, RegistrationFlagAsNcclTests) {
  perf::Args args;
  std::string error;
  for (int v : {0, 1, 2, 3}) {
    EXPECT_EQ(parse({"chorus-perf", "-R", std::to_string(v)}, args, error), perf::ParseStatus::Ok);
    EXPECT_EQ(args.registration, v);
  }
  for (const char* v : {"4", "-1", "x"}) {
    EXPECT_EQ(parse({"chorus-perf", "-R", v}, args, error), perf::ParseStatus::Error);
    EXPECT_NE(error.find("for -R"), std::string::npos) << error;
  }
  perf::Args rounds;
  EXPECT_EQ(parse({"chorus-perf", "-A", "each", "-K", "5"}, rounds, error), perf::ParseStatus::Ok);
  EXPECT_EQ(rounds.repeats, 5);
  perf::Args all;
  EXPECT_EQ(parse({"chorus-perf", "-d", "all"}, all, error), perf::ParseStatus::Ok);
  EXPECT_EQ(all.types.size(), 12u);  // fp8 e4m3 and e5m2 included
  EXPECT_EQ(all.types.back(), Type::Float8e5m2);
}

}  // namespace
