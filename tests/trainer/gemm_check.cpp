// chorus-train's sgemm (gemm.hpp) against a double-precision reference: every transpose
// combination, padded leading dimensions, alpha and beta, sizes from 1 to a few hundred.
// With --gpu the cuBLAS path is checked (exit 77, skipped, where no GPU is usable or the
// build has no cuBLAS); without, OpenBLAS. Fixed seed.
#include "examples/dp_trainer/gemm.hpp"
#include "examples/dp_trainer/rng.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

using namespace trainer;

namespace {

struct Shape {
  int m, n, k;
};

// One product: row-major A (m x k, or k x m transposed) with leading dimension lda, etc.
int checkOne(SplitMix64& rng, Shape s, bool transA, bool transB, float alpha, float beta, int pad) {
  const int aRows = transA ? s.k : s.m, aCols = transA ? s.m : s.k;
  const int bRows = transB ? s.n : s.k, bCols = transB ? s.k : s.n;
  const int lda = aCols + pad, ldb = bCols + pad, ldc = s.n + pad;
  std::vector<float> a(static_cast<size_t>(aRows) * lda), b(static_cast<size_t>(bRows) * ldb),
      c(static_cast<size_t>(s.m) * ldc);
  for (auto* v : {&a, &b, &c})
    for (float& x : *v) x = static_cast<float>(2 * rng.uniform() - 1);
  const std::vector<float> cBefore = c;
  gemm::sgemm(transA, transB, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(),
              ldc);
  int bad = 0;
  for (int i = 0; i < s.m; ++i) {
    for (int j = 0; j < ldc; ++j) {
      const size_t at = static_cast<size_t>(i) * ldc + j;
      if (j >= s.n) {  // padding: untouched
        if (std::memcmp(&c[at], &cBefore[at], sizeof(float)) != 0) ++bad;
        continue;
      }
      double sum = 0, magnitude = 0;
      for (int p = 0; p < s.k; ++p) {
        const double x =
            transA ? a[static_cast<size_t>(p) * lda + i] : a[static_cast<size_t>(i) * lda + p];
        const double y =
            transB ? b[static_cast<size_t>(j) * ldb + p] : b[static_cast<size_t>(p) * ldb + j];
        sum += x * y, magnitude += std::abs(x * y);
      }
      const double want = alpha * sum + beta * cBefore[at];
      // float accumulation over k terms, in any order: a few k * eps of the magnitude
      const double tolerance = 4.0 * (s.k + 2) * FLT_EPSILON *
                                   (std::abs(alpha) * magnitude + std::abs(beta * cBefore[at])) +
                               1e-30;
      if (!(std::abs(c[at] - want) <= tolerance)) {
        if (bad < 3)
          std::printf(
              "  m=%d n=%d k=%d tA=%d tB=%d alpha=%g beta=%g pad=%d: C[%d][%d] = %.9g, want %.9g\n",
              s.m, s.n, s.k, transA, transB, alpha, beta, pad, i, j, c[at], want);
        ++bad;
      }
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  const bool gpu = argc > 1 && std::strcmp(argv[1], "--gpu") == 0;
  if (gpu) try {
      gemm::useGpu();
    } catch (const std::exception& e) {
      std::printf("gemm_check: skipped: %s\n", e.what());
      return 77;
    }
  SplitMix64 rng{20261204};
  const Shape shapes[] = {{1, 1, 1},    {1, 7, 3},    {5, 1, 9},      {3, 4, 1},
                          {17, 33, 65}, {64, 64, 64}, {130, 70, 257}, {256, 300, 200}};
  int bad = 0, products = 0;
  for (Shape s : shapes)
    for (int t = 0; t < 4; ++t)
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.5f, 1.0f}, {-2.0f, 0.25f}})
        for (int pad : {0, 3}) {
          bad += checkOne(rng, s, t & 1, t & 2, alpha, beta, pad);
          ++products;
        }
  std::printf("gemm_check (%s): %d products, %d wrong elements\n", gemm::backend(), products, bad);
  return bad == 0 ? 0 : 1;
}
