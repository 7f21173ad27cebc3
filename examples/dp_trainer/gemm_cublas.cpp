// The cuBLAS path of gemm.hpp (built with -DCHORUS_TRAINER_CUBLAS=ON). Row-major C = op(A)
// op(B) is column-major C^T = op(B)^T op(A)^T, so the operands are passed swapped. Device
// buffers grow as needed and are kept; every call copies A, B (and C when beta != 0) in and
// C out, synchronously, row by row within the leading dimensions (cudaMemcpy2D), so that a
// padded C's padding is left as it was.
#include "gemm.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
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

// rows x cols floats of a row-major operand with leading dimension ld, between host and
// device (the same layout on both sides).
void copyRows(float* to, const float* from, int rows, int cols, int ld, cudaMemcpyKind kind,
              const char* what) {
  if (rows == 0 || cols == 0) return;
  const size_t pitch = static_cast<size_t>(ld) * sizeof(float);
  check(cudaMemcpy2D(to, pitch, from, pitch, cols * sizeof(float), rows, kind), what);
}

}  // namespace

int init(int localRank, int localRanks) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    throw std::runtime_error("--gpu: no CUDA device");
  const int device = localRank % devices;
  check(cudaSetDevice(device), "--gpu: cudaSetDevice");
  if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("--gpu: cublasCreate failed");
  int sharers = 0;
  for (int r = 0; r < std::max(localRanks, localRank + 1); ++r) sharers += r % devices == device;
  return sharers;
}

void sgemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
  const size_t sa = transA ? span(k, m, lda) : span(m, k, lda);
  const size_t sb = transB ? span(n, k, ldb) : span(k, n, ldb);
  const size_t sc = span(m, n, ldc);
  float* da = dA.hold(sa);
  float* db = dB.hold(sb);
  float* dc = dC.hold(sc);
  copyRows(da, a, transA ? k : m, transA ? m : k, lda, cudaMemcpyHostToDevice, "copy A");
  copyRows(db, b, transB ? n : k, transB ? k : n, ldb, cudaMemcpyHostToDevice, "copy B");
  if (beta != 0.0f) copyRows(dc, c, m, n, ldc, cudaMemcpyHostToDevice, "copy C");
  if (cublasSgemm(handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N, transA ? CUBLAS_OP_T : CUBLAS_OP_N, n,
                  m, k, &alpha, db, ldb, da, lda, &beta, dc, ldc) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasSgemm failed");
  copyRows(c, dc, m, n, ldc, cudaMemcpyDeviceToHost, "copy C back");
}

double peakRate() {
  // Square products on operands already on the device, timed with CUDA events: the
  // device's own sgemm rate (no host copies), the best of a few sizes. Ranks sharing the
  // GPU measured at once here each saw about the whole GPU's rate (H200: 51 TFLOP/s for
  // each of 4), hence the division by the sharers in gemm.cpp.
  double best = 0;
  for (int n : {2048, 4096, 8192}) {
    const size_t floats = static_cast<size_t>(n) * n;
    float* d = dA.hold(floats);
    float* e = dB.hold(floats);
    float* f = dC.hold(floats);
    check(cudaMemset(d, 0, floats * sizeof(float)), "memset");
    check(cudaMemset(e, 0, floats * sizeof(float)), "memset");
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), "event");
    check(cudaEventCreate(&stop), "event");
    const float one = 1.0f, zero = 0.0f;
    for (int i = 0; i < 4; ++i) {  // the first warms up
      check(cudaEventRecord(start), "event record");
      if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, d, n, e, n, &zero, f, n) !=
          CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error("cublasSgemm failed");
      check(cudaEventRecord(stop), "event record");
      check(cudaEventSynchronize(stop), "event sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "event time");
      if (i > 0 && ms > 0)
        best = std::max(best, 2.0 * n * n * static_cast<double>(n) / (ms * 1e-3));
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  return best;
}

}  // namespace trainer::gemm::cublas
