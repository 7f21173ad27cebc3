/* A program written against nccl.h alone (C11), run on host memory by chorus-run or
 * mpirun with NCCL_COMM_ID set (every rank calls ncclGetUniqueId and gets the same id).
 *
 *   nccl_host_test all [--p2p-mib N]  every collective x type x op, in and out of place,
 *                                      checked against a reference computed here; premulsum;
 *                                      errors; groups; split; non-blocking; abort
 *   nccl_host_test kill DIR            the last rank dies by SIGKILL; survivors must see
 *                                      ncclRemoteError naming it (each writes DIR/ok.RANK)
 *   nccl_host_test initall             one process, ncclCommInitAll with 4 ranks
 * Exit 0 only when every check passed. */
#define _GNU_SOURCE
#include <nccl.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank = -1, nranks = 0, failures = 0;

#define FAIL(...)                                \
  do {                                           \
    fprintf(stderr, "FAIL rank %d: ", rank);     \
    fprintf(stderr, __VA_ARGS__);                \
    fputc('\n', stderr);                         \
    if (++failures > 20) exit(1);                \
  } while (0)

#define CHECK(call)                                                                       \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess) {                                                              \
      fprintf(stderr, "FAIL rank %d: %s:%d %s -> %s: %s\n", rank, __FILE__, __LINE__, #call, \
              ncclGetErrorString(r_), ncclGetLastError(NULL));                            \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define EXPECT_CODE(call, code)                                                            \
  do {                                                                                     \
    ncclResult_t r_ = (call);                                                              \
    if (r_ != (code))                                                                      \
      FAIL("%s:%d %s -> %d (%s), expected %s", __FILE__, __LINE__, #call, (int)r_,          \
           ncclGetErrorString(r_), #code);                                                 \
    else if ((code) != ncclSuccess && strlen(ncclGetLastError(NULL)) == 0)                 \
      FAIL("%s:%d %s: ncclGetLastError is empty", __FILE__, __LINE__, #call);              \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int envInt(const char* a, const char* b) {
  const char* v = getenv(a);
  if (!v) v = getenv(b);
  return v ? atoi(v) : -1;
}

/* ---- element encoding: every value used is exactly representable in every type ---- */

static const size_t kSize[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
static const char* kTypeName[ncclNumTypes] = {"int8",  "uint8",   "int32",  "uint32",
                                              "int64", "uint64",  "half",   "float",
                                              "double", "bf16",   "e4m3",   "e5m2"};
static const char* kOpName[ncclNumOps] = {"sum", "prod", "max", "min", "avg"};

static int isUnsigned(ncclDataType_t t) {
  return t == ncclUint8 || t == ncclUint32 || t == ncclUint64;
}

/* A binary float of E exponent and M mantissa bits (bias 2^(E-1)-1), exact values only. */
static uint32_t encodeFloat(double v, int E, int M) {
  if (v == 0) return 0;
  uint32_t sign = v < 0 ? 1u : 0u;
  int e;
  double m = frexp(fabs(v), &e); /* v = m * 2^e, 0.5 <= m < 1 */
  uint32_t biased = (uint32_t)(e - 1 + ((1 << (E - 1)) - 1));
  uint32_t mant = (uint32_t)((m * 2 - 1) * (1 << M));
  return (sign << (E + M)) | (biased << M) | mant;
}
static double decodeFloat(uint32_t bits, int E, int M) {
  uint32_t sign = bits >> (E + M), biased = (bits >> M) & ((1u << E) - 1), mant = bits & ((1u << M) - 1);
  if (biased == 0 && mant == 0) return sign ? -0.0 : 0.0;
  double v = ldexp(1.0 + (double)mant / (1 << M), (int)biased - ((1 << (E - 1)) - 1));
  return sign ? -v : v;
}

static void put(void* buf, size_t i, ncclDataType_t t, double v) {
  char* p = (char*)buf + i * kSize[t];
  switch (t) {
    case ncclInt8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case ncclUint8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case ncclInt32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case ncclUint32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case ncclInt64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case ncclUint64: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
    case ncclFloat32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case ncclFloat64: memcpy(p, &v, 8); break;
    case ncclFloat16: { uint16_t x = (uint16_t)encodeFloat(v, 5, 10); memcpy(p, &x, 2); break; }
    case ncclBfloat16: { uint16_t x = (uint16_t)encodeFloat(v, 8, 7); memcpy(p, &x, 2); break; }
    case ncclFloat8e4m3: { uint8_t x = (uint8_t)encodeFloat(v, 4, 3); memcpy(p, &x, 1); break; }
    case ncclFloat8e5m2: { uint8_t x = (uint8_t)encodeFloat(v, 5, 2); memcpy(p, &x, 1); break; }
    default: break;
  }
}

static double get(const void* buf, size_t i, ncclDataType_t t) {
  const char* p = (const char*)buf + i * kSize[t];
  switch (t) {
    case ncclInt8: { int8_t x; memcpy(&x, p, 1); return x; }
    case ncclUint8: { uint8_t x; memcpy(&x, p, 1); return x; }
    case ncclInt32: { int32_t x; memcpy(&x, p, 4); return x; }
    case ncclUint32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case ncclInt64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case ncclUint64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    case ncclFloat32: { float x; memcpy(&x, p, 4); return x; }
    case ncclFloat64: { double x; memcpy(&x, p, 8); return x; }
    case ncclFloat16: { uint16_t x; memcpy(&x, p, 2); return decodeFloat(x, 5, 10); }
    case ncclBfloat16: { uint16_t x; memcpy(&x, p, 2); return decodeFloat(x, 8, 7); }
    case ncclFloat8e4m3: { uint8_t x; memcpy(&x, p, 1); return decodeFloat(x, 4, 3); }
    case ncclFloat8e5m2: { uint8_t x; memcpy(&x, p, 1); return decodeFloat(x, 5, 2); }
    default: return NAN;
  }
}

/* Rank r's element i for `op`: small integers (powers of two for prod) so that every
 * partial result, in any order, is exact even in fp8 e5m2 (integers up to 8). */
static double value(int r, size_t i, ncclDataType_t t, int op) {
  const int u = isUnsigned(t);
  switch (op) {
    case ncclProd: {
      static const double s[3] = {1, -1, 2}, us[3] = {1, 2, 1};
      return (u ? us : s)[(r * 5 + i) % 3];
    }
    case ncclMax:
    case ncclMin:
      return (double)((r * 5 + i * 3) % 7) - (u ? 0 : 3);
    case ncclAvg: { /* a base every rank shares plus +1/-1 pairs: the sum is n * base */
      double base = (double)(i % 2) + (u ? 1 : 0);
      double d = (r % 2 == 0 && r + 1 < nranks) ? 1 : (r % 2 == 1 ? -1 : 0);
      return base + d;
    }
    default: /* sum and premulsum */
      return (double)((r * 7 + i) % 3) - (u ? 0 : 1);
  }
}

static double reference(size_t i, ncclDataType_t t, int op, const double* scalars) {
  double acc = value(0, i, t, op) * (scalars ? scalars[0] : 1);
  for (int r = 1; r < nranks; ++r) {
    double v = value(r, i, t, op) * (scalars ? scalars[r] : 1);
    switch (op) {
      case ncclProd: acc *= v; break;
      case ncclMax: acc = v > acc ? v : acc; break;
      case ncclMin: acc = v < acc ? v : acc; break;
      default: acc += v; break;
    }
  }
  return op == ncclAvg ? acc / nranks : acc;
}

/* ---- reductions: allreduce, reduce, reducescatter ---------------------------------- */

static void checkReductions(ncclComm_t comm) {
  const size_t counts[] = {0, 1, 1031};
  int checked = 0;
  for (int t = 0; t < ncclNumTypes; ++t)
    for (int op = 0; op < ncclNumOps; ++op)
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c)
        for (int inPlace = 0; inPlace < 2; ++inPlace) {
          const size_t n = counts[c], es = kSize[t], total = n * nranks;
          const int root = (t + op) % nranks;
          char* send = malloc(total * es + 1);
          char* recv = malloc(total * es + 1);
          /* allreduce */
          for (size_t i = 0; i < n; ++i) put(send, i, t, value(rank, i, t, op));
          memset(recv, 0x5a, total * es + 1);
          CHECK(ncclAllReduce(send, inPlace ? send : recv, n, t, op, comm, NULL));
          for (size_t i = 0; i < n; ++i)
            if (get(inPlace ? send : recv, i, t) != reference(i, t, op, NULL)) {
              FAIL("allreduce %s %s count %zu %s: [%zu] = %g, expected %g", kTypeName[t],
                   kOpName[op], n, inPlace ? "in place" : "out of place", i,
                   get(inPlace ? send : recv, i, t), reference(i, t, op, NULL));
              break;
            }
          /* reduce (recvbuff NULL off the root when out of place) */
          for (size_t i = 0; i < n; ++i) put(send, i, t, value(rank, i, t, op));
          memset(recv, 0x5a, total * es + 1);
          void* out = inPlace ? send : (rank == root ? recv : NULL);
          CHECK(ncclReduce(send, out, n, t, op, root, comm, NULL));
          if (rank == root)
            for (size_t i = 0; i < n; ++i)
              if (get(out, i, t) != reference(i, t, op, NULL)) {
                FAIL("reduce %s %s count %zu root %d: [%zu] = %g, expected %g", kTypeName[t],
                     kOpName[op], n, root, i, get(out, i, t), reference(i, t, op, NULL));
                break;
              }
          /* reducescatter: block b of the input holds elements b*n .. b*n+n-1 */
          for (size_t i = 0; i < total; ++i) put(send, i, t, value(rank, i, t, op));
          memset(recv, 0x5a, total * es + 1);
          char* rs = inPlace ? send + rank * n * es : recv;
          CHECK(ncclReduceScatter(send, rs, n, t, op, comm, NULL));
          for (size_t i = 0; i < n; ++i) {
            double want = reference(rank * n + i, t, op, NULL);
            if (get(rs, i, t) != want) {
              FAIL("reducescatter %s %s count %zu %s: [%zu] = %g, expected %g", kTypeName[t],
                   kOpName[op], n, inPlace ? "in place" : "out of place", i, get(rs, i, t), want);
              break;
            }
          }
          if (!inPlace && recv[n * es] != 0x5a)
            FAIL("reducescatter %s wrote past its %zu elements", kTypeName[t], n);
          free(send);
          free(recv);
          checked += 3;
        }
  if (rank == 0) printf("reductions: %d calls checked\n", checked);
}

/* ---- data movement: allgather, broadcast, bcast, alltoall, gather, scatter ---------- */

static unsigned char pattern(int r, size_t i) {
  uint64_t x = (uint64_t)r * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return (unsigned char)(x * 0x94d049bb133111ebull >> 56);
}

static void expectBytes(const char* what, const unsigned char* got, int fromRank, size_t first,
                        size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    if (got[i] != pattern(fromRank, first + i)) {
      FAIL("%s: byte %zu = %d, expected %d (rank %d's byte %zu)", what, i, got[i],
           pattern(fromRank, first + i), fromRank, first + i);
      return;
    }
}

static void checkMovement(ncclComm_t comm) {
  const ncclDataType_t types[] = {ncclInt8, ncclBfloat16, ncclFloat32, ncclUint64};
  const size_t counts[] = {0, 1, 1031};
  char what[96];
  int checked = 0;
  for (size_t ti = 0; ti < 4; ++ti)
    for (size_t c = 0; c < 3; ++c)
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        const ncclDataType_t t = types[ti];
        const size_t n = counts[c], b = n * kSize[t], all = b * nranks;
        const int root = (int)(ti + c) % nranks;
        unsigned char* send = malloc(all + 1);
        unsigned char* recv = malloc(all + 1);
        snprintf(what, sizeof what, "%s count %zu %s", kTypeName[t], n,
                 inPlace ? "in place" : "out of place");
        /* allgather: in place, this rank's block already sits at recv + rank * b */
        for (size_t i = 0; i < b; ++i) (inPlace ? recv + rank * b : send)[i] = pattern(rank, i);
        CHECK(ncclAllGather(inPlace ? recv + rank * b : send, recv, n, t, comm, NULL));
        for (int r = 0; r < nranks; ++r) expectBytes("allgather", recv + r * b, r, 0, b);
        /* broadcast, and the deprecated in-place bcast */
        for (size_t i = 0; i < b; ++i) send[i] = rank == root ? pattern(root, i) : 0;
        memset(recv, 0, all + 1);
        CHECK(ncclBroadcast(send, inPlace ? send : recv, n, t, root, comm, NULL));
        expectBytes("broadcast", inPlace ? send : recv, root, 0, b);
        for (size_t i = 0; i < b; ++i) recv[i] = rank == root ? pattern(root, i) : 0;
        CHECK(ncclBcast(recv, n, t, root, comm, NULL));
        expectBytes("bcast", recv, root, 0, b);
        /* alltoall: block j of rank r is pattern(r, j * all + ...) */
        for (size_t i = 0; i < all; ++i) send[i] = pattern(rank, i);
        CHECK(ncclAlltoAll(send, inPlace ? send : recv, n, t, comm, NULL));
        for (int r = 0; r < nranks; ++r)
          expectBytes("alltoall", (inPlace ? send : recv) + r * b, r, rank * b, b);
        /* gather: in place, the root's block is already at recv + root * b */
        unsigned char* mine = inPlace && rank == root ? recv + root * b : send;
        for (size_t i = 0; i < b; ++i) mine[i] = pattern(rank, i);
        CHECK(ncclGather(mine, recv, n, t, root, comm, NULL));
        if (rank == root)
          for (int r = 0; r < nranks; ++r) expectBytes("gather", recv + r * b, r, 0, b);
        /* scatter: block r of the root's send goes to rank r */
        for (size_t i = 0; i < all; ++i) send[i] = rank == root ? pattern(root, i) : 0;
        unsigned char* into = inPlace && rank == root ? send + root * b : recv;
        CHECK(ncclScatter(send, into, n, t, root, comm, NULL));
        expectBytes("scatter", into, root, rank * b, b);
        (void)what;
        free(send);
        free(recv);
        checked += 6;
      }
  if (rank == 0) printf("data movement: %d calls checked\n", checked);
}

/* ---- pre-multiplied sums: each rank its own scalar, on host or "device" residence --- */

static void checkPreMulSum(ncclComm_t comm) {
  const ncclDataType_t types[] = {ncclInt8,     ncclUint8,   ncclInt32,   ncclUint32,
                                  ncclInt64,    ncclUint64,  ncclFloat16, ncclBfloat16,
                                  ncclFloat32,  ncclFloat64, ncclFloat8e4m3, ncclFloat8e5m2};
  const size_t n = 777;
  double scalars[64];
  for (int r = 0; r < nranks; ++r) scalars[r] = (double)(r % 2 + 1);
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ++ti) {
    const ncclDataType_t t = types[ti];
    const size_t es = kSize[t];
    char scalar[8];
    ncclRedOp_t op;
    const ncclScalarResidence_t residence = ti % 2 ? ncclScalarDevice : ncclScalarHostImmediate;
    /* HostImmediate takes the value at creation, later changes do not count; Device reads
       the pointer at each collective, so they do. The wrong value (5) is there at the moment
       that must not count. */
    put(scalar, 0, t, residence == ncclScalarDevice ? 5.0 : scalars[rank]);
    CHECK(ncclRedOpCreatePreMulSum(&op, scalar, t, residence, comm));
    put(scalar, 0, t, residence == ncclScalarDevice ? scalars[rank] : 5.0);
    if ((int)op < ncclNumOps) FAIL("premulsum op %d is a built-in value", (int)op);
    char* send = malloc(n * nranks * es);
    char* recv = malloc(n * nranks * es);
    for (size_t i = 0; i < n * nranks; ++i) put(send, i, t, value(rank, i, t, ncclSum));
    CHECK(ncclAllReduce(send, recv, n, t, op, comm, NULL));
    for (size_t i = 0; i < n; ++i)
      if (get(recv, i, t) != reference(i, t, ncclSum, scalars)) {
        FAIL("premulsum allreduce %s: [%zu] = %g, expected %g", kTypeName[t], i,
             get(recv, i, t), reference(i, t, ncclSum, scalars));
        break;
      }
    const int root = (int)(ti % (size_t)nranks); /* reduce: the root's result only */
    memset(recv, 0, n * es);
    CHECK(ncclReduce(send, recv, n, t, op, root, comm, NULL));
    for (size_t i = 0; rank == root && i < n; ++i)
      if (get(recv, i, t) != reference(i, t, ncclSum, scalars)) {
        FAIL("premulsum reduce %s root %d: [%zu] = %g, expected %g", kTypeName[t], root, i,
             get(recv, i, t), reference(i, t, ncclSum, scalars));
        break;
      }
    CHECK(ncclReduceScatter(send, send + rank * n * es, n, t, op, comm, NULL)); /* in place */
    for (size_t i = 0; i < n; ++i)
      if (get(send + rank * n * es, i, t) != reference(rank * n + i, t, ncclSum, scalars)) {
        FAIL("premulsum reducescatter %s: [%zu] wrong", kTypeName[t], i);
        break;
      }
    /* the op belongs to its type; a destroyed op is refused */
    EXPECT_CODE(ncclAllReduce(send, recv, n, t == ncclFloat32 ? ncclFloat64 : ncclFloat32, op,
                              comm, NULL),
                ncclInvalidArgument);
    CHECK(ncclRedOpDestroy(op, comm));
    EXPECT_CODE(ncclAllReduce(send, recv, n, t, op, comm, NULL), ncclInvalidArgument);
    EXPECT_CODE(ncclRedOpDestroy(op, comm), ncclInvalidArgument); /* destroyed already */
    free(send);
    free(recv);
  }
  /* Built-in ops are not destroyed; a residence that is neither, or no scalar, is refused. */
  ncclRedOp_t bad;
  float one = 1;
  EXPECT_CODE(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument);
  EXPECT_CODE(ncclRedOpDestroy(ncclAvg, comm), ncclInvalidArgument);
  EXPECT_CODE(ncclRedOpCreatePreMulSum(&bad, &one, ncclFloat32, (ncclScalarResidence_t)2, comm),
              ncclInvalidArgument);
  EXPECT_CODE(ncclRedOpCreatePreMulSum(&bad, NULL, ncclFloat32, ncclScalarHostImmediate, comm),
              ncclInvalidArgument);
  if (rank == 0) printf("premulsum: %zu types checked\n", sizeof types / sizeof types[0]);
}

