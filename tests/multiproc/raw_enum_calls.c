/* Calls into the C API with enum arguments given as plain ints. A C caller may pass any
 * int where the API takes an enum (C enums are int-compatible), and the library must
 * refuse the ones it does not know; in C++ forming such an enum value is undefined
 * behaviour (UBSan's enum check says so), so errors_c_api.cpp makes these calls from C. */
#include "raw_enum_calls.h"

chorusResult_t rawAllReduce(const void* s, void* r, size_t c, int type, int op, chorusComm_t comm) {
  return chorusAllReduce(s, r, c, (chorusDataType_t)type, (chorusRedOp_t)op, comm);
}
chorusResult_t rawAllGather(const void* s, void* r, size_t c, int type, chorusComm_t comm) {
  return chorusAllGather(s, r, c, (chorusDataType_t)type, comm);
}
chorusResult_t rawReduceScatter(const void* s, void* r, size_t c, int type, chorusComm_t comm) {
  return chorusReduceScatter(s, r, c, (chorusDataType_t)type, chorusSum, comm);
}
chorusResult_t rawBroadcast(const void* s, void* r, size_t c, int type, chorusComm_t comm) {
  return chorusBroadcast(s, r, c, (chorusDataType_t)type, 0, comm);
}
chorusResult_t rawReduce(const void* s, void* r, size_t c, int type, chorusComm_t comm) {
  return chorusReduce(s, r, c, (chorusDataType_t)type, chorusSum, 0, comm);
}
const char* rawErrorString(int result) { return chorusGetErrorString((chorusResult_t)result); }
