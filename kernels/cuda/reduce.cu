// The CUDA reduction kernel: one grid-stride loop per (type, op) over 16-byte packs, whose
// element work is kernels/element_ops.inc, the file the CPU loops compile too.
#include "kernels/cpu/float_bits.hpp"
#include "kernels/cuda/reduce_cuda.hpp"

#include <cstdint>
#include <type_traits>

namespace chorus::kernels::cuda {
namespace {

#include "kernels/element_ops.inc"

// One element's result.
template <class C, class Op>
__device__ __forceinline__ typename C::Stored element(typename C::Stored x, typename C::Stored y) {
  if constexpr (kIsNarrow<C>) {
    return C::store(Op::apply(C::load(x), C::load(y)));
  } else {
    return Op::apply(x, y);
  }
}

// 16 bytes of elements, moved as one load or store.
template <class S>
struct alignas(16) Pack {
  S v[16 / sizeof(S)];
};

// Grid-stride over 16-byte packs (all three pointers 16-byte aligned), then the elements
// past the last whole pack; `packs` is 0 where the pointers are not aligned alike.
template <class C, class Op>
__global__ void reduceKernel(typename C::Stored* dst, const typename C::Stored* a,
                             const typename C::Stored* b, size_t n, size_t packs) {
  using S = typename C::Stored;
  constexpr size_t kPer = 16 / sizeof(S);
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const size_t first = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (size_t p = first; p < packs; p += stride) {
    const Pack<S> x = reinterpret_cast<const Pack<S>*>(a)[p];
    const Pack<S> y = reinterpret_cast<const Pack<S>*>(b)[p];
    Pack<S> r;
#pragma unroll
    for (size_t j = 0; j < kPer; ++j) r.v[j] = element<C, Op>(x.v[j], y.v[j]);
    reinterpret_cast<Pack<S>*>(dst)[p] = r;
  }
  for (size_t i = packs * kPer + first; i < n; i += stride) dst[i] = element<C, Op>(a[i], b[i]);
}

template <class C, class Op>
cudaError_t launch(void* dst, const void* a, const void* b, size_t n, cudaStream_t stream) {
  using S = typename C::Stored;
  constexpr int kThreads = 256;
  const bool aligned = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(a) |
                         reinterpret_cast<uintptr_t>(b)) &
                        15) == 0;
  const size_t packs = aligned ? n / (16 / sizeof(S)) : 0;
  const size_t work = aligned ? packs + n % (16 / sizeof(S)) : n;
  // Enough blocks to fill the GPU several times over; the loops stride over the rest.
  const size_t blocks = (work + kThreads - 1) / kThreads;
  const unsigned grid = unsigned(blocks < 65536 ? blocks : 65536);
  reduceKernel<C, Op><<<grid, kThreads, 0, stream>>>(static_cast<S*>(dst), static_cast<const S*>(a),
                                                     static_cast<const S*>(b), n, packs);
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