/* ---- bad input gets NCCL's codes and a message -------------------------------------- */

static void checkErrors(ncclComm_t comm) {
  float x[4] = {0};
  int device = 0;
  EXPECT_CODE(ncclAllReduce(x, x, 4, (ncclDataType_t)99, ncclSum, comm, NULL), ncclInvalidArgument);
  EXPECT_CODE(ncclAllReduce(x, x, 4, ncclFloat32, (ncclRedOp_t)77, comm, NULL), ncclInvalidArgument);
  EXPECT_CODE(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, NULL, NULL), ncclInvalidArgument);
  EXPECT_CODE(ncclBroadcast(x, x, 4, ncclFloat32, nranks, comm, NULL), ncclInvalidArgument);
  EXPECT_CODE(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_CODE(ncclCommCuDevice(comm, &device), ncclInvalidUsage);
  ncclConfig_t bad; /* not from NCCL_CONFIG_INITIALIZER */
  memset(&bad, 0, sizeof bad);
  ncclComm_t none = NULL;
  EXPECT_CODE(ncclCommSplit(comm, 0, rank, &none, &bad), ncclInvalidArgument);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  CHECK(ncclGroupStart());
  CHECK(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL));
  EXPECT_CODE(ncclGroupSimulateEnd(&sim), ncclInvalidUsage); /* dropped, not run */
  /* NCCL_COMM_ID must be host:port */
  char* saved = strdup(getenv("NCCL_COMM_ID"));
  ncclUniqueId id;
  setenv("NCCL_COMM_ID", "no-port-here", 1);
  EXPECT_CODE(ncclGetUniqueId(&id), ncclInvalidArgument);
  if (!strstr(ncclGetLastError(NULL), "NCCL_COMM_ID"))
    FAIL("a bad NCCL_COMM_ID: the message does not name it: %s", ncclGetLastError(NULL));
  setenv("NCCL_COMM_ID", saved, 1);
  free(saved);
  int version = 0;
  CHECK(ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE || version != NCCL_VERSION(2, 26, 0))
    FAIL("ncclGetVersion: %d, header says %d", version, NCCL_VERSION_CODE);
  /* NCCL 2.26's texts (src/init.cc), which programs print and match; only the internal
     error names Chorus as the one to report it to. */
  static const struct {
    ncclResult_t code;
    const char* text;
  } texts[] = {
      {ncclSuccess, "no error"},
      {ncclUnhandledCudaError, "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"},
      {ncclSystemError, "unhandled system error (run with NCCL_DEBUG=INFO for details)"},
      {ncclInternalError, "internal error - please report this issue to the Chorus developers"},
      {ncclInvalidArgument, "invalid argument (run with NCCL_DEBUG=WARN for details)"},
      {ncclInvalidUsage, "invalid usage (run with NCCL_DEBUG=WARN for details)"},
      {ncclRemoteError, "remote process exited or there was a network error"},
      {ncclInProgress, "NCCL operation in progress"},
      {(ncclResult_t)99, "unknown result code"},
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; ++i)
    if (strcmp(ncclGetErrorString(texts[i].code), texts[i].text) != 0)
      FAIL("ncclGetErrorString(%d): '%s', NCCL's is '%s'", (int)texts[i].code,
           ncclGetErrorString(texts[i].code), texts[i].text);
}

