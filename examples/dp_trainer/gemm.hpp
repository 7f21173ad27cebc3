// Row-major sgemm for the models: C = alpha op(A) op(B) + beta C, with OpenBLAS, or with
// cuBLAS when chorus-train was built with -DCHORUS_TRAINER_CUBLAS=ON and --gpu found a GPU
// (each call then copies its operands to the device and the result back: a demonstration
// of the path, not a fast one).
#pragma once

namespace trainer::gemm {

// Switches to cuBLAS; throws if it was not built in or no GPU is usable.
void useGpu();
const char* backend();  // "openblas" or "cublas"
void sgemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);
// Each call ends with core_turns::offer() (off unless enabled: --gemm-yield).

#ifdef CHORUS_TRAINER_CUBLAS
namespace cublas {  // gemm_cublas.cpp
void init();        // throws without a GPU
void sgemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);
}  // namespace cublas
#endif

}  // namespace trainer::gemm
