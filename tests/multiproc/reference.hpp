// Independent reference for reductions, in plain scalar code: integers in uint64/int64
// arithmetic (sum and prod wrap modulo 2^64, then truncate: the same as wrapping in the
// type's width), floats in double (exact for the inputs of inputs.hpp), then rounded once
// to the type with the test's own encoder.
//
// avg: integers: exact sum / nranks, truncated toward zero. Floats: exact sum / nranks
// computed once in double and rounded to the type; a result 1 ULP away is accepted (and
// counted) because a library may define avg as sum * (1/n) or accumulate sum/n per rank.
#pragma once

#include "dtypes.hpp"
#include "inputs.hpp"

#include <chorus/chorus.hpp>

#include <cstdint>
#include <vector>

namespace chorus_test {

class Reference {
 public:
  // `total`: how many global indices will be asked for; above kPeriod the values of one
  // period are computed once and reused.
  Reference(const Inputs& in, chorus::RedOp op, int nranks, size_t total)
      : in_(in), op_(op), nranks_(nranks) {
    if (total > kPeriod) {
      cache_.resize(kPeriod * static_cast<size_t>(in.type().size));
      for (size_t j = 0; j < kPeriod; ++j) storeBits(cache_.data(), j, in.type().size, compute(j));
    }
  }

  // Expected bits of global element g.
  uint64_t at(size_t g) const {
    return cache_.empty() ? compute(g) : loadBits(cache_.data(), g % kPeriod, in_.type().size);
  }

  // Expected bytes of global elements [first, first + count).
  void fill(unsigned char* out, size_t first, size_t count) const {
    if (!cache_.empty()) {
      periodicCopy(out, cache_.data(), first, count, in_.type().size);
      return;
    }
    for (size_t i = 0; i < count; ++i) storeBits(out, i, in_.type().size, compute(first + i));
  }

 private:
  uint64_t compute(size_t g) const {
    const TypeInfo& t = in_.type();
    if (t.kind == Kind::Float) return encodeFloat(t, floatReduce(g));
    uint64_t acc = in_.intValue(0, g);
    for (int r = 1; r < nranks_; ++r) {
      uint64_t v = in_.intValue(r, g);
      switch (op_) {
        case chorus::RedOp::Sum:
        case chorus::RedOp::Avg:
          acc += v;
          break;
        case chorus::RedOp::Prod:
          acc *= v;
          break;
        case chorus::RedOp::Min:
          acc = less(t, v, acc) ? v : acc;
          break;
        case chorus::RedOp::Max:
          acc = less(t, acc, v) ? v : acc;
          break;
      }
    }
    if (op_ == chorus::RedOp::Avg) {
      if (t.kind == Kind::Signed) {
        acc = static_cast<uint64_t>(static_cast<int64_t>(acc) / nranks_);  // toward zero
      } else {
        acc /= static_cast<uint64_t>(nranks_);
      }
    }
    return encodeInt(t, acc);
  }

  static bool less(const TypeInfo& t, uint64_t a, uint64_t b) {
    return t.kind == Kind::Signed ? static_cast<int64_t>(a) < static_cast<int64_t>(b) : a < b;
  }

  double floatReduce(size_t g) const {
    double acc = in_.floatValueAt(0, g);
    for (int r = 1; r < nranks_; ++r) {
      double v = in_.floatValueAt(r, g);
      switch (op_) {
        case chorus::RedOp::Sum:
        case chorus::RedOp::Avg:
          acc += v;
          break;
        case chorus::RedOp::Prod:
          acc *= v;
          break;
        case chorus::RedOp::Min:
          acc = v < acc ? v : acc;
          break;
        case chorus::RedOp::Max:
          acc = v > acc ? v : acc;
          break;
      }
    }
    return op_ == chorus::RedOp::Avg ? acc / nranks_ : acc;
  }

  const Inputs& in_;
  chorus::RedOp op_;
  int nranks_;
  std::vector<unsigned char> cache_;  // one period of encoded results
};

enum class Match { Exact, WithinUlp, Wrong };

// Bit-exact, except float avg which may be 1 ULP off (see the header comment).
inline Match compareElement(const TypeInfo& t, chorus::RedOp op, bool reduction, uint64_t want,
                            uint64_t got) {
  if (want == got) return Match::Exact;
  if (!reduction || t.kind != Kind::Float || op != chorus::RedOp::Avg) return Match::Wrong;
  const int signShift = t.mantBits + t.expBits;
  auto ordered = [&](uint64_t b) {
    auto mag = static_cast<int64_t>(b & ((1ull << signShift) - 1));
    return ((b >> signShift) & 1) ? -mag : mag;
  };
  double gv = decodeFloat(t, got);
  if (gv != gv) return Match::Wrong;  // NaN
  int64_t d = ordered(want) - ordered(got);
  return (d == 1 || d == -1) ? Match::WithinUlp : Match::Wrong;
}

}  // namespace chorus_test
