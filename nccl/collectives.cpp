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
  constexpr const char* what = "ncclAllReduce";
  NCCL_CHECK(checkCall(comm, what, datatype));
  Reduction red;
  NCCL_CHECK(resolveOp(comm, what, op, datatype, red));
  CallScope scope(comm);
  const DataType type = toChorus(datatype);
  return enqueue(comm, what, [=](InFlight& f) {
    requireHost(sendbuff, what, "sendbuff");
    requireHost(recvbuff, what, "recvbuff");
    const void* in = reductionInput(f, red, sendbuff, count, type);
    f.works.push_back(f.comm->comm.allReduce(in, recvbuff, count, type, red.op));
  });
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* what = "ncclReduce";
  NCCL_CHECK(checkCall(comm, what, datatype));
  Reduction red;
  NCCL_CHECK(resolveOp(comm, what, op, datatype, red));
  CallScope scope(comm);
  const DataType type = toChorus(datatype);
  return enqueue(comm, what, [=](InFlight& f) {
    requireHost(sendbuff, what, "sendbuff");
    requireHost(recvbuff, what, "recvbuff");
    const void* in = reductionInput(f, red, sendbuff, count, type);
    f.works.push_back(f.comm->comm.reduce(in, recvbuff, count, type, red.op, root));
  });
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* what = "ncclReduceScatter";
  NCCL_CHECK(checkCall(comm, what, datatype));
  Reduction red;
  NCCL_CHECK(resolveOp(comm, what, op, datatype, red));
  CallScope scope(comm);
  const DataType type = toChorus(datatype);
  return enqueue(comm, what, [=](InFlight& f) {
    requireHost(sendbuff, what, "sendbuff");
    requireHost(recvbuff, what, "recvbuff");
    const size_t n = recvcount * static_cast<size_t>(f.comm->comm.size());
    const void* in = reductionInput(f, red, sendbuff, n, type);
    f.works.push_back(f.comm->comm.reduceScatter(in, recvbuff, recvcount, type, red.op));
  });
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* what = "ncclAllGather";
  NCCL_CHECK(checkCall(comm, what, datatype));
  CallScope scope(comm);
  return enqueue(comm, what, [=](InFlight& f) {
    requireHost(sendbuff, what, "sendbuff");
    requireHost(recvbuff, what, "recvbuff");
    f.works.push_back(f.comm->comm.allGather(sendbuff, recvbuff, sendcount, toChorus(datatype)));
  });
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* what = "ncclBroadcast";
  NCCL_CHECK(checkCall(comm, what, datatype));
  CallScope scope(comm);
  return enqueue(comm, what, [=](InFlight& f) {
    requireHost(sendbuff, what, "sendbuff");
    requireHost(recvbuff, what, "recvbuff");
    f.works.push_back(f.comm->comm.broadcast(sendbuff, recvbuff, count, toChorus(datatype), root));
  });
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* what = "ncclAlltoAll";
  NCCL_CHECK(checkCall(comm, what, datatype));
  CallScope scope(comm);
  return enqueue(comm, what, [=](InFlight& f) {
    requireHost(sendbuff, what, "sendbuff");
    requireHost(recvbuff, what, "recvbuff");
    f.works.push_back(f.comm->comm.allToAll(sendbuff, recvbuff, count, toChorus(datatype)));
  });
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* what = "ncclSend";
  NCCL_CHECK(checkCall(comm, what, datatype));
  CallScope scope(comm);
  return enqueue(comm, what, [=](InFlight& f) {
    requireHost(sendbuff, what, "sendbuff");
    f.works.push_back(f.comm->comm.send(sendbuff, count, toChorus(datatype), peer));
  });
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* what = "ncclRecv";
  NCCL_CHECK(checkCall(comm, what, datatype));
  CallScope scope(comm);
  return enqueue(comm, what, [=](InFlight& f) {
    requireHost(recvbuff, what, "recvbuff");
    f.works.push_back(f.comm->comm.recv(recvbuff, count, toChorus(datatype), peer));
  });
}

namespace {

void checkRoot(Communicator& c, int root, const char* what) {
  if (root < 0 || root >= c.size())
    throw Error(Result::InvalidArgument, std::string(what) + ": root " + std::to_string(root) +
                                             " out of range [0, " + std::to_string(c.size()) + ")");
}

}  // namespace

// Gather and scatter: Chorus's own (proved) schedules, mismatches detected as for the rest.
NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* what = "ncclGather";
  NCCL_CHECK(checkCall(comm, what, datatype));
  CallScope scope(comm);
  return enqueue(comm, what, [=](InFlight& f) {
    Communicator& c = f.comm->comm;
    checkRoot(c, root, what);
    requireHost(sendbuff, what, "sendbuff");
    requireHost(recvbuff, what, "recvbuff");
    f.works.push_back(c.gather(sendbuff, recvbuff, count, toChorus(datatype), root));
  });
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* what = "ncclScatter";
  NCCL_CHECK(checkCall(comm, what, datatype));
  CallScope scope(comm);
  return enqueue(comm, what, [=](InFlight& f) {
    Communicator& c = f.comm->comm;
    checkRoot(c, root, what);
    requireHost(sendbuff, what, "sendbuff");
    requireHost(recvbuff, what, "recvbuff");
    f.works.push_back(c.scatter(sendbuff, recvbuff, count, toChorus(datatype), root));
  });
}
