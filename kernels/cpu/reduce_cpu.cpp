// reduce()/divide() entry points: argument checks, then one indirect call into the table of
// the best instruction set this CPU supports (chosen once).
#include "kernels/cpu/kernel_table.hpp"
#include "kernels/reduce.hpp"
#include "settings/settings.hpp"

#include <chorus/chorus.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace chorus::kernels {
namespace {

bool cpuHas(const char* isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  // F16C straight from CPUID (clang's __builtin_cpu_supports does not know it); AVX2 being
  // usable already implies the OS saves the AVX registers that F16C needs.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
  const bool avx2 = __builtin_cpu_supports("avx2") && f16c;
  if (std::strcmp(isa, "avx2") == 0) return avx2;
  if (std::strcmp(isa, "avx512") == 0) {
    return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
#endif
  return std::strcmp(isa, "generic") == 0;
}

[[noreturn]] void invalid(const char* fn, const std::string& what) {
  throw Error(Result::InvalidArgument, std::string("chorus::kernels::") + fn + ": " + what);
}

int typeIndex(const char* fn, DataType type) {
  const int t = static_cast<int>(type);
  if (t < 0 || t >= kNumTypes) invalid(fn, "invalid data type " + std::to_string(t));
  return t;
}

bool isUnsigned(DataType type) {
  return type == DataType::Uint8 || type == DataType::Uint32 || type == DataType::Uint64;
}

}  // namespace

const KernelTable* kernelTable(const char* isa) {
  if (!cpuHas(isa)) return nullptr;
  if (std::strcmp(isa, "avx512") == 0) return &kAvx512Kernels;
  if (std::strcmp(isa, "avx2") == 0) return &kAvx2Kernels;
  return &kGenericKernels;
}

// The best table this CPU supports; CHORUS_KERNEL_ISA=avx2|generic caps the choice (to
// compare, or to rule a kernel out), and an unknown or unsupported value is ignored.
const KernelTable& activeKernels() {
  static const KernelTable* const active = [] {
    const char* cap = settings::cstr("CHORUS_KERNEL_ISA");
    bool allowed = !cap || !kernelTable(cap);
    for (const char* isa : {"avx512", "avx2"}) {
      allowed = allowed || std::strcmp(cap, isa) == 0;
      if (const KernelTable* t = kernelTable(isa); t && allowed) return t;
    }
    return &kGenericKernels;
  }();
  return *active;
}

void reduce(DataType type, RedOp op, void* dst, const void* a, const void* b, size_t count) {
  const int t = typeIndex("reduce", type);
  int o = static_cast<int>(op);
  if (o == static_cast<int>(RedOp::Avg)) o = static_cast<int>(RedOp::Sum);
  if (o < 0 || o >= kNumReduceOps) invalid("reduce", "invalid op " + std::to_string(o));
  if (count == 0) return;
  if (!dst || !a || !b) invalid("reduce", "null buffer");
  activeKernels().reduce[t][o](dst, a, b, count);
}

void reduceMany(DataType type, RedOp op, void* dst, std::span<const void* const> srcs,
                size_t count) {
  const int t = typeIndex("reduceMany", type);
  int o = static_cast<int>(op);
  if (o == static_cast<int>(RedOp::Avg)) o = static_cast<int>(RedOp::Sum);
  if (o < 0 || o >= kNumReduceOps) invalid("reduceMany", "invalid op " + std::to_string(o));
  if (srcs.empty() || srcs.size() > size_t{1} << 20)
    invalid("reduceMany", "invalid source count " + std::to_string(srcs.size()));
  if (count == 0) return;
  if (!dst) invalid("reduceMany", "null buffer");
  for (size_t j = 0; j < srcs.size(); ++j) {
    if (!srcs[j]) invalid("reduceMany", "null buffer");
    if (j >= (srcs.size() == 2 ? 2u : 1u) && srcs[j] == dst)
      invalid("reduceMany", "source " + std::to_string(j) + " is the destination");
  }
  activeKernels().reduceMany[t][o](dst, srcs.data(), static_cast<int>(srcs.size()), count);
}

void divide(DataType type, void* dst, const void* src, size_t count, int divisor) {
  const int t = typeIndex("divide", type);
  if (divisor == 0 || (divisor < 0 && isUnsigned(type))) {
    invalid("divide", "invalid divisor " + std::to_string(divisor));
  }
  if (count == 0) return;
  if (!dst || !src) invalid("divide", "null buffer");
  activeKernels().divide[t](dst, src, count, divisor);
}

const char* isaName() { return activeKernels().name; }

}  // namespace chorus::kernels
