// Prints the ABI of whichever nccl.h it is compiled against: enum values and sizes, struct
// sizes, alignments, field offsets and field types, macro values, what the initializers
// fill in, and every function's type (taken from its function pointer type). Built twice,
// against the CUDA toolkit's nccl.h and against Chorus's; abi_compare.sh diffs the two
// tables. Only NCCL 2.26's surface (plus the 2.28 AlltoAll/Gather/Scatter Chorus offers).
#include <nccl.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

namespace {

// The type's name as the compiler spells it (typedef'd anonymous enums keep their name;
// ncclComm_t is ncclComm*, cudaStream_t is CUstream_st*).
template <typename T>
std::string typeName() {
  std::string s = __PRETTY_FUNCTION__;
  const size_t from = s.find("T = ") + 4;
  size_t to = s.find(';', from);  // GCC appends "; std::string = ..."
  if (to == std::string::npos) to = s.rfind(']');
  return s.substr(from, to - from);
}

void row(const char* kind, const char* name, const std::string& value) {
  std::printf("%s %s = %s\n", kind, name, value.c_str());
}
void row(const char* kind, const char* name, long long value) {
  row(kind, name, std::to_string(value));
}

template <typename E>
void enumType(const char* name) {
  row("enum-size", name, static_cast<long long>(sizeof(E)));
  row("enum-signed", name, std::is_signed_v<std::underlying_type_t<E>> ? 1 : 0);
}

}  // namespace

