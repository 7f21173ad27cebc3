// AVX2 + F16C kernels (Intel Haswell, AMD Zen and later).
#include "kernels/cpu/float_bits.hpp"
#include "kernels/cpu/kernel_table.hpp"

#include <chorus/chorus.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

// Everything from here to the pop, and only that, is compiled for this instruction set.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,f16c")
#endif
#define CHORUS_KERNEL_ISA avx2
#define CHORUS_KERNEL_F16C 1
#include "kernels/cpu/reduce_loops.inc"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace chorus::kernels {
constexpr KernelTable kAvx2Kernels = avx2::makeTable("avx2");
}  // namespace chorus::kernels

#else
namespace chorus::kernels {
constexpr KernelTable kAvx2Kernels = {};  // never selected: the CPU check fails off x86-64
}  // namespace chorus::kernels
#endif