/* ---- groups: 64 MiB to and from every peer at once; collectives grouped ------------- */

static uint64_t word(int r, size_t k) {
  uint64_t x = ((uint64_t)r << 40) ^ (k * 0x9e3779b97f4a7c15ull);
  return x ^ (x >> 31);
}

static void checkGroups(ncclComm_t comm, size_t mib) {
  const size_t words = mib * (1 << 20) / 8;
  uint64_t* send = malloc(words * 8);
  uint64_t** recv = calloc((size_t)nranks, sizeof *recv);
  for (size_t k = 0; k < words; ++k) send[k] = word(rank, k);
  double t0 = now();
  CHECK(ncclGroupStart());
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    recv[p] = malloc(words * 8);
    CHECK(ncclSend(send, words, ncclUint64, p, comm, NULL));
    CHECK(ncclRecv(recv[p], words, ncclUint64, p, comm, NULL));
  }
  CHECK(ncclGroupEnd());
  double t1 = now();
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    for (size_t k = 0; k < words; ++k)
      if (recv[p][k] != word(p, k)) {
        FAIL("group send/recv: word %zu from rank %d wrong", k, p);
        break;
      }
    free(recv[p]);
  }
  if (rank == 0)
    printf("group send/recv: %zu MiB with each of %d peers in %.2f s\n", mib, nranks - 1, t1 - t0);
  /* collectives in one group, nested */
  int a = rank + 1, sum = 0;
  int* gathered = malloc(sizeof(int) * nranks);
  CHECK(ncclGroupStart());
  CHECK(ncclGroupStart());
  CHECK(ncclAllReduce(&a, &sum, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(ncclGroupEnd());
  CHECK(ncclAllGather(&a, gathered, 1, ncclInt32, comm, NULL));
  CHECK(ncclGroupEnd());
  if (sum != nranks * (nranks + 1) / 2) FAIL("grouped allreduce: %d", sum);
  for (int r = 0; r < nranks; ++r)
    if (gathered[r] != r + 1) FAIL("grouped allgather: [%d] = %d", r, gathered[r]);
  /* a collective and a ring exchange in one group, issued in a different order on odd and
     even ranks (NCCL allows it: only the order of the collectives must agree) */
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks, got = -1;
  sum = 0;
  CHECK(ncclGroupStart());
  if (rank % 2) CHECK(ncclAllReduce(&a, &sum, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(ncclSend(&a, 1, ncclInt32, next, comm, NULL));
  CHECK(ncclRecv(&got, 1, ncclInt32, prev, comm, NULL));
  if (rank % 2 == 0) CHECK(ncclAllReduce(&a, &sum, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(ncclGroupEnd());
  if (sum != nranks * (nranks + 1) / 2 || got != prev + 1)
    FAIL("group of a collective and a ring: sum %d, got %d from rank %d", sum, got, prev);
  free(gathered);
  free(send);
  free(recv);
}

/* ---- split into odd and even ranks; NCCL_SPLIT_NOCOLOR -------------------------------- */

static void checkSplit(ncclComm_t comm) {
  ncclComm_t half = NULL, none = NULL;
  CHECK(ncclCommSplit(comm, rank % 2, rank, &half, NULL));
  int count = 0, me = -1;
  CHECK(ncclCommCount(half, &count));
  CHECK(ncclCommUserRank(half, &me));
  const int expectCount = (nranks + 1 - rank % 2) / 2;
  if (count != expectCount || me != rank / 2)
    FAIL("split: count %d rank %d, expected %d and %d", count, me, expectCount, rank / 2);
  int64_t v = rank, sum = -1, expect = 0;
  for (int r = rank % 2; r < nranks; r += 2) expect += r;
  CHECK(ncclAllReduce(&v, &sum, 1, ncclInt64, ncclSum, half, NULL));
  if (sum != expect) FAIL("split allreduce over %s ranks: %lld, expected %lld",
                          rank % 2 ? "odd" : "even", (long long)sum, (long long)expect);
  /* rank 0 stays out; the rest split with keys reversing their order */
  CHECK(ncclCommSplit(comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 7, -rank, &none, NULL));
  if (rank == 0 && none != NULL) FAIL("split with NCCL_SPLIT_NOCOLOR gave a communicator");
  if (rank != 0) {
    CHECK(ncclCommUserRank(none, &me));
    if (me != nranks - 1 - rank) FAIL("split by key: rank %d, expected %d", me, nranks - 1 - rank);
    CHECK(ncclCommDestroy(none));
  }
  CHECK(ncclCommDestroy(half));
}

/* ---- non-blocking: calls may return ncclInProgress; ncclCommGetAsyncError drives ----- */

static ncclResult_t waitAsync(ncclComm_t comm, int* polls) {
  ncclResult_t state = ncclInProgress;
  const double deadline = now() + 120;
  while (state == ncclInProgress && now() < deadline) {
    CHECK(ncclCommGetAsyncError(comm, &state));
    ++*polls;
  }
  return state;
}

static void checkNonBlocking(ncclComm_t comm) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t nb = NULL;
  int polls = 0, inProgress = 0;
  ncclResult_t r = ncclCommSplit(comm, 0, rank, &nb, &config);
  if (r != ncclSuccess && r != ncclInProgress) FAIL("non-blocking split: %s", ncclGetErrorString(r));
  inProgress += r == ncclInProgress;
  if (waitAsync(nb, &polls) != ncclSuccess) FAIL("non-blocking creation did not succeed");
  const size_t n = 1 << 20;
  float* buf = malloc(n * sizeof(float));
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < n; ++i) buf[i] = (float)((rank + (int)i + round) % 4);
    r = ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, nb, NULL);
    if (r != ncclSuccess && r != ncclInProgress) FAIL("non-blocking allreduce: %s", ncclGetErrorString(r));
    inProgress += r == ncclInProgress;
    if (waitAsync(nb, &polls) != ncclSuccess) FAIL("non-blocking allreduce did not succeed");
    for (size_t i = 0; i < n; ++i) {
      float want = 0;
      for (int q = 0; q < nranks; ++q) want += (float)((q + (int)i + round) % 4);
      if (buf[i] != want) {
        FAIL("non-blocking allreduce [%zu] = %g, expected %g", i, buf[i], want);
        break;
      }
    }
  }
  /* A split of it without a config is non-blocking too (NCCL copies the parent's), and so
     is a grouped call on it: with rank 1 half a second late, rank 0's calls return
     ncclInProgress, and complete with the sum. */
  ncclComm_t child = NULL;
  r = ncclCommSplit(nb, 0, rank, &child, NULL);
  if (r != ncclSuccess && r != ncclInProgress)
    FAIL("split of non-blocking: %s", ncclGetErrorString(r));
  if (waitAsync(child, &polls) != ncclSuccess) FAIL("split of non-blocking did not succeed");
  for (int grouped = 0; grouped < 2; ++grouped) {
    ncclComm_t on = grouped ? nb : child;
    int64_t v = rank + 1, sum = -1;
    if (rank == 1) usleep(500 * 1000);
    if (grouped) CHECK(ncclGroupStart());
    r = ncclAllReduce(&v, &sum, 1, ncclInt64, ncclSum, on, NULL);
    if (grouped) {
      if (r != ncclSuccess)
        FAIL("a grouped call on a non-blocking comm: %s", ncclGetErrorString(r));
      r = ncclGroupEnd();
    }
    if (rank == 0 && r != ncclInProgress)
      FAIL("%s on a non-blocking comm returned %s while rank 1 was late, not ncclInProgress",
           grouped ? "ncclGroupEnd" : "an allreduce on its split", ncclGetErrorString(r));
    if (waitAsync(on, &polls) != ncclSuccess) FAIL("the late call did not succeed");
    if (sum != (int64_t)nranks * (nranks + 1) / 2)
      FAIL("the late call's sum: %lld", (long long)sum);
  }
  CHECK(ncclCommDestroy(child));
  r = ncclCommFinalize(nb);
  if (r != ncclSuccess && r != ncclInProgress) FAIL("finalize: %s", ncclGetErrorString(r));
  if (waitAsync(nb, &polls) != ncclSuccess) FAIL("finalize did not succeed");
  CHECK(ncclCommDestroy(nb));
  free(buf);
  if (rank == 0)
    printf("non-blocking: %d calls returned ncclInProgress, %d polls\n", inProgress, polls);
}

/* A fresh unique id from rank 0, sent to every rank as NCCL programs do (here over the
   world communicator): NCCL_COMM_ID would give the world's. */
static ncclUniqueId freshId(ncclComm_t world) {
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (rank == 0) {
    char* saved = strdup(getenv("NCCL_COMM_ID"));
    unsetenv("NCCL_COMM_ID");
    CHECK(ncclGetUniqueId(&id));
    setenv("NCCL_COMM_ID", saved, 1);
    free(saved);
  }
  CHECK(ncclBroadcast(&id, &id, sizeof id, ncclUint8, 0, world, NULL));
  return id;
}

/* A sum of every rank's (rank + 1) on comm, waited for by polling where non-blocking. */
static void checkSumOn(ncclComm_t c, const char* what) {
  int polls = 0;
  int64_t v = rank + 1;
  ncclResult_t r = ncclAllReduce(&v, &v, 1, ncclInt64, ncclSum, c, NULL);
  if (r != ncclSuccess && r != ncclInProgress)
    FAIL("%s: allreduce %s", what, ncclGetErrorString(r));
  if (waitAsync(c, &polls) != ncclSuccess) FAIL("%s: allreduce did not succeed", what);
  if (v != (int64_t)nranks * (nranks + 1) / 2) FAIL("%s: sum %lld", what, (long long)v);
}

/* ncclCommInitRankConfig with blocking = 0 returns at once (ncclInProgress) and the
   communicator comes up behind ncclCommGetAsyncError; ncclCommInitRankScalable (blocking,
   one id) as ncclCommInitRank. Each new communicator numbers the ranks backwards. Bad
   configs and colors first. */
static void checkInitConfig(ncclComm_t world) {
  /* Refused before any exchange: blocking other than 0 or 1, a config not set up by
     NCCL_CONFIG_INITIALIZER (its size), a color below 0 other than NCCL_SPLIT_NOCOLOR. */
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  ncclComm_t none = NULL;
  bad.blocking = 2;
  EXPECT_CODE(ncclCommSplit(world, 0, rank, &none, &bad), ncclInvalidArgument);
  bad.blocking = 1;
  bad.size = 4;
  EXPECT_CODE(ncclCommSplit(world, 0, rank, &none, &bad), ncclInvalidArgument);
  EXPECT_CODE(ncclCommSplit(world, -5, rank, &none, NULL), ncclInvalidArgument);
  if (none) FAIL("a refused split left a communicator");

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t nb = NULL;
  int polls = 0, user = -1;
  ncclResult_t r = ncclCommInitRankConfig(&nb, nranks, freshId(world), nranks - 1 - rank, &config);
  if (r != ncclInProgress)
    FAIL("non-blocking ncclCommInitRankConfig returned %s, not ncclInProgress",
         ncclGetErrorString(r));
  if (waitAsync(nb, &polls) != ncclSuccess) FAIL("non-blocking init did not succeed");
  CHECK(ncclCommUserRank(nb, &user));
  if (user != nranks - 1 - rank)
    FAIL("ncclCommInitRankConfig: rank %d, asked %d", user, nranks - 1 - rank);
  checkSumOn(nb, "ncclCommInitRankConfig");
  r = ncclCommFinalize(nb);
  if (r != ncclSuccess && r != ncclInProgress) FAIL("finalize: %s", ncclGetErrorString(r));
  if (waitAsync(nb, &polls) != ncclSuccess) FAIL("finalize did not succeed");
  CHECK(ncclCommDestroy(nb));

  ncclUniqueId ids[1] = {freshId(world)};
  ncclComm_t sc = NULL;
  EXPECT_CODE(ncclCommInitRankScalable(&sc, nranks, rank, 0, ids, NULL), ncclInvalidArgument);
  CHECK(ncclCommInitRankScalable(&sc, nranks, nranks - 1 - rank, 1, ids, NULL));
  CHECK(ncclCommUserRank(sc, &user));
  if (user != nranks - 1 - rank) FAIL("ncclCommInitRankScalable: rank %d", user);
  checkSumOn(sc, "ncclCommInitRankScalable");
  CHECK(ncclCommDestroy(sc));
  if (rank == 0) printf("init with a config: non-blocking and scalable checked\n");
}

/* ---- ncclMemAlloc and registration ---------------------------------------------------- */

static void checkMemory(ncclComm_t comm) {
  void* buf = NULL;
  void* handle = NULL;
  const size_t n = 4096;
  CHECK(ncclMemAlloc(&buf, n * sizeof(double)));
  CHECK(ncclCommRegister(comm, buf, n * sizeof(double), &handle));
  double* d = buf;
  for (size_t i = 0; i < n; ++i) d[i] = (double)(rank + 1);
  CHECK(ncclAllReduce(d, d, n, ncclFloat64, ncclMax, comm, NULL));
  for (size_t i = 0; i < n; ++i)
    if (d[i] != nranks) {
      FAIL("allreduce on ncclMemAlloc memory: %g", d[i]);
      break;
    }
  CHECK(ncclCommDeregister(comm, handle));
  CHECK(ncclMemFree(buf));
}

/* ---- abort from another thread while a call waits for peers that never come -------- */

static void* abortLater(void* comm) {
  usleep(300 * 1000);
  ncclResult_t r = ncclCommAbort((ncclComm_t)comm);
  return (void*)(intptr_t)r;
}

/* The abort of a communicator whose call waits inside ncclGroupEnd (a watchdog thread's
   abort of a stuck grouped receive, as PyTorch's): the abort must return only after
   ncclGroupEnd has left the communicator (it frees it), and ncclGroupEnd must fail. Runs
   on a split of the world, all ranks: rank 1 receives from rank 0, which never sends. */
static volatile int groupAbortReturned;
static void* abortGroupLater(void* comm) {
  usleep(300 * 1000);
  ncclResult_t r = ncclCommAbort((ncclComm_t)comm);
  groupAbortReturned = 1;
  return (void*)(intptr_t)r;
}

static void checkAbortInGroup(ncclComm_t comm) {
  ncclComm_t child = NULL;
  CHECK(ncclCommSplit(comm, 0, rank, &child, NULL));
  if (rank == 1) {
    pthread_t thread;
    float x = 0;
    groupAbortReturned = 0;
    pthread_create(&thread, NULL, abortGroupLater, child);
    CHECK(ncclGroupStart());
    CHECK(ncclRecv(&x, 1, ncclFloat32, 0, child, NULL));
    ncclResult_t r = ncclGroupEnd();
    const int abortFirst = groupAbortReturned;
    void* result;
    pthread_join(thread, &result);
    if (r == ncclSuccess) FAIL("a grouped receive that nobody sent succeeded after an abort");
    if (abortFirst)
      FAIL("ncclCommAbort returned (and freed the communicator) while ncclGroupEnd was "
           "still waiting on it");
    if ((ncclResult_t)(intptr_t)result != ncclSuccess) FAIL("ncclCommAbort (group) failed");
    printf("abort in a group: ncclGroupEnd returned %s before the abort did\n",
           ncclGetErrorString(r));
  } else {
    usleep(rank == 0 ? 2000 * 1000 : 0); /* rank 0 hosts the child's store */
    CHECK(ncclCommAbort(child));
  }
}

static void checkAbort(ncclComm_t comm) {
  if (rank == 1) { /* waits alone in an allreduce; another thread aborts it */
    pthread_t thread;
    float x = 1;
    pthread_create(&thread, NULL, abortLater, comm);
    double t0 = now();
    ncclResult_t r = ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL);
    double waited = now() - t0;
    void* result;
    pthread_join(thread, &result);
    if (r == ncclSuccess) FAIL("an allreduce without its peers succeeded after an abort");
    if ((ncclResult_t)(intptr_t)result != ncclSuccess) FAIL("ncclCommAbort failed");
    /* The peers abort only after 2 s: what ended the wait sooner is this thread's abort. */
    if (waited > 1.5)
      FAIL("the allreduce returned %.2f s after starting, not after the abort", waited);
    printf("abort: the waiting allreduce returned %s after %.2f s: %s\n", ncclGetErrorString(r),
           waited, ncclGetLastError(NULL));
  } else {
    usleep(2000 * 1000); /* later than rank 1's own abort (rank 0 also hosts the store) */
    CHECK(ncclCommAbort(comm));
  }
}

