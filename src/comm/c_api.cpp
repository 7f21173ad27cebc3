// The C API (chorus.h): calls block until done (or, on a non-blocking communicator, return
// chorusInProgress) and turn exceptions into codes.
#include <chorus/chorus.h>

#include <chorus/chorus.hpp>

#include <cstring>
#include <string>
#include <vector>

struct chorusComm {
  chorus::Communicator comm;
  std::string lastError;
  bool blocking = true;
  std::vector<int> lastFailedRanks;  // of the last call that failed on this communicator
};

namespace {

thread_local std::string lastError;
// Inside a group: whether a non-blocking communicator made a call (groupEnd then does
// not wait), and the first failure of a queued call.
thread_local bool groupNonBlocking = false;

template <typename F>
chorusResult_t guarded(chorusComm_t comm, F&& body) {
  try {
    body();
    return chorusSuccess;
  } catch (const chorus::Error& e) {
    lastError = e.what();
    if (comm) comm->lastError = e.what(), comm->lastFailedRanks = e.failedRanks();
    return static_cast<chorusResult_t>(e.code());
  } catch (const std::bad_alloc&) {
    lastError = "out of memory";
    return chorusSystemError;
  } catch (const std::exception& e) {
    lastError = e.what();
    if (comm) comm->lastError = e.what();
    return chorusInternalError;
  }
}

chorusResult_t invalid(const char* what) {
  lastError = what;
  return chorusInvalidArgument;
}

chorus::DataType typeOf(chorusDataType_t t) { return static_cast<chorus::DataType>(t); }
chorus::RedOp opOf(chorusRedOp_t o) { return static_cast<chorus::RedOp>(o); }

}  // namespace

