// reduce()/divide() entry points: argument checks, then one indirect call into the table of
// the best instruction set this CPU supports (chosen once).
#include "kernels/cpu/kernel_table.hpp"
#include "kernels/reduce.hpp"

#include <chorus/chorus.hpp>

#include <cstring>
#include <string>

namespace chorus::kernels {
namespace {

bool cpuHas(const char* isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (std::strcmp(isa, "avx2") == 0) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  }
  if (std::strcmp(isa, "avx512") == 0) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
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

const KernelTable& activeKernels() {
  static const KernelTable* const active = [] {
    for (const char* isa : {"avx512", "avx2"}) {
      if (const KernelTable* t = kernelTable(isa)) return t;
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
