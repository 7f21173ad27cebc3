/* nccl.h for Chorus: the NCCL 2.26 API, served by libnccl.so.2 over Chorus.
 *
 * Names, enum values, struct layouts and macros are NCCL's (the CUDA toolkit's own nccl.h
 * is the reference; tests/nccl/abi_table.cpp compares the two). Not declared: the 2.27+
 * symmetric windows and shrink, the 2.28 device API and revoke. Declared as extensions:
 * NCCL 2.28's ncclAlltoAll, ncclGather and ncclScatter.
 *
 * Chorus extension: every call also takes host buffers, with a null stream (NCCL itself
 * needs device memory). It then runs on host memory and returns when done (blocking
 * communicators) or returns ncclInProgress until ncclCommGetAsyncError says it is done
 * (config.blocking = 0). Device buffers need GPU support in the library; without it the
 * call fails with ncclInvalidUsage and ncclGetLastError says so.
 *
 * CUDA headers are optional: when <cuda_runtime.h> is on the include path it is included,
 * as NCCL's header does; otherwise cudaStream_t is declared here as the same type CUDA
 * declares (struct CUstream_st*), so including the CUDA headers later still agrees. */
#ifndef NCCL_H_
#define NCCL_H_

#if defined(__has_include) && !defined(NCCL_NO_CUDA_HEADERS)
#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#if CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if defined(__cplusplus) && CUDART_VERSION >= 11080
#include <cuda_fp8.h>
#endif
#endif
#endif

#ifndef __DRIVER_TYPES_H__ /* CUDA's driver_types.h declares it otherwise */
typedef struct CUstream_st* cudaStream_t;
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 26
#define NCCL_PATCH 0
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 22600
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

/* This nccl.h and libnccl.so.2 are Chorus's (host buffers accepted, see above). */
#define NCCL_CHORUS 1

#ifdef __cplusplus
extern "C" {
#endif

#include <limits.h>
#include <stddef.h>

/* Opaque handle to a communicator. */
typedef struct ncclComm* ncclComm_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6, /* a peer died or misbehaved; also a peer that never arrived */
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* Communicator configuration, versioned by size: this is NCCL's newest layout (every
 * older one is a prefix of it), and the library reads only the fields that `size`
 * covers, so a program built against an older nccl.h works too. Chorus uses `blocking`;
 * the others are accepted and change nothing on host memory (NCCL_NET picks the network
 * transport, as CHORUS_NET). */
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

/* Assign it to every ncclConfig_t when it is created; an uninitialised one is refused. */
#define NCCL_CONFIG_INITIALIZER {                                \
  sizeof(ncclConfig_t),                             /* size */    \
  0xcafebeef,                                       /* magic */   \
  NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */ \
  NCCL_CONFIG_UNDEF_INT,  /* blocking */                          \
  NCCL_CONFIG_UNDEF_INT,  /* cgaClusterSize */                    \
  NCCL_CONFIG_UNDEF_INT,  /* minCTAs */                           \
  NCCL_CONFIG_UNDEF_INT,  /* maxCTAs */                           \
  NCCL_CONFIG_UNDEF_PTR,  /* netName */                           \
  NCCL_CONFIG_UNDEF_INT,  /* splitShare */                        \
  NCCL_CONFIG_UNDEF_INT,  /* trafficClass */                      \
  NCCL_CONFIG_UNDEF_PTR,  /* commName */                          \
  NCCL_CONFIG_UNDEF_INT,  /* collnetEnable */                     \
  NCCL_CONFIG_UNDEF_INT,  /* CTAPolicy */                         \
  NCCL_CONFIG_UNDEF_INT,  /* shrinkShare */                       \
  NCCL_CONFIG_UNDEF_INT,  /* nvlsCTAs */                          \
  NCCL_CONFIG_UNDEF_INT,  /* nChannelsPerNetPeer */               \
  NCCL_CONFIG_UNDEF_INT,  /* nvlinkCentricSched */                \
}

typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER {                                \
  sizeof(ncclSimInfo_t),                            /* size */    \
  0x74685283,                                       /* magic */   \
  NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */ \
  NCCL_UNDEF_FLOAT                                  /* estimate */ \
}

/* Memory for NCCL buffers. Without GPU support: page-aligned host memory. */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t pncclMemFree(void* ptr);

/* NCCL_VERSION_CODE of the library. */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/* An id for ncclCommInitRank: call it once and hand the id to every rank. With
 * NCCL_COMM_ID=host:port set, every process gets the same id and rank 0 hosts the
 * rendezvous at that address. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
/* ndev communicators of one clique in this process (devlist ignored for host memory). */
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
/* Flushes every call issued on comm (non-blocking: ncclInProgress until it has). */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);
/* Fails what is in flight and frees comm; safe while another thread waits in a call. */
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config);
/* Several ids only speed up NCCL's init; Chorus rendezvouses through the first. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config);

const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);
/* What the last failed call of this thread (or on comm) said: what, where and why. */
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

/* ncclSuccess when idle, ncclInProgress while calls are in flight (it drives them), or
 * the error that failed the communicator. */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);

/* Reduction operators: the built-in ones, then the ones ncclRedOpCreatePreMulSum makes. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5, /* also the least value of a created operator */
  /* The largest valid value, keeping sizeof(ncclRedOp_t) as before. */
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

typedef enum {
  ncclScalarDevice = 0,        /* read while the collective runs (needs GPU support) */
  ncclScalarHostImmediate = 1  /* read before ncclRedOpCreatePreMulSum returns */
} ncclScalarResidence_t;

/* An operator that multiplies each rank's input by *scalar (of `datatype`) and sums. Use
 * it with comm and datatype only; destroy it with ncclRedOpDestroy. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* Collectives, with NCCL's in-place rules: sendbuff == recvbuff for Reduce, Broadcast and
 * AllReduce; recvbuff == sendbuff + rank * recvcount for ReduceScatter; sendbuff ==
 * recvbuff + rank * sendcount for AllGather. recvbuff may be NULL off the root of Reduce. */
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream);
/* (deprecated) in-place broadcast */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm,
                            cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* Extensions (NCCL 2.28's): block j of sendbuff goes to rank j, block i of recvbuff comes
 * from rank i. Gather in place: sendbuff == recvbuff + root * count; Scatter in place:
 * recvbuff == sendbuff + root * count. */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* Point to point: the peer calls the matching Recv (Send) with the same count and type.
 * Several of them progress together only inside ncclGroupStart/ncclGroupEnd. */
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);

/* Groups: calls between ncclGroupStart and ncclGroupEnd (nested ones count) are queued and
 * launched together at the outermost ncclGroupEnd, which returns when they are done
 * (blocking communicators) or launched (non-blocking: ncclInProgress). Communicator
 * creation may be grouped too, but not with collectives in the same group. */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);
/* Ends the group without running it; Chorus has no estimate to give (ncclInvalidUsage). */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
