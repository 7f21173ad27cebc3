/* Chorus C API, NCCL-like naming. Host buffers; every call blocks until the collective
 * is complete or the communicator's timeout passes, unless the communicator was made
 * non-blocking (chorusConfig_t.blocking = 0): then calls return chorusInProgress and
 * chorusCommGetAsyncError drives and reports them, as NCCL's non-blocking mode. */
#ifndef CHORUS_H
#define CHORUS_H

#include <chorus/types.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CHORUS_MAJOR 0
#define CHORUS_MINOR 1
#define CHORUS_PATCH 0
#define CHORUS_VERSION_CODE (CHORUS_MAJOR * 10000 + CHORUS_MINOR * 100 + CHORUS_PATCH)

#define CHORUS_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[CHORUS_UNIQUE_ID_BYTES];
} chorusUniqueId;

typedef struct chorusComm* chorusComm_t;

/* chorusCommSplit's color for a rank that joins no new communicator (NCCL_SPLIT_NOCOLOR). */
#define CHORUS_SPLIT_NOCOLOR -1

typedef struct {
  int blocking; /* 1 (default): calls wait; 0: calls return chorusInProgress */
} chorusConfig_t;
#define CHORUS_CONFIG_INITIALIZER \
  { 1 }

chorusResult_t chorusGetVersion(int* version);
/* Starts the rendezvous store in the calling process and fills *uniqueId. */
chorusResult_t chorusGetUniqueId(chorusUniqueId* uniqueId);
chorusResult_t chorusCommInitRank(chorusComm_t* comm, int nranks, chorusUniqueId commId, int rank);
chorusResult_t chorusCommInitRankConfig(chorusComm_t* comm, int nranks, chorusUniqueId commId,
                                        int rank, const chorusConfig_t* config);
chorusResult_t chorusCommInitEnvConfig(chorusComm_t* comm, const chorusConfig_t* config);
/* Progress without waiting: chorusSuccess (idle), chorusInProgress, or the failure. */
chorusResult_t chorusCommGetAsyncError(chorusComm_t comm, chorusResult_t* asyncError);
/* The ranks known to have failed (died, lost their connection, or named by the peer that
 * failed first), ascending, in this communicator's numbering: what to pass to
 * chorusCommShrink. Fills ranks[0 .. min(maxRanks, *failedCount)) and sets *failedCount to
 * how many there are (call with ranks = NULL, maxRanks = 0 to size the array). None
 * (*failedCount = 0) while the communicator has not failed, and when no rank is known to be
 * at fault (a timeout, an abort). */
chorusResult_t chorusCommGetFailedRanks(chorusComm_t comm, int* ranks, int maxRanks,
                                        int* failedCount);
/* The ranks not in excludeRanks form *newcomm (same order); every survivor calls it. */
chorusResult_t chorusCommShrink(chorusComm_t comm, const int* excludeRanks, int excludeCount,
                                chorusComm_t* newcomm);
/* NCCL's ncclCommSplit: every rank of comm calls it; ranks with the same color (>= 0) form
 * *newcomm, numbered by key (ties: rank in comm); CHORUS_SPLIT_NOCOLOR gives *newcomm =
 * NULL. config NULL: comm's blocking mode. */
chorusResult_t chorusCommSplit(chorusComm_t comm, int color, int key, chorusComm_t* newcomm,
                               const chorusConfig_t* config);
/* NCCL's ncclCommInitAll: ndev ranks of one job in this process, comms[i] is rank i.
 * devlist is accepted for NCCL's signature and ignored (host memory); it may be NULL. */
chorusResult_t chorusCommInitAll(chorusComm_t* comms, int ndev, const int* devlist);
/* Growing back (Communicator::grow/joinFromEnv): every member calls chorusCommGrow with the
 * same newcomers count and gets *newcomm with the members and the next newcomers processes
 * that called chorusCommJoinEnv (a replacement chorus-run --respawn started, with
 * CHORUS_REJOIN set), numbered by launch rank. chorusCommPendingJoins says how many wait
 * (rank 0's count is the one to agree on). Timeouts as the communicator's. */
