/* Chorus: public enums shared by the C and C++ APIs. Values match NCCL's. */
#ifndef CHORUS_TYPES_H
#define CHORUS_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  chorusSuccess = 0,
  chorusUnhandledCudaError = 1,
  chorusSystemError = 2,
  chorusInternalError = 3,
  chorusInvalidArgument = 4,
  chorusInvalidUsage = 5,
  chorusRemoteError = 6, /* a peer died, reset its connection or misbehaved */
  chorusInProgress = 7,
  chorusTimeout = 8, /* a deadline passed (Chorus extension; NCCL has none) */
  chorusNumResults = 9,
  chorusResultIntMin_ = -0x7fffffff - 1, /* every int is a value, as for chorusDataType_t */
  chorusResultIntMax_ = 0x7fffffff
} chorusResult_t;

typedef enum {
  chorusInt8 = 0,
  chorusChar = 0,
  chorusUint8 = 1,
  chorusInt32 = 2,
  chorusInt = 2,
  chorusUint32 = 3,
  chorusInt64 = 4,
  chorusUint64 = 5,
  chorusFloat16 = 6,
  chorusHalf = 6,
  chorusFloat32 = 7,
  chorusFloat = 7,
  chorusFloat64 = 8,
  chorusDouble = 8,
  chorusBfloat16 = 9,
  chorusFloat8e4m3 = 10,
  chorusFloat8e5m2 = 11,
  chorusNumTypes = 12,
  /* Not types: they make every int a value of the enum, so a C caller's stray value reaches
     the library's checks as it is (C++ may not hold out-of-range enum values). */
  chorusDataTypeIntMin_ = -0x7fffffff - 1,
  chorusDataTypeIntMax_ = 0x7fffffff
} chorusDataType_t;

typedef enum {
  chorusSum = 0,
  chorusProd = 1,
  chorusMax = 2,
  chorusMin = 3,
  chorusAvg = 4,
  chorusNumOps = 5,
  chorusRedOpIntMin_ = -0x7fffffff - 1, /* every int is a value, as for chorusDataType_t */
  chorusRedOpIntMax_ = 0x7fffffff
} chorusRedOp_t;

#ifdef __cplusplus
}
#endif
#endif
