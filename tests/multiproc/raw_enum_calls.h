/* C API calls with enum arguments as plain ints (see raw_enum_calls.c). */
#pragma once
#include <chorus/chorus.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
chorusResult_t rawAllReduce(const void* s, void* r, size_t c, int type, int op, chorusComm_t comm);
chorusResult_t rawAllGather(const void* s, void* r, size_t c, int type, chorusComm_t comm);
chorusResult_t rawReduceScatter(const void* s, void* r, size_t c, int type, chorusComm_t comm);
chorusResult_t rawBroadcast(const void* s, void* r, size_t c, int type, chorusComm_t comm);
chorusResult_t rawReduce(const void* s, void* r, size_t c, int type, chorusComm_t comm);
const char* rawErrorString(int result);
#ifdef __cplusplus
}
#endif