chorusResult_t chorusCommGrow(chorusComm_t comm, int newcomers, chorusComm_t* newcomm);
chorusResult_t chorusCommJoinEnv(chorusComm_t* comm, const chorusConfig_t* config);
chorusResult_t chorusCommPendingJoins(chorusComm_t comm, int* pending);
/* Reads rank, size and rendezvous address from the environment (chorus-run, torchrun, mpirun). */
chorusResult_t chorusCommInitEnv(chorusComm_t* comm);
chorusResult_t chorusCommDestroy(chorusComm_t comm);
chorusResult_t chorusCommAbort(chorusComm_t comm);
chorusResult_t chorusCommCount(const chorusComm_t comm, int* count);
chorusResult_t chorusCommUserRank(const chorusComm_t comm, int* rank);
/* This rank's index among the ranks on its node, and that node's rank count (pick a GPU by
 * local rank mod the node's GPUs). */
chorusResult_t chorusCommLocalRank(const chorusComm_t comm, int* localRank);
chorusResult_t chorusCommLocalSize(const chorusComm_t comm, int* localSize);

chorusResult_t chorusAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm);
chorusResult_t chorusAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               chorusDataType_t datatype, chorusComm_t comm);
chorusResult_t chorusReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm);
chorusResult_t chorusBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               chorusDataType_t datatype, int root, chorusComm_t comm);
chorusResult_t chorusReduce(const void* sendbuff, void* recvbuff, size_t count,
                            chorusDataType_t datatype, chorusRedOp_t op, int root,
                            chorusComm_t comm);
/* count elements per peer; sendbuff and recvbuff hold nranks * count; in-place: equal. */
chorusResult_t chorusAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                              chorusDataType_t datatype, chorusComm_t comm);
chorusResult_t chorusSend(const void* sendbuff, size_t count, chorusDataType_t datatype, int peer,
                          chorusComm_t comm);
chorusResult_t chorusRecv(void* recvbuff, size_t count, chorusDataType_t datatype, int peer,
                          chorusComm_t comm);
/* Root gathers: block r of recvbuff (root only, nranks * sendcount) is rank r's sendbuff. */
chorusResult_t chorusGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            chorusDataType_t datatype, int root, chorusComm_t comm);
/* Root scatters: block r of sendbuff (root only, nranks * recvcount) goes to rank r. */
chorusResult_t chorusScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                             chorusDataType_t datatype, int root, chorusComm_t comm);
/* Per-rank counts (nranks entries, equal on every rank): rank r sends counts[r] elements;
 * recvbuff holds them all packed in rank order. */
chorusResult_t chorusAllGatherV(const void* sendbuff, void* recvbuff, const size_t* counts,
                                chorusDataType_t datatype, chorusComm_t comm);
/* sendbuff holds the sum of counts packed in rank order; rank r receives the reduction of
 * block r (counts[r] elements). */
chorusResult_t chorusReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* counts,
                                    chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm);
/* Returns once every rank of comm has called it. */
chorusResult_t chorusBarrier(chorusComm_t comm);

/* Group calls (NCCL's ncclGroupStart/End), per thread, nestable. Inside a group every call
 * is checked and queued and returns chorusSuccess at once; the outermost chorusGroupEnd
 * starts them all together, so sends and receives to any peers never deadlock and calls
 * on several communicators progress together. It then waits for all of them when every
 * communicator in the group is blocking, else returns chorusInProgress while any runs
 * (chorusCommGetAsyncError drives them). The first failure's code is returned and
 * chorusGetLastError(NULL) names rank, collective and sequence number. */
chorusResult_t chorusGroupStart(void);
chorusResult_t chorusGroupEnd(void);

/* Shared memory that peers map (ncclMemAlloc), huge pages where available; see
 * chorus::memAlloc. chorusMemFree(NULL) does nothing. */
chorusResult_t chorusMemAlloc(void** ptr, size_t size);
chorusResult_t chorusMemFree(void* ptr);
/* Registers a user buffer for the one-sided path (ncclCommRegister); *handle is opaque. */
chorusResult_t chorusCommRegister(const chorusComm_t comm, void* buff, size_t size, void** handle);
chorusResult_t chorusCommDeregister(const chorusComm_t comm, void* handle);

const char* chorusGetErrorString(chorusResult_t result);
/* The message of the last failure on this thread (names rank, peer, collective, sequence). */
const char* chorusGetLastError(chorusComm_t comm);

#ifdef __cplusplus
}
#endif
#endif
