// Row-major sgemm for the models: C = alpha op(A) op(B) + beta C, with OpenBLAS, or with
// cuBLAS when chorus-train was built with -DCHORUS_TRAINER_CUBLAS=ON and --gpu found a GPU
// (each call then copies its operands to the device and the result back: a demonstration
// of the path, not a fast one).
#pragma once

namespace trainer::gemm {

// Switches to cuBLAS on GPU localRank mod the GPUs (localRanks: ranks of the job on this
// host, for the share of a GPU each rank gets); throws if it was not built in or no GPU is
// usable.
void useGpu(int localRank = 0, int localRanks = 1);
const char* backend();  // "openblas" or "cublas"
// This process's share of its GPU's peak sgemm rate (operands on the device; the rate
// over the host's ranks that use that GPU), 0 on OpenBLAS.
double gpuPeakRate();
void sgemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);
// Each call ends with core_turns::offer() (off unless enabled: --gemm-yield).

#ifdef CHORUS_TRAINER_CUBLAS
namespace cublas {  // gemm_cublas.cpp
// Picks GPU localRank mod the GPUs; returns how many of the host's ranks use it.
int init(int localRank, int localRanks);  // throws without a GPU
void sgemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);
double peakRate();  // FLOP/s of device-resident square sgemm (no host copies)
}  // namespace cublas
#endif

}  // namespace trainer::gemm