extern "C" {

chorusResult_t chorusGetVersion(int* version) {
  if (!version) return invalid("chorusGetVersion: version is null");
  *version = CHORUS_VERSION_CODE;
  return chorusSuccess;
}

chorusResult_t chorusGetUniqueId(chorusUniqueId* uniqueId) {
  if (!uniqueId) return invalid("chorusGetUniqueId: uniqueId is null");
  return guarded(nullptr, [&] {
    chorus::UniqueId id = chorus::getUniqueId();
    std::memcpy(uniqueId->internal, id.bytes.data(), sizeof(uniqueId->internal));
  });
}

chorusResult_t chorusCommInitRank(chorusComm_t* comm, int nranks, chorusUniqueId commId, int rank) {
  if (!comm) return invalid("chorusCommInitRank: comm is null");
  *comm = nullptr;
  return guarded(nullptr, [&] {
    chorus::UniqueId id;
    std::memcpy(id.bytes.data(), commId.internal, sizeof(commId.internal));
    auto c = chorus::Communicator::init(rank, nranks, id);
    *comm = new chorusComm{std::move(c), {}, true, {}};
  });
}

chorusResult_t chorusCommInitRankConfig(chorusComm_t* comm, int nranks, chorusUniqueId commId,
                                        int rank, const chorusConfig_t* config) {
  chorusResult_t r = chorusCommInitRank(comm, nranks, commId, rank);
  if (r == chorusSuccess && config) (*comm)->blocking = config->blocking != 0;
  return r;
}

chorusResult_t chorusCommInitEnvConfig(chorusComm_t* comm, const chorusConfig_t* config) {
  chorusResult_t r = chorusCommInitEnv(comm);
  if (r == chorusSuccess && config) (*comm)->blocking = config->blocking != 0;
  return r;
}

chorusResult_t chorusCommGetAsyncError(chorusComm_t comm, chorusResult_t* asyncError) {
  if (!comm || !asyncError) return invalid("chorusCommGetAsyncError: null argument");
  return guarded(comm, [&] {
    *asyncError = static_cast<chorusResult_t>(comm->comm.asyncError());
    if (*asyncError != chorusSuccess && *asyncError != chorusInProgress)
      lastError = comm->lastError = comm->comm.lastError();
  });
}

chorusResult_t chorusCommGetFailedRanks(chorusComm_t comm, int* ranks, int maxRanks,
                                        int* failedCount) {
  if (!comm || !failedCount || maxRanks < 0 || (maxRanks > 0 && !ranks))
    return invalid("chorusCommGetFailedRanks: null or negative argument");
  return guarded(comm, [&] {
    std::vector<int> failed = comm->comm.failedRanks();
    if (failed.empty()) failed = comm->lastFailedRanks;
    *failedCount = static_cast<int>(failed.size());
    for (int i = 0; i < maxRanks && i < *failedCount; ++i) ranks[i] = failed[i];
  });
}

chorusResult_t chorusCommShrink(chorusComm_t comm, const int* excludeRanks, int excludeCount,
                                chorusComm_t* newcomm) {
  if (!comm || !newcomm || (excludeCount > 0 && !excludeRanks) || excludeCount < 0)
    return invalid("chorusCommShrink: null or negative argument");
  *newcomm = nullptr;
  return guarded(comm, [&] {
    auto shrunk = comm->comm.shrink(std::span<const int>(excludeRanks, excludeCount));
    *newcomm = new chorusComm{std::move(shrunk), {}, comm->blocking, {}};
  });
}

chorusResult_t chorusCommGrow(chorusComm_t comm, int newcomers, chorusComm_t* newcomm) {
  if (!comm || !newcomm) return invalid("chorusCommGrow: null argument");
  *newcomm = nullptr;
  return guarded(comm, [&] {
    auto grown = comm->comm.grow(newcomers);
    *newcomm = new chorusComm{std::move(grown), {}, comm->blocking, {}};
  });
}

chorusResult_t chorusCommJoinEnv(chorusComm_t* comm, const chorusConfig_t* config) {
  if (!comm) return invalid("chorusCommJoinEnv: comm is null");
  *comm = nullptr;
  return guarded(nullptr, [&] {
    *comm =
        new chorusComm{chorus::Communicator::joinFromEnv(), {}, !config || config->blocking, {}};
  });
}

chorusResult_t chorusCommPendingJoins(chorusComm_t comm, int* pending) {
  if (!comm || !pending) return invalid("chorusCommPendingJoins: null argument");
  return guarded(comm, [&] { *pending = comm->comm.pendingJoins(); });
}

chorusResult_t chorusCommInitEnv(chorusComm_t* comm) {
  if (!comm) return invalid("chorusCommInitEnv: comm is null");
  *comm = nullptr;
  return guarded(nullptr, [&] {
    *comm = new chorusComm{chorus::Communicator::initFromEnv(), {}, true, {}};
  });
}

chorusResult_t chorusCommDestroy(chorusComm_t comm) {
  if (!comm) return invalid("chorusCommDestroy: comm is null");
  delete comm;
  return chorusSuccess;
}

chorusResult_t chorusCommAbort(chorusComm_t comm) {
  if (!comm) return invalid("chorusCommAbort: comm is null");
  return guarded(comm, [&] { comm->comm.abort(); });
}

chorusResult_t chorusCommCount(const chorusComm_t comm, int* count) {
  if (!comm || !count) return invalid("chorusCommCount: null argument");
  *count = comm->comm.size();
  return chorusSuccess;
}

chorusResult_t chorusCommUserRank(const chorusComm_t comm, int* rank) {
  if (!comm || !rank) return invalid("chorusCommUserRank: null argument");
  *rank = comm->comm.rank();
  return chorusSuccess;
}

chorusResult_t chorusCommLocalRank(const chorusComm_t comm, int* localRank) {
  if (!comm || !localRank) return invalid("chorusCommLocalRank: null argument");
  *localRank = comm->comm.localRank();
  return chorusSuccess;
}

chorusResult_t chorusCommLocalSize(const chorusComm_t comm, int* localSize) {
  if (!comm || !localSize) return invalid("chorusCommLocalSize: null argument");
  *localSize = comm->comm.localSize();
  return chorusSuccess;
}

chorusResult_t chorusMemAlloc(void** ptr, size_t size) {
  if (!ptr) return invalid("chorusMemAlloc: ptr is null");
  *ptr = nullptr;
  return guarded(nullptr, [&] { *ptr = chorus::memAlloc(size); });
}

chorusResult_t chorusMemFree(void* ptr) {
  return guarded(nullptr, [&] { chorus::memFree(ptr); });
}

chorusResult_t chorusCommRegister(const chorusComm_t comm, void* buff, size_t size, void** handle) {
  if (!comm || !handle) return invalid("chorusCommRegister: null communicator or handle");
  *handle = nullptr;
  return guarded(comm, [&] { *handle = comm->comm.registerBuffer(buff, size); });
}

chorusResult_t chorusCommDeregister(const chorusComm_t comm, void* handle) {
  if (!comm) return invalid("chorusCommDeregister: communicator is null");
  return guarded(comm, [&] { comm->comm.deregister(handle); });
}

// Blocking: waits for the call. Non-blocking: one progress pass, then chorusInProgress
// unless it completed; chorusCommGetAsyncError reports the rest. Inside a group: queued,
// chorusGroupEnd starts it.
#define CHORUS_BLOCKING(comm, call)                            \
  do {                                                         \
    if (!(comm)) return invalid("null communicator");          \
    bool done = true;                                          \
    chorusResult_t r = guarded((comm), [&] {                   \
      chorus::Work w = (comm)->comm.call;                      \
      if (chorus::groupDepth() > 0)                            \
        groupNonBlocking |= !(comm)->blocking;                 \
      else if ((comm)->blocking)                               \
        w.wait();                                              \
      else                                                     \
        done = w.test();                                       \
    });                                                        \
    return r == chorusSuccess && !done ? chorusInProgress : r; \
  } while (0)

chorusResult_t chorusAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm) {
  CHORUS_BLOCKING(comm, allReduce(sendbuff, recvbuff, count, typeOf(datatype), opOf(op)));
}
chorusResult_t chorusAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               chorusDataType_t datatype, chorusComm_t comm) {
  CHORUS_BLOCKING(comm, allGather(sendbuff, recvbuff, sendcount, typeOf(datatype)));
}
chorusResult_t chorusReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm) {
  CHORUS_BLOCKING(comm, reduceScatter(sendbuff, recvbuff, recvcount, typeOf(datatype), opOf(op)));
}
chorusResult_t chorusBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               chorusDataType_t datatype, int root, chorusComm_t comm) {
  CHORUS_BLOCKING(comm, broadcast(sendbuff, recvbuff, count, typeOf(datatype), root));
}
chorusResult_t chorusReduce(const void* sendbuff, void* recvbuff, size_t count,
                            chorusDataType_t datatype, chorusRedOp_t op, int root,
                            chorusComm_t comm) {
  CHORUS_BLOCKING(comm, reduce(sendbuff, recvbuff, count, typeOf(datatype), opOf(op), root));
}
chorusResult_t chorusAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                              chorusDataType_t datatype, chorusComm_t comm) {
  CHORUS_BLOCKING(comm, allToAll(sendbuff, recvbuff, count, typeOf(datatype)));
}
chorusResult_t chorusSend(const void* sendbuff, size_t count, chorusDataType_t datatype, int peer,
                          chorusComm_t comm) {
  CHORUS_BLOCKING(comm, send(sendbuff, count, typeOf(datatype), peer));
}
chorusResult_t chorusRecv(void* recvbuff, size_t count, chorusDataType_t datatype, int peer,
                          chorusComm_t comm) {
  CHORUS_BLOCKING(comm, recv(recvbuff, count, typeOf(datatype), peer));
}

