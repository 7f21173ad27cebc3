// The CUDA reduction kernel: one grid-stride loop per (type, op), whose element work is
// kernels/element_ops.inc, the file the CPU loops compile too.
#include "kernels/cpu/float_bits.hpp"
#include "kernels/cuda/reduce_cuda.hpp"

#include <cstdint>
#include <type_traits>

namespace chorus::kernels::cuda {
namespace {

#include "kernels/element_ops.inc"

template <class C, class Op>
__global__ void reduceKernel(typename C::Stored* dst, const typename C::Stored* a,
                             const typename C::Stored* b, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (kIsNarrow<C>) {
      dst[i] = C::store(Op::apply(C::load(a[i]), C::load(b[i])));
    } else {
      dst[i] = Op::apply(a[i], b[i]);
    }
  }
}

template <class C, class Op>
cudaError_t launch(void* dst, const void* a, const void* b, size_t n, cudaStream_t stream) {
  using S = typename C::Stored;
  constexpr int kThreads = 256;
  // Enough blocks to fill the GPU several times over; the loop strides over the rest.
  const size_t blocks = (n + kThreads - 1) / kThreads;
  const unsigned grid = unsigned(blocks < 65536 ? blocks : 65536);
  reduceKernel<C, Op><<<grid, kThreads, 0, stream>>>(static_cast<S*>(dst), static_cast<const S*>(a),
                                                     static_cast<const S*>(b), n);
  return cudaGetLastError();
}

template <class C>
cudaError_t byOp(RedOp op, void* dst, const void* a, const void* b, size_t n, cudaStream_t s) {
  switch (op) {
    case RedOp::Sum:
    case RedOp::Avg:
      return launch<C, Sum>(dst, a, b, n, s);
    case RedOp::Prod:
      return launch<C, Prod>(dst, a, b, n, s);
    case RedOp::Max:
      return launch<C, Max>(dst, a, b, n, s);
    case RedOp::Min:
      return launch<C, Min>(dst, a, b, n, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t reduce(DataType type, RedOp op, void* dst, const void* a, const void* b, size_t count,
                   cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (type) {
    case DataType::Int8:
      return byOp<Plain<int8_t>>(op, dst, a, b, count, stream);
    case DataType::Uint8:
      return byOp<Plain<uint8_t>>(op, dst, a, b, count, stream);
    case DataType::Int32:
      return byOp<Plain<int32_t>>(op, dst, a, b, count, stream);
    case DataType::Uint32:
      return byOp<Plain<uint32_t>>(op, dst, a, b, count, stream);
    case DataType::Int64:
      return byOp<Plain<int64_t>>(op, dst, a, b, count, stream);
    case DataType::Uint64:
      return byOp<Plain<uint64_t>>(op, dst, a, b, count, stream);
    case DataType::Float16:
      return byOp<HalfCodec>(op, dst, a, b, count, stream);
    case DataType::Float32:
      return byOp<Plain<float>>(op, dst, a, b, count, stream);
    case DataType::Float64:
      return byOp<Plain<double>>(op, dst, a, b, count, stream);
    case DataType::Bfloat16:
      return byOp<Bf16Codec>(op, dst, a, b, count, stream);
    case DataType::Float8e4m3:
      return byOp<E4m3Codec>(op, dst, a, b, count, stream);
    case DataType::Float8e5m2:
      return byOp<E5m2Codec>(op, dst, a, b, count, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace chorus::kernels::cuda
