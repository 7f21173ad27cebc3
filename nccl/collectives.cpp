// The collectives and point-to-point calls, on Chorus's Communicator; pre-multiplied sums
// (scale a copy of the input, then sum).
#include "kernels/half.hpp"
#include "nccl/nccl_comm.hpp"

#include <cstring>

using namespace chorus;
using namespace chorus::nccl;

namespace chorus::nccl {

bool validType(ncclDataType_t type) { return type >= ncclInt8 && type < ncclNumTypes; }
DataType toChorus(ncclDataType_t type) { return static_cast<DataType>(type); }

namespace {

// The reduction a call asked for: a built-in op, or a pre-multiplied sum resolved when the
// call is made (NCCL lets the op be destroyed as soon as the call returns).
struct Reduction {
  RedOp op = RedOp::Sum;
  std::optional<PreMulOp> preMul;
};

template <typename T, typename U = T>
void scaleAs(const void* in, void* out, size_t n, const std::byte* scalar) {
  T s;
  std::memcpy(&s, scalar, sizeof(T));
  const T* x = static_cast<const T*>(in);
  T* y = static_cast<T*>(out);
  // Integers multiply modulo 2^bits, as NCCL's kernels do (unsigned: no overflow UB).
  for (size_t i = 0; i < n; ++i) y[i] = static_cast<T>(static_cast<U>(x[i]) * static_cast<U>(s));
}

template <typename Bits, float (*widen)(Bits), Bits (*narrow)(float)>
void scaleNarrow(const void* in, void* out, size_t n, const std::byte* scalar) {
  Bits s;
  std::memcpy(&s, scalar, sizeof(Bits));
  const float factor = widen(s);
  const Bits* x = static_cast<const Bits*>(in);
  Bits* y = static_cast<Bits*>(out);
  // The product of two narrow floats is exact in float: one rounding, as a native multiply.
  for (size_t i = 0; i < n; ++i) y[i] = narrow(widen(x[i]) * factor);
}

void scale(const void* in, void* out, size_t n, DataType type, const std::byte* scalar) {
  switch (type) {
    case DataType::Int8:
      return scaleAs<int8_t, uint32_t>(in, out, n, scalar);
    case DataType::Uint8:
      return scaleAs<uint8_t, uint32_t>(in, out, n, scalar);
    case DataType::Int32:
      return scaleAs<int32_t, uint32_t>(in, out, n, scalar);
    case DataType::Uint32:
      return scaleAs<uint32_t>(in, out, n, scalar);
    case DataType::Int64:
      return scaleAs<int64_t, uint64_t>(in, out, n, scalar);
    case DataType::Uint64:
      return scaleAs<uint64_t>(in, out, n, scalar);
    case DataType::Float32:
      return scaleAs<float>(in, out, n, scalar);
    case DataType::Float64:
      return scaleAs<double>(in, out, n, scalar);
    case DataType::Float16:
      return scaleNarrow<uint16_t, kernels::halfToFloat, kernels::floatToHalf>(in, out, n, scalar);
    case DataType::Bfloat16:
      return scaleNarrow<uint16_t, kernels::bf16ToFloat, kernels::floatToBf16>(in, out, n, scalar);
    case DataType::Float8e4m3:
      return scaleNarrow<uint8_t, kernels::fp8e4m3ToFloat, kernels::floatToFp8e4m3>(in, out, n,
                                                                                    scalar);
    case DataType::Float8e5m2:
      return scaleNarrow<uint8_t, kernels::fp8e5m2ToFloat, kernels::floatToFp8e5m2>(in, out, n,
                                                                                    scalar);
  }
}

// The input a reduction reads: `send` itself, or a scaled copy kept in f.scratch.
const void* reductionInput(InFlight& f, const Reduction& red, const void* send, size_t n,
                           DataType type) {
  if (!red.preMul || n == 0) return send;
  std::array<std::byte, 8> scalar = red.preMul->scalar;
  if (red.preMul->pointer) {  // ncclScalarDevice on host memory: read at launch
    requireHost(red.preMul->pointer, "", "the pre-multiplied sum's scalar");
    std::memcpy(scalar.data(), red.preMul->pointer, sizeOf(type));
  }
  auto copy = std::make_unique<std::byte[]>(n * sizeOf(type));
  scale(send, copy.get(), n, type, scalar.data());
  f.scratch.push_back(std::move(copy));
  return f.scratch.back().get();
}

// Argument checks at the call (before a group defers the launch).
ncclResult_t checkCall(ncclComm_t comm, const char* what, ncclDataType_t type) {
  if (!comm) return setError(nullptr, ncclInvalidArgument, std::string(what) + ": comm is null");
  if (!validType(type))
    return setError(comm, ncclInvalidArgument,
                    std::string(what) + ": invalid data type " + std::to_string(int(type)));
  return ncclSuccess;
}

ncclResult_t resolveOp(ncclComm_t comm, const char* what, ncclRedOp_t op, ncclDataType_t type,
                       Reduction& out) {
  if (op >= ncclSum && op < ncclNumOps) {
    out.op = static_cast<RedOp>(op);
    return ncclSuccess;
  }
  const long index = static_cast<long>(op) - ncclNumOps;
  if (index < 0 || index >= static_cast<long>(comm->preMulOps.size()) || !comm->preMulOps[index])
    return setError(comm, ncclInvalidArgument,
                    std::string(what) + ": invalid reduction op " + std::to_string(int(op)) +
                        " (not built in, nor made by ncclRedOpCreatePreMulSum on this comm)");
  if (comm->preMulOps[index]->type != toChorus(type))
    return setError(comm, ncclInvalidArgument,
                    std::string(what) + ": the pre-multiplied sum op " + std::to_string(int(op)) +
                        " was made for " + toString(comm->preMulOps[index]->type) + ", used with " +
                        toString(toChorus(type)));
  out.preMul = comm->preMulOps[index];
  return ncclSuccess;
}

#define NCCL_CHECK(call)                                        \
  do {                                                          \
    if (ncclResult_t r_ = (call); r_ != ncclSuccess) return r_; \
  } while (0)

void checkRoot(Communicator& c, int root, const char* what) {
  if (root < 0 || root >= c.size())
    throw Error(Result::InvalidArgument, std::string(what) + ": root " + std::to_string(root) +
                                             " out of range [0, " + std::to_string(c.size()) + ")");
}

// What every call does around its own launch: the argument checks now (before a group
// defers it), the call scope, and at launch the host-memory check of its buffers (null:
// the call has no such buffer).
template <typename Body>
ncclResult_t submit(ncclComm_t comm, const char* what, ncclDataType_t type, const void* send,
                    const void* recv, Body body) {
  NCCL_CHECK(checkCall(comm, what, type));
  CallScope scope(comm);
  return enqueue(comm, what, [=](InFlight& f) {
    if (send) requireHost(send, what, "sendbuff");
    if (recv) requireHost(recv, what, "recvbuff");
    body(f, f.comm->comm, toChorus(type));
  });
}

// The same for reductions: the op is resolved at the call, and the body gets the input it
// reduces (the send buffer, or its pre-multiplied copy of `elementsRead(comm)` elements).
template <typename Count, typename Body>
ncclResult_t submitReduction(ncclComm_t comm, const char* what, ncclDataType_t type, ncclRedOp_t op,
                             const void* send, const void* recv, Count elementsRead, Body body) {
  NCCL_CHECK(checkCall(comm, what, type));
  Reduction red;
  NCCL_CHECK(resolveOp(comm, what, op, type, red));
  return submit(comm, what, type, send, recv, [=](InFlight& f, Communicator& c, DataType t) {
    const void* in = reductionInput(f, red, send, elementsRead(c), t);
    body(f, c, t, in, red.op);
  });
}

}  // namespace
}  // namespace chorus::nccl

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
         ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  constexpr const char* what = "ncclRedOpCreatePreMulSum";
  NCCL_CHECK(checkCall(comm, what, datatype));
  if (!op || !scalar)
    return setError(comm, ncclInvalidArgument, "ncclRedOpCreatePreMulSum: op or scalar is null");
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
    return setError(
        comm, ncclInvalidArgument,
        "ncclRedOpCreatePreMulSum: invalid residence " + std::to_string(int(residence)));
  PreMulOp made{toChorus(datatype)};
  if (isDevicePointer(scalar))
    return setError(comm, ncclInvalidUsage,
                    "ncclRedOpCreatePreMulSum: the scalar is device memory, and this libnccl "
                    "(Chorus) was built without GPU support: pass a host scalar");
  if (residence == ncclScalarHostImmediate)
    std::memcpy(made.scalar.data(), scalar, sizeOf(made.type));
  else
    made.pointer = scalar;  // "device" residence on host memory: read at each launch
  auto& ops = comm->preMulOps;
  size_t slot = 0;
  while (slot < ops.size() && ops[slot]) ++slot;
  if (slot == ops.size()) {
    if (slot >= static_cast<size_t>(ncclMaxRedOp - ncclNumOps))
      return setError(comm, ncclInvalidUsage, "ncclRedOpCreatePreMulSum: too many live ops");
    ops.emplace_back();
  }
  ops[slot] = made;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(slot));
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  if (!comm) return setError(nullptr, ncclInvalidArgument, "ncclRedOpDestroy: comm is null");
  const long index = static_cast<long>(op) - ncclNumOps;
  if (op < ncclNumOps)
    return setError(comm, ncclInvalidArgument,
                    "ncclRedOpDestroy: op " + std::to_string(int(op)) + " is built in");
  if (index >= static_cast<long>(comm->preMulOps.size()) || !comm->preMulOps[index])
    return setError(
        comm, ncclInvalidArgument,
        "ncclRedOpDestroy: op " + std::to_string(int(op)) + " is not live on this comm");
  comm->preMulOps[index].reset();
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return submitReduction(
      comm, "ncclAllReduce", datatype, op, sendbuff, recvbuff, [=](Communicator&) { return count; },
      [=](InFlight& f, Communicator& c, DataType type, const void* in, RedOp red) {
        f.works.push_back(c.allReduce(in, recvbuff, count, type, red));
      });
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return submitReduction(
      comm, "ncclReduce", datatype, op, sendbuff, recvbuff, [=](Communicator&) { return count; },
      [=](InFlight& f, Communicator& c, DataType type, const void* in, RedOp red) {
        f.works.push_back(c.reduce(in, recvbuff, count, type, red, root));
      });
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return submitReduction(
      comm, "ncclReduceScatter", datatype, op, sendbuff, recvbuff,
      [=](Communicator& c) { return recvcount * static_cast<size_t>(c.size()); },
      [=](InFlight& f, Communicator& c, DataType type, const void* in, RedOp red) {
        f.works.push_back(c.reduceScatter(in, recvbuff, recvcount, type, red));
      });
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, "ncclAllGather", datatype, sendbuff, recvbuff,
                [=](InFlight& f, Communicator& c, DataType type) {
                  f.works.push_back(c.allGather(sendbuff, recvbuff, sendcount, type));
                });
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, "ncclBroadcast", datatype, sendbuff, recvbuff,
                [=](InFlight& f, Communicator& c, DataType type) {
                  f.works.push_back(c.broadcast(sendbuff, recvbuff, count, type, root));
                });
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, "ncclAlltoAll", datatype, sendbuff, recvbuff,
                [=](InFlight& f, Communicator& c, DataType type) {
                  f.works.push_back(c.allToAll(sendbuff, recvbuff, count, type));
                });
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, "ncclSend", datatype, sendbuff, nullptr,
                [=](InFlight& f, Communicator& c, DataType type) {
                  f.works.push_back(c.send(sendbuff, count, type, peer));
                });
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, "ncclRecv", datatype, nullptr, recvbuff,
                [=](InFlight& f, Communicator& c, DataType type) {
                  f.works.push_back(c.recv(recvbuff, count, type, peer));
                });
}

// Gather and scatter: Chorus's own (proved) schedules, mismatches detected as for the rest.
// The root is checked at launch, as the collectives check theirs.
NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, "ncclGather", datatype, sendbuff, recvbuff,
                [=](InFlight& f, Communicator& c, DataType type) {
                  checkRoot(c, root, "ncclGather");
                  f.works.push_back(c.gather(sendbuff, recvbuff, count, type, root));
                });
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, "ncclScatter", datatype, sendbuff, recvbuff,
                [=](InFlight& f, Communicator& c, DataType type) {
                  checkRoot(c, root, "ncclScatter");
                  f.works.push_back(c.scatter(sendbuff, recvbuff, count, type, root));
                });
}