static ncclComm_t initWorld(void) {
  rank = envInt("CHORUS_RANK", "OMPI_COMM_WORLD_RANK");
  nranks = envInt("CHORUS_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE");
  if (rank < 0 || nranks < 2 || !getenv("NCCL_COMM_ID")) {
    fprintf(stderr, "run me with chorus-run or mpirun (2+ ranks) and NCCL_COMM_ID=host:port\n");
    exit(2);
  }
  ncclUniqueId id;
  ncclComm_t comm;
  CHECK(ncclGetUniqueId(&id)); /* the same in every process: NCCL_COMM_ID */
  CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  return comm;
}

static int runAll(size_t p2pMib) {
  ncclComm_t comm = initWorld();
  checkErrors(comm);
  checkReductions(comm);
  checkMovement(comm);
  checkPreMulSum(comm);
  checkMemory(comm);
  checkGroups(comm, p2pMib);
  checkSplit(comm);
  checkNonBlocking(comm);
  checkInitConfig(comm);
  checkAbortInGroup(comm);
  checkAbort(comm); /* frees comm */
  if (failures) return 1;
  printf("rank %d: all checks passed\n", rank);
  return 0;
}

static int runKill(const char* dir) {
  ncclComm_t comm = initWorld();
  const int victim = nranks - 1;
  const size_t n = 1 << 18;
  float* buf = calloc(n, sizeof(float));
  for (long round = 0;; ++round) {
    if (rank == victim && round == 3) raise(SIGKILL);
    ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, NULL);
    if (r == ncclSuccess) continue;
    char named[32];
    snprintf(named, sizeof named, "rank %d", victim);
    const char* message = ncclGetLastError(comm);
    printf("rank %d: round %ld: %s: %s\n", rank, round, ncclGetErrorString(r), message);
    if (r != ncclRemoteError) FAIL("a dead peer gave %s, not ncclRemoteError", ncclGetErrorString(r));
    if (!strstr(message, named)) FAIL("the message does not name %s: %s", named, message);
    if (round < 3) FAIL("the error came before the victim died (round %ld)", round);
    ncclResult_t state;
    CHECK(ncclCommGetAsyncError(comm, &state));
    if (state != ncclRemoteError) FAIL("ncclCommGetAsyncError after the death: %d", (int)state);
    CHECK(ncclCommAbort(comm));
    break;
  }
  free(buf);
  if (failures) return 1;
  char path[4096];
  snprintf(path, sizeof path, "%s/ok.%d", dir, rank);
  FILE* f = fopen(path, "w");
  if (!f) return 1;
  fclose(f);
  return 0;
}