chorusResult_t chorusGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            chorusDataType_t datatype, int root, chorusComm_t comm) {
  CHORUS_BLOCKING(comm, gather(sendbuff, recvbuff, sendcount, typeOf(datatype), root));
}
chorusResult_t chorusScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                             chorusDataType_t datatype, int root, chorusComm_t comm) {
  CHORUS_BLOCKING(comm, scatter(sendbuff, recvbuff, recvcount, typeOf(datatype), root));
}
chorusResult_t chorusAllGatherV(const void* sendbuff, void* recvbuff, const size_t* counts,
                                chorusDataType_t datatype, chorusComm_t comm) {
  if (!counts) return invalid("chorusAllGatherV: counts is null");
  CHORUS_BLOCKING(comm,
                  allGatherV(sendbuff, recvbuff, std::span<const size_t>(counts, comm->comm.size()),
                             typeOf(datatype)));
}
chorusResult_t chorusReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* counts,
                                    chorusDataType_t datatype, chorusRedOp_t op,
                                    chorusComm_t comm) {
  if (!counts) return invalid("chorusReduceScatterV: counts is null");
  CHORUS_BLOCKING(
      comm, reduceScatterV(sendbuff, recvbuff, std::span<const size_t>(counts, comm->comm.size()),
                           typeOf(datatype), opOf(op)));
}
chorusResult_t chorusBarrier(chorusComm_t comm) { CHORUS_BLOCKING(comm, barrier()); }

chorusResult_t chorusGroupStart(void) {
  return guarded(nullptr, [] {
    if (chorus::groupDepth() == 0) groupNonBlocking = false;
    chorus::groupStart();
  });
}

chorusResult_t chorusGroupEnd(void) {
  bool done = true;
  chorusResult_t r = guarded(nullptr, [&] {
    chorus::Work w = chorus::groupEnd();
    if (chorus::groupDepth() > 0) return;  // an inner level: nothing starts yet
    if (groupNonBlocking)
      done = w.test();
    else
      w.wait();
  });
  return r == chorusSuccess && !done ? chorusInProgress : r;
}

chorusResult_t chorusCommSplit(chorusComm_t comm, int color, int key, chorusComm_t* newcomm,
                               const chorusConfig_t* config) {
  if (!comm || !newcomm) return invalid("chorusCommSplit: null argument");
  *newcomm = nullptr;
  return guarded(comm, [&] {
    chorus::Communicator part = comm->comm.split(color, key);
    if (part)
      *newcomm =
          new chorusComm{std::move(part), {}, config ? config->blocking != 0 : comm->blocking};
  });
}

chorusResult_t chorusCommInitAll(chorusComm_t* comms, int ndev, const int* devlist) {
  (void)devlist;  // host memory: no devices to pick
  if (!comms || ndev < 1) return invalid("chorusCommInitAll: null comms or ndev < 1");
  return guarded(nullptr, [&] {
    std::vector<chorus::Communicator> all = chorus::Communicator::initAll(ndev);
    for (int i = 0; i < ndev; ++i) comms[i] = new chorusComm{std::move(all[i]), {}, true};
  });
}

const char* chorusGetErrorString(chorusResult_t result) {
  return chorus::toString(static_cast<chorus::Result>(result));
}

const char* chorusGetLastError(chorusComm_t comm) {
  if (comm && !comm->lastError.empty()) return comm->lastError.c_str();
  return lastError.c_str();
}

}  // extern "C"
