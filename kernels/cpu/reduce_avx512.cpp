// AVX-512 (F, BW, VL, DQ) kernels with 512-bit vectors; narrow floats use the AVX2 + F16C
// code.
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
#pragma clang attribute push( \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,prefer-vector-width=512")
#endif
#define CHORUS_KERNEL_ISA avx512
#define CHORUS_KERNEL_F16C 1
#include "kernels/cpu/reduce_loops.inc"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace chorus::kernels {
constexpr KernelTable kAvx512Kernels = avx512::makeTable("avx512");
}  // namespace chorus::kernels

#else
namespace chorus::kernels {
constexpr KernelTable kAvx512Kernels = {};  // never selected: the CPU check fails off x86-64
}  // namespace chorus::kernels
#endif
