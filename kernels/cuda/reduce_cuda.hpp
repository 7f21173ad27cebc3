// Reduction on the GPU with the CPU kernels' element codecs and operators
// (kernels/element_ops.inc): for every type and op the same result as kernels::reduce, bit
// for bit, except that a NaN result may carry another payload. Built where nvcc is found
// (CHORUS_WITH_CUDA), as its own library: libchorus itself does not need the CUDA runtime.
// Not yet called by the engine (the GPU executor will).
#pragma once

#include <cuda_runtime_api.h>
#include <chorus/chorus.hpp>

#include <cstddef>

namespace chorus::kernels::cuda {

// dst[i] = a[i] OP b[i] for i < count, enqueued on `stream`; device (or mapped) pointers;
// dst may alias a or b exactly. Avg reduces as Sum (the division is separate, as on the
// CPU). Returns the launch's error (cudaErrorInvalidValue for an unknown type or op).
cudaError_t reduce(DataType type, RedOp op, void* dst, const void* a, const void* b, size_t count,
                   cudaStream_t stream);

}  // namespace chorus::kernels::cuda
