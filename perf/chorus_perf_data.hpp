// Input data and result checking. Rank r's input element i under seed s is a
// deterministic function of (type, op, nranks, r, i, s), chosen so that every reduction
// is exact whatever the order of operations:
// - integers: any value for sum/prod/min/max (sum and prod wrap modulo 2^bits, which is
//   order-independent; the reference wraps the same way); avg uses values small enough
//   that the sum of nranks of them fits, then divides truncating toward zero;
// - floats: integers bounded so that any partial sum of nranks of them is exactly
//   representable (|v| <= 2^mantissa_bits / nranks); prod uses {-1, 1, 2}, so products
//   are exact or overflow to inf deterministically; min/max use any integer the type holds.
// Every rank can so compute every other rank's input and check its own output alone.
#pragma once

#include "chorus_perf_types.hpp"

#include <cstddef>
#include <cstdint>

namespace perf {

struct DataSpec {
  Type type;
  Op op;  // for collectives without an op, pass Op::Max (widest value range)
  int nranks;
  uint64_t seed;
};

// Writes rank `rank`'s input elements [firstIndex, firstIndex + count) to buf.
void fillInput(const DataSpec& spec, int rank, void* buf, size_t count, size_t firstIndex = 0);

// Fills bytes with a pattern no correct result is likely to equal.
void fillPoison(void* buf, size_t bytes);

// Counts elements of `got` that differ from the reduction (spec.op) over all ranks of the
// inputs at indices [firstIndex, firstIndex + count). Avg on floats allows 1 ULP of the
// element's type (kAvgUlps in the .cpp says why); everything else must match bit for bit
// (+0 and -0 differ), a NaN result (E4M3 overflow) only another NaN.
size_t countWrongReduced(const DataSpec& spec, const void* got, size_t count, size_t firstIndex);

// Counts elements of `got` that differ from rank srcRank's inputs [firstIndex, ...).
size_t countWrongCopied(const DataSpec& spec, const void* got, size_t count, int srcRank,
                        size_t firstIndex);

}  // namespace perf
