// The CUDA reduction kernel against the CPU kernels (kernels::reduce) for every type and
// op: random raw bit patterns (so NaN, infinities, zeros of both signs and subnormals of
// every float format occur), an odd count, out of place, in place and unaligned. Results
// must be bit-identical, except that where both are NaN the payloads may differ (the GPU's
// arithmetic returns its canonical NaN). Exit 77 (skipped) where no GPU is usable.
// Also prints the kernel's bandwidth for float sum on 256 MiB operands. Fixed seed.
#include "kernels/cuda/reduce_cuda.hpp"
#include "kernels/reduce.hpp"
#include "tests/gpu/bit_compare.hpp"

#include <cuda_runtime.h>
#include <chorus/chorus.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

using chorus::DataType;
using chorus::RedOp;

namespace {

bool check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::printf("reduce_cuda_test: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("reduce_cuda_test: skipped: no CUDA device\n");
    return 77;
  }
  const RedOp ops[] = {RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg};
  const char* opNames[] = {"sum", "prod", "max", "min", "avg"};
  constexpr size_t kCount = (1 << 20) + 3;
  std::mt19937_64 rng(20261204);
  void *da = nullptr, *db = nullptr, *dd = nullptr;
  if (!check(cudaMalloc(&da, kCount * 8), "cudaMalloc") ||
      !check(cudaMalloc(&db, kCount * 8), "cudaMalloc") ||
      !check(cudaMalloc(&dd, kCount * 8), "cudaMalloc"))
    return 1;
  int failures = 0, cases = 0;
  for (const chorus_test::TypeInfo& type : chorus_test::kTypes) {
    const DataType t = type.type;
    const size_t bytes = kCount * type.size;
    std::vector<uint8_t> a(bytes), b(bytes), want(bytes), got(bytes);
    for (auto* v : {&a, &b})
      for (auto& x : *v) x = uint8_t(rng());
    // Some equal pairs and small values too, so that Max/Min ties and exact sums occur.
    for (size_t i = 0; i < bytes; i += 97) b[i] = a[i];
    for (int o = 0; o < 5; ++o) {
      chorus::kernels::reduce(t, ops[o], want.data(), a.data(), b.data(), kCount);
      // Out of place, in place, and out of place one element past 16-byte alignment (the
      // kernel's element-by-element path instead of its 16-byte packs).
      for (int placement = 0; placement < 3; ++placement) {
        const bool inPlace = placement == 1;
        const size_t shift = placement == 2 ? 1 : 0, w = type.size;
        auto at = [&](void* p) { return static_cast<uint8_t*>(p) + shift * w; };
        ++cases;
        bool ok = check(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice), "copy a") &&
                  check(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice), "copy b") &&
                  check(cudaMemset(dd, 0, bytes), "clear dst") &&
                  check(chorus::kernels::cuda::reduce(t, ops[o], inPlace ? at(da) : at(dd), at(da),
                                                      at(db), kCount - shift, 0),
                        "reduce") &&
                  check(cudaMemcpy(got.data(), inPlace ? da : dd, bytes, cudaMemcpyDeviceToHost),
                        "copy back");
        const chorus_test::BitComparison c =
            ok ? chorus_test::compareBits(type, want.data(), got.data(), shift, kCount)
               : chorus_test::BitComparison{};
        if (!ok || c.wrong) {
          ++failures;
          std::printf("FAIL type %d %s %s: %zu wrong of %zu (first at %zu)\n", int(t), opNames[o],
                      placement == 1   ? "in place"
                      : placement == 2 ? "unaligned"
                                       : "out of place",
                      c.wrong, kCount, c.first);
        } else if (c.nanPayloads && placement == 0) {
          std::printf("  type %d %s: %zu NaN results with another payload\n", int(t), opNames[o],
                      c.nanPayloads);
        }
      }
    }
  }
  std::printf(
      "reduce_cuda_test: %d of %d cases (12 types x 5 ops x 3 placements) bit-identical "
      "to the CPU kernels\n",
      cases - failures, cases);
  // Bandwidth, for information: float sum over 256 MiB operands (3 x 256 MiB moved).
  cudaFree(da), cudaFree(db), cudaFree(dd);
  const size_t n = size_t(64) << 20;
  if (check(cudaMalloc(&da, n * 4), "cudaMalloc") && check(cudaMalloc(&db, n * 4), "cudaMalloc") &&
      check(cudaMalloc(&dd, n * 4), "cudaMalloc")) {
    cudaMemset(da, 0, n * 4), cudaMemset(db, 0, n * 4);
    cudaEvent_t start, stop;
    cudaEventCreate(&start), cudaEventCreate(&stop);
    float best = 1e30f;
    for (int i = 0; i < 6; ++i) {
      cudaEventRecord(start);
      chorus::kernels::cuda::reduce(DataType::Float32, RedOp::Sum, dd, da, db, n, 0);
      cudaEventRecord(stop);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (i > 0 && ms < best) best = ms;
    }
    std::printf("reduce_cuda_test: float sum of 256 MiB: %.3f ms, %.0f GB/s moved (3 x 256 MiB)\n",
                best, 3.0 * n * 4 / (best * 1e-3) / 1e9);
  }
  return failures == 0 ? 0 : 1;
}