#define ENUM(v) row("enumerator", #v, static_cast<long long>(v))
#define FIELD(S, f)                                                 \
  row("offset", #S "." #f, static_cast<long long>(offsetof(S, f))); \
  row("field-type", #S "." #f, typeName<decltype(S::f)>())
#define STRUCT(S)                                       \
  row("sizeof", #S, static_cast<long long>(sizeof(S))); \
  row("alignof", #S, static_cast<long long>(alignof(S)))
#define FUNCTION(f)                              \
  row("function", #f, typeName<decltype(&f)>()); \
  row("function", "p" #f, typeName<decltype(&p##f)>())

int main() {
  // Macros. The version itself differs (2.26 claimed, 2.28 reference): its formula not.
  row("macro", "NCCL_MAJOR", NCCL_MAJOR);
  row("macro", "NCCL_VERSION(2,26,0)", NCCL_VERSION(2, 26, 0));
  row("macro", "NCCL_VERSION(2,8,4)", NCCL_VERSION(2, 8, 4));
  row("macro", "NCCL_VERSION(3,1,2)", NCCL_VERSION(3, 1, 2));
  row("macro", "NCCL_VERSION_CODE is NCCL_VERSION(MAJOR,MINOR,PATCH)",
      NCCL_VERSION_CODE == NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  row("macro", "NCCL_UNIQUE_ID_BYTES", NCCL_UNIQUE_ID_BYTES);
  row("macro", "NCCL_CONFIG_UNDEF_INT", NCCL_CONFIG_UNDEF_INT);
  row("macro", "NCCL_CONFIG_UNDEF_PTR is null", NCCL_CONFIG_UNDEF_PTR == nullptr);
  row("macro", "NCCL_COMM_NULL is null", NCCL_COMM_NULL == nullptr);
  row("macro", "NCCL_SPLIT_NOCOLOR", NCCL_SPLIT_NOCOLOR);
  char text[64];
  std::snprintf(text, sizeof text, "%a", static_cast<double>(NCCL_UNDEF_FLOAT));
  row("macro", "NCCL_UNDEF_FLOAT", text);
  row("macro-type", "NCCL_UNDEF_FLOAT", typeName<decltype(NCCL_UNDEF_FLOAT)>());

  // Enums.
  enumType<ncclResult_t>("ncclResult_t");
  ENUM(ncclSuccess);
  ENUM(ncclUnhandledCudaError);
  ENUM(ncclSystemError);
  ENUM(ncclInternalError);
  ENUM(ncclInvalidArgument);
  ENUM(ncclInvalidUsage);
  ENUM(ncclRemoteError);
  ENUM(ncclInProgress);
  ENUM(ncclNumResults);
  enumType<ncclRedOp_dummy_t>("ncclRedOp_dummy_t");
  ENUM(ncclNumOps_dummy);
  enumType<ncclRedOp_t>("ncclRedOp_t");
  ENUM(ncclSum);
  ENUM(ncclProd);
  ENUM(ncclMax);
  ENUM(ncclMin);
  ENUM(ncclAvg);
  ENUM(ncclNumOps);
  ENUM(ncclMaxRedOp);
  enumType<ncclDataType_t>("ncclDataType_t");
  ENUM(ncclInt8);
  ENUM(ncclChar);
  ENUM(ncclUint8);
  ENUM(ncclInt32);
  ENUM(ncclInt);
  ENUM(ncclUint32);
  ENUM(ncclInt64);
  ENUM(ncclUint64);
  ENUM(ncclFloat16);
  ENUM(ncclHalf);
  ENUM(ncclFloat32);
  ENUM(ncclFloat);
  ENUM(ncclFloat64);
  ENUM(ncclDouble);
  ENUM(ncclBfloat16);
  ENUM(ncclFloat8e4m3);
  ENUM(ncclFloat8e5m2);
  ENUM(ncclNumTypes);
  enumType<ncclScalarResidence_t>("ncclScalarResidence_t");
  ENUM(ncclScalarDevice);
  ENUM(ncclScalarHostImmediate);

  // Types and structs.
  row("type", "ncclComm_t", typeName<ncclComm_t>());
  row("type", "cudaStream_t", typeName<cudaStream_t>());
  STRUCT(ncclUniqueId);
  FIELD(ncclUniqueId, internal);
  STRUCT(ncclConfig_t);
  FIELD(ncclConfig_t, size);
  FIELD(ncclConfig_t, magic);
  FIELD(ncclConfig_t, version);
  FIELD(ncclConfig_t, blocking);
  FIELD(ncclConfig_t, cgaClusterSize);
  FIELD(ncclConfig_t, minCTAs);
  FIELD(ncclConfig_t, maxCTAs);
  FIELD(ncclConfig_t, netName);
  FIELD(ncclConfig_t, splitShare);
  FIELD(ncclConfig_t, trafficClass);
  FIELD(ncclConfig_t, commName);
  FIELD(ncclConfig_t, collnetEnable);
  FIELD(ncclConfig_t, CTAPolicy);
  FIELD(ncclConfig_t, shrinkShare);
  FIELD(ncclConfig_t, nvlsCTAs);
  FIELD(ncclConfig_t, nChannelsPerNetPeer);
  FIELD(ncclConfig_t, nvlinkCentricSched);
  STRUCT(ncclSimInfo_t);
  FIELD(ncclSimInfo_t, size);
  FIELD(ncclSimInfo_t, magic);
  FIELD(ncclSimInfo_t, version);
  FIELD(ncclSimInfo_t, estimatedTime);

  // What the initializers fill in (the version field: the header's own version).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  unsigned char bytes[sizeof config];
  config.version = 0;  // compared below instead
  std::memcpy(bytes, &config, sizeof config);
  std::string hex;
  for (unsigned char b : bytes) {
    std::snprintf(text, sizeof text, "%02x", b);
    hex += text;
  }
  const ncclConfig_t fresh = NCCL_CONFIG_INITIALIZER;
  row("initializer", "NCCL_CONFIG_INITIALIZER bytes (version zeroed)", hex);
  row("initializer", "NCCL_CONFIG_INITIALIZER version is the header's",
      fresh.version == NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  const ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  row("initializer", "NCCL_SIM_INFO_INITIALIZER size", static_cast<long long>(sim.size));
  row("initializer", "NCCL_SIM_INFO_INITIALIZER magic", sim.magic);
  std::snprintf(text, sizeof text, "%a", static_cast<double>(sim.estimatedTime));
  row("initializer", "NCCL_SIM_INFO_INITIALIZER estimatedTime", text);
  row("initializer", "NCCL_SIM_INFO_INITIALIZER version is the header's",
      sim.version == NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));

  // Functions: the 2.26 surface and the extensions.
  FUNCTION(ncclMemAlloc);
  FUNCTION(ncclMemFree);
  FUNCTION(ncclGetVersion);
  FUNCTION(ncclGetUniqueId);
  FUNCTION(ncclCommInitRankConfig);
  FUNCTION(ncclCommInitRank);
  FUNCTION(ncclCommInitAll);
  FUNCTION(ncclCommFinalize);
  FUNCTION(ncclCommDestroy);
  FUNCTION(ncclCommAbort);
  FUNCTION(ncclCommSplit);
  FUNCTION(ncclCommInitRankScalable);
  FUNCTION(ncclGetErrorString);
  FUNCTION(ncclGetLastError);
  FUNCTION(ncclCommGetAsyncError);
  FUNCTION(ncclCommCount);
  FUNCTION(ncclCommCuDevice);
  FUNCTION(ncclCommUserRank);
  FUNCTION(ncclCommRegister);
  FUNCTION(ncclCommDeregister);
  FUNCTION(ncclRedOpCreatePreMulSum);
  FUNCTION(ncclRedOpDestroy);
  FUNCTION(ncclReduce);
  FUNCTION(ncclBcast);
  FUNCTION(ncclBroadcast);
  FUNCTION(ncclAllReduce);
  FUNCTION(ncclReduceScatter);
  FUNCTION(ncclAllGather);
  FUNCTION(ncclAlltoAll);
  FUNCTION(ncclGather);
  FUNCTION(ncclScatter);
  FUNCTION(ncclSend);
  FUNCTION(ncclRecv);
  FUNCTION(ncclGroupStart);
  FUNCTION(ncclGroupEnd);
  FUNCTION(ncclGroupSimulateEnd);
  return 0;
}
