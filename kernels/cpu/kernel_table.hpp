// Per-ISA tables of reduction kernels. reduce_generic.cpp, reduce_avx2.cpp and
// reduce_avx512.cpp each compile reduce_loops.inc for their instruction set and define
// one table; reduce_cpu.cpp picks the best one the CPU supports, once.
#pragma once

#include <cstddef>

namespace chorus::kernels {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
// dst = srcs[0] OP ... OP srcs[k-1] (reduce_loops.inc's reduceManyLoop).
using ReduceManyFn = void (*)(void* dst, const void* const* srcs, int k, size_t count);
using DivideFn = void (*)(void* dst, const void* src, size_t count, int divisor);

inline constexpr int kNumTypes = 12;     // DataType values 0..11
inline constexpr int kNumReduceOps = 4;  // Sum, Prod, Max, Min (Avg runs as Sum)
// reduceMany's block: dst's block and one source's stay in L1 (32 KiB and more) together.
inline constexpr size_t kReduceManyBlockBytes = 8 << 10;

struct KernelTable {
  const char* name;  // "generic", "avx2", "avx512"
  ReduceFn reduce[kNumTypes][kNumReduceOps];
  ReduceManyFn reduceMany[kNumTypes][kNumReduceOps];
  DivideFn divide[kNumTypes];
};

// Constant-initialised: reading a table runs no code of its ISA.
extern const KernelTable kGenericKernels;
extern const KernelTable kAvx2Kernels;
extern const KernelTable kAvx512Kernels;

// The table for `isa` ("generic", "avx2", "avx512") if this CPU can run it, else nullptr.
// For tests and benchmarks that compare instruction sets.
const KernelTable* kernelTable(const char* isa);
// The table reduce() and divide() use: the best this CPU supports.
const KernelTable& activeKernels();

}  // namespace chorus::kernels