/* ---- ncclCommInitAll: 4 ranks in this process, one thread drives them in groups ----- */

static int runInitAll(void) {
  /* As NCCL: destroying, aborting or finalizing no communicator is no error. */
  EXPECT_CODE(ncclCommDestroy(NULL), ncclSuccess);
  EXPECT_CODE(ncclCommAbort(NULL), ncclSuccess);
  EXPECT_CODE(ncclCommFinalize(NULL), ncclSuccess);
  enum { kRanks = 4 };
  ncclComm_t comms[kRanks];
  rank = 0;
  nranks = kRanks;
  CHECK(ncclCommInitAll(comms, kRanks, NULL));
  const size_t n = 100003;
  float* send[kRanks];
  float* recv[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    int count = 0, me = -1;
    CHECK(ncclCommCount(comms[r], &count));
    CHECK(ncclCommUserRank(comms[r], &me));
    if (count != kRanks || me != r) FAIL("initall comm %d: count %d rank %d", r, count, me);
    send[r] = malloc(n * sizeof(float));
    recv[r] = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) send[r][i] = (float)((r * 3 + i) % 5);
  }
  CHECK(ncclGroupStart());
  for (int r = 0; r < kRanks; ++r)
    CHECK(ncclAllReduce(send[r], recv[r], n, ncclFloat32, ncclSum, comms[r], NULL));
  CHECK(ncclGroupEnd());
  for (int r = 0; r < kRanks; ++r)
    for (size_t i = 0; i < n; ++i) {
      float want = 0;
      for (int q = 0; q < kRanks; ++q) want += (float)((q * 3 + i) % 5);
      if (recv[r][i] != want) {
        FAIL("initall allreduce on comm %d: [%zu] = %g, expected %g", r, i, recv[r][i], want);
        break;
      }
    }
  /* a ring of send/recv across the four communicators, in one group */
  CHECK(ncclGroupStart());
  for (int r = 0; r < kRanks; ++r) {
    CHECK(ncclSend(send[r], n, ncclFloat32, (r + 1) % kRanks, comms[r], NULL));
    CHECK(ncclRecv(recv[r], n, ncclFloat32, (r + kRanks - 1) % kRanks, comms[r], NULL));
  }
  CHECK(ncclGroupEnd());
  for (int r = 0; r < kRanks; ++r)
    if (memcmp(recv[r], send[(r + kRanks - 1) % kRanks], n * sizeof(float)) != 0)
      FAIL("initall ring: comm %d received the wrong data", r);
  for (int r = 0; r < kRanks; ++r) {
    CHECK(ncclCommFinalize(comms[r]));
    EXPECT_CODE(ncclCommFinalize(comms[r]), ncclInvalidArgument); /* as NCCL: once only */
    CHECK(ncclCommDestroy(comms[r]));
    free(send[r]);
    free(recv[r]);
  }
  /* the same through ncclCommInitRank calls grouped in this one thread */
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  CHECK(ncclGroupStart());
  for (int r = 0; r < 3; ++r) CHECK(ncclCommInitRank(&comms[r], 3, id, r));
  CHECK(ncclGroupEnd());
  int value[3] = {1, 2, 3}, total[3] = {0, 0, 0};
  CHECK(ncclGroupStart());
  for (int r = 0; r < 3; ++r)
    CHECK(ncclAllReduce(&value[r], &total[r], 1, ncclInt32, ncclSum, comms[r], NULL));
  CHECK(ncclGroupEnd());
  for (int r = 0; r < 3; ++r) {
    if (total[r] != 6) FAIL("grouped ncclCommInitRank: allreduce on comm %d gave %d", r, total[r]);
    CHECK(ncclCommDestroy(comms[r])); /* one thread destroys them in turn */
  }
  if (failures) return 1;
  printf("initall: %d ranks in one process passed\n", kRanks);
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* mode = argc > 1 ? argv[1] : "all";
  if (strcmp(mode, "all") == 0) {
    size_t mib = 64;
    if (argc > 3 && strcmp(argv[2], "--p2p-mib") == 0) mib = (size_t)atoi(argv[3]);
    return runAll(mib);
  }
  if (strcmp(mode, "kill") == 0 && argc > 2) return runKill(argv[2]);
  if (strcmp(mode, "initall") == 0) return runInitAll();
  fprintf(stderr, "usage: %s all [--p2p-mib N] | kill DIR | initall\n", argv[0]);
  return 2;
}
