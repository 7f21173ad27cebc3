// CPU reduction kernels: one entry point per job, dispatched on type and op.
#pragma once

#include <chorus/chorus.hpp>

#include <cstddef>
#include <span>

namespace chorus::kernels {

// dst[i] = a[i] OP b[i] for i < count. dst may alias a or b exactly (not partially).
// Avg reduces as Sum (see divide). fp16/bf16/fp8 are computed in float and rounded to
// nearest-even once per element. Integer overflow wraps (two's complement).
// Min/Max on floats: NaN if either input is NaN.
void reduce(DataType type, RedOp op, void* dst, const void* a, const void* b, size_t count);

// dst[i] = srcs[0][i] OP srcs[1][i] OP ... OP srcs[k-1][i] in one pass (each source read
// once, dst written once), folded left to right with the same op and rounding as k-1
// reduce() calls would (bit-identical to them); k == 1 copies. dst may alias srcs[0]
// exactly (or srcs[1] when k == 2); no other source may be dst. Avg reduces as Sum.
void reduceMany(DataType type, RedOp op, void* dst, std::span<const void* const> srcs,
                size_t count);

// dst[i] = src[i] / divisor (the last step of Avg). Integers truncate toward zero; floats
// divide in their compute type (fp16/bf16/fp8 in float) and round to nearest-even.
void divide(DataType type, void* dst, const void* src, size_t count, int divisor);

// Name of the instruction set the kernels were dispatched to ("avx512", "avx2", "generic").
const char* isaName();

}  // namespace chorus::kernels
