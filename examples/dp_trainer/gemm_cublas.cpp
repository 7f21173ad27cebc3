// The cuBLAS path of gemm.hpp (built with -DCHORUS_TRAINER_CUBLAS=ON). Row-major C = op(A)
// op(B) is column-major C^T = op(B)^T op(A)^T, so the operands are passed swapped. Device
// buffers grow as needed and are kept; every call copies A, B (and C when beta != 0) in and
// C out, synchronously.
#include "gemm.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace trainer::gemm::cublas {
namespace {

cublasHandle_t handle = nullptr;
struct DeviceBuffer {
  float* p = nullptr;
  size_t floats = 0;
  float* hold(size_t n) {
    if (n > floats) {
      if (p) cudaFree(p);
      if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess)
        throw std::runtime_error("cudaMalloc of " + std::to_string(n) + " floats failed");
      floats = n;
    }
    return p;
  }
} dA, dB, dC;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Floats a row-major rows x cols operand with leading dimension ld spans.
size_t span(int rows, int cols, int ld) {
  return rows == 0 ? 0 : static_cast<size_t>(rows - 1) * ld + cols;
}

}  // namespace

void init() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    throw std::runtime_error("--gpu: no CUDA device");
  if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("--gpu: cublasCreate failed");
}

void sgemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
  const size_t sa = transA ? span(k, m, lda) : span(m, k, lda);
  const size_t sb = transB ? span(n, k, ldb) : span(k, n, ldb);
  const size_t sc = span(m, n, ldc);
  float* da = dA.hold(sa);
  float* db = dB.hold(sb);
  float* dc = dC.hold(sc);
  check(cudaMemcpy(da, a, sa * sizeof(float), cudaMemcpyHostToDevice), "copy A");
  check(cudaMemcpy(db, b, sb * sizeof(float), cudaMemcpyHostToDevice), "copy B");
  if (beta != 0.0f) check(cudaMemcpy(dc, c, sc * sizeof(float), cudaMemcpyHostToDevice), "copy C");
  if (cublasSgemm(handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N, transA ? CUBLAS_OP_T : CUBLAS_OP_N, n,
                  m, k, &alpha, db, ldb, da, lda, &beta, dc, ldc) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasSgemm failed");
  check(cudaMemcpy(c, dc, sc * sizeof(float), cudaMemcpyDeviceToHost), "copy C back");
}

}  // namespace trainer::gemm::cublas
