// Baseline x86-64 (SSE2) kernels, also the fallback on other architectures.
#include "kernels/cpu/float_bits.hpp"
#include "kernels/cpu/kernel_table.hpp"

#include <chorus/chorus.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#define CHORUS_KERNEL_ISA generic
#define CHORUS_KERNEL_F16C 0
#include "kernels/cpu/reduce_loops.inc"

namespace chorus::kernels {
constexpr KernelTable kGenericKernels = generic::makeTable("generic");
}  // namespace chorus::kernels
