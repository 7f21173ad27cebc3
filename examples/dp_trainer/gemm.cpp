#include "gemm.hpp"

#include "core_turns.hpp"

#include <cblas.h>

#include <stdexcept>

namespace trainer::gemm {
namespace {
bool gpu = false;
int gpuSharers = 1;  // the host's ranks on this rank's GPU
}  // namespace

void useGpu([[maybe_unused]] int localRank, [[maybe_unused]] int localRanks) {
#ifdef CHORUS_TRAINER_CUBLAS
  gpuSharers = cublas::init(localRank, localRanks);
  gpu = true;
#else
  throw std::runtime_error(
      "--gpu: chorus-train was built without cuBLAS (-DCHORUS_TRAINER_CUBLAS=ON)");
#endif
}

const char* backend() { return gpu ? "cublas" : "openblas"; }

double gpuPeakRate() {
#ifdef CHORUS_TRAINER_CUBLAS
  if (gpu) return cublas::peakRate() / gpuSharers;
#endif
  return 0;
}

void sgemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
#ifdef CHORUS_TRAINER_CUBLAS
  if (gpu) return cublas::sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  core_turns::offer();
}

}  // namespace trainer::gemm
