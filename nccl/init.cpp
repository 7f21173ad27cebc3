// Communicators: creation (one rank, a clique in one process, non-blocking), split,
// finalize, destroy, abort, and what they say about themselves.
#include "nccl/nccl_comm.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

using namespace chorus;
using namespace chorus::nccl;

Communicator& ncclComm::ready() {
  if (initThread.joinable()) initThread.join();  // non-blocking creation: wait for it
  if (initResult != ncclSuccess)
    throw Error(static_cast<Result>(initResult),
                "the communicator's creation failed: " + lastError);
  return comm;
}

namespace chorus::nccl {
namespace {

constexpr unsigned int kConfigMagic = 0xcafebeef;
// The oldest ncclConfig_t (NCCL 2.14): size, magic, version, blocking.
constexpr size_t kConfigMinSize = offsetof(ncclConfig_t, blocking) + sizeof(int);

UniqueId fromNccl(const ncclUniqueId& id) {
  UniqueId out;
  std::memcpy(out.bytes.data(), id.internal, sizeof(id.internal));
  return out;
}

// Creates comm's communicator now (blocking) or on its initThread (non-blocking).
ncclResult_t create(ncclComm_t* out, int nranks, const UniqueId& id, int rank,
                    const ConfigChoice& choice, const char* what) {
  auto* c = new ncclComm;
  c->blocking = choice.blocking;
  if (choice.blocking) {
    ncclResult_t r = guarded(
        nullptr, what, [&] { c->comm = Communicator::init(rank, nranks, id, choice.options); });
    if (r != ncclSuccess) {
      delete c;
      return r;
    }
    *out = c;
    return ncclSuccess;
  }
  c->initDone = false;
  c->initThread = std::thread([c, nranks, id, rank, options = choice.options, what] {
    c->initResult =
        guarded(c, what, [&] { c->comm = Communicator::init(rank, nranks, id, options); });
    c->initDone = true;
  });
  *out = c;
  return ncclInProgress;
}

ncclResult_t initRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                      const ncclConfig_t* config, const char* what) {
  if (!comm) return setError(nullptr, ncclInvalidArgument, std::string(what) + ": comm is null");
  *comm = nullptr;
  ConfigChoice choice;
  if (ncclResult_t r = guarded(nullptr, what, [&] { choice = readConfig(config, what); });
      r != ncclSuccess)
    return r;
  const UniqueId id = fromNccl(commId);
  if (inGroup()) {  // created at the group's end, beside the group's other creations
    choice.blocking = true;
    enqueueInit(comm, [=] { return create(comm, nranks, id, rank, choice, what); });
    return ncclSuccess;
  }
  return create(comm, nranks, id, rank, choice, what);
}

}  // namespace

ConfigChoice readConfig(const ncclConfig_t* config, const char* what) {
  ConfigChoice choice;
  if (!config) return choice;
  if (config->size < kConfigMinSize || config->magic != kConfigMagic)
    throw Error(Result::InvalidArgument,
                "the ncclConfig_t was not initialised with NCCL_CONFIG_INITIALIZER (size " +
                    std::to_string(config->size) + ", magic " + std::to_string(config->magic) +
                    ")");
  if (config->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1)
      throw Error(Result::InvalidArgument,
                  "config.blocking must be 0 or 1, got " + std::to_string(config->blocking));
    choice.blocking = config->blocking == 1;
  }
  return choice;
}

void drainPending(ncclComm_t comm) {
  for (auto& f : comm->pending)
    for (auto& w : f.works) {
      try {
        w.wait();
      } catch (const std::exception&) {
      }
    }
  comm->pending.clear();
}

}  // namespace chorus::nccl

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (!version) return setError(nullptr, ncclInvalidArgument, "ncclGetVersion: version is null");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  if (!uniqueId) return setError(nullptr, ncclInvalidArgument, "ncclGetUniqueId: uniqueId is null");
  return guarded(nullptr, "ncclGetUniqueId", [&] {
    UniqueId id = getUniqueId();
    std::memcpy(uniqueId->internal, id.bytes.data(), sizeof(uniqueId->internal));
  });
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank) {
  return initRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
         int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || !commIds)
    return setError(nullptr, ncclInvalidArgument,
                    "ncclCommInitRankScalable: needs nId >= 1 ids, got " + std::to_string(nId));
  // NCCL spreads its bootstrap over several roots; Chorus's store takes them all at one.
  return initRank(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms || ndev < 1)
    return setError(
        nullptr, ncclInvalidArgument,
        "ncclCommInitAll: needs a comm array and ndev >= 1, got ndev " + std::to_string(ndev));
  // devlist names CUDA devices; on host memory every rank is a thread of this process.
  return guarded(nullptr, "ncclCommInitAll", [&] {
    std::vector<Communicator> all = Communicator::initAll(ndev);
    for (int i = 0; i < ndev; ++i) {
      comms[i] = new ncclComm;
      comms[i]->comm = std::move(all[i]);
    }
  });
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  if (!comm || !newcomm)
    return setError(comm, ncclInvalidArgument, "ncclCommSplit: comm or newcomm is null");
  *newcomm = nullptr;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return setError(
        comm, ncclInvalidArgument,
        "ncclCommSplit: color must be >= 0 or NCCL_SPLIT_NOCOLOR, got " + std::to_string(color));
  CallScope scope(comm);
  return guarded(comm, "ncclCommSplit", [&] {
    ConfigChoice choice;
    choice.blocking = comm->blocking;  // a null config inherits the parent's
    if (config) choice = readConfig(config, "ncclCommSplit");
    // Chorus's split: the parent's store and secret, colors exchanged over its connections.
    Communicator child = comm->ready().split(color, key);
    if (!child) return;  // NCCL_SPLIT_NOCOLOR
    *newcomm = new ncclComm;
    (*newcomm)->comm = std::move(child);
    (*newcomm)->blocking = choice.blocking;
  });
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  if (!comm) return ncclSuccess;  // as NCCL: nothing to finalize
  if (comm->finalized)
    return setError(comm, ncclInvalidArgument,
                    "ncclCommFinalize: this communicator was finalized already");
  CallScope scope(comm);
  ncclResult_t state = ncclSuccess;
  ncclResult_t r = guarded(comm, "ncclCommFinalize", [&] {
    Communicator& c = comm->ready();
    if (comm->blocking) {
      complete(comm->pending);
      comm->pending.clear();
    }
    state = toNccl(c.asyncError());
    if (state == ncclSuccess) comm->pending.clear();
    if (state != ncclSuccess && state != ncclInProgress)
      throw Error(static_cast<Result>(state), c.lastError());
  });
  comm->finalized = true;
  return r != ncclSuccess ? r : state;
}

namespace {

void release(ncclComm_t comm) {
  drainPending(comm);
  delete comm;  // the communicator's destruction waits for its peers (with a deadline)
}

// Destroys comm, or, for a member of a clique, waits until every member is destroyed and
// then releases them all at once: one thread could not release them one after another.
void destroy(ncclComm_t comm) {
  if (comm->initThread.joinable()) comm->initThread.join();
  std::shared_ptr<Clique> clique = comm->clique;
  if (!clique) return release(comm);
  std::vector<ncclComm_t> all;
  {
    std::lock_guard lock(clique->mutex);
    clique->destroyed.push_back(comm);
    if (clique->destroyed.size() < clique->members) return;
    all = std::move(clique->destroyed);
  }
  std::vector<std::thread> threads;
  for (ncclComm_t c : all) threads.emplace_back([c] { release(c); });
  for (auto& t : threads) t.join();
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (!comm) return ncclSuccess;  // as NCCL
  destroy(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (!comm) return ncclSuccess;                             // as NCCL
  if (comm->initThread.joinable()) comm->initThread.join();  // creation cannot be cut short
  if (comm->comm) comm->comm.abort();  // thread-safe: a wait elsewhere returns in ~100 ms
  // Another thread may still be inside a call on comm: let it leave before freeing.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (comm->activeCalls.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (comm->activeCalls.load() > 0)
    return setError(nullptr, ncclInternalError,
                    "ncclCommAbort: another thread stayed inside a call on this communicator for "
                    "30 s after the abort; the communicator is aborted but not freed");
  destroy(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  if (!comm || !asyncError)
    return setError(comm, ncclInvalidArgument, "ncclCommGetAsyncError: comm or asyncError is null");
  if (!comm->initDone) {
    *asyncError = ncclInProgress;
    return ncclSuccess;
  }
  CallScope scope(comm);
  return guarded(comm, "ncclCommGetAsyncError", [&] {
    if (comm->initThread.joinable()) comm->initThread.join();
    if (comm->initResult != ncclSuccess) {
      *asyncError = comm->initResult;
      return;
    }
    *asyncError = toNccl(comm->comm.asyncError());
    if (*asyncError == ncclSuccess) {
      comm->pending.clear();  // every op is done: their scratch can go
    } else if (*asyncError != ncclInProgress) {
      setError(comm, *asyncError, comm->comm.lastError());
    }
  });
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  if (!comm || !count) return setError(comm, ncclInvalidArgument, "ncclCommCount: null argument");
  return guarded(comm, "ncclCommCount", [&] { *count = comm->ready().size(); });
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return setError(comm, ncclInvalidArgument, "ncclCommUserRank: null argument");
  return guarded(comm, "ncclCommUserRank", [&] { *rank = comm->ready().rank(); });
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  if (!comm || !device)
    return setError(comm, ncclInvalidArgument, "ncclCommCuDevice: null argument");
  *device = -1;
  return setError(comm, ncclInvalidUsage,
                  "ncclCommCuDevice: this communicator has no CUDA device: the library (Chorus) "
                  "was built without GPU support and runs on host memory");
}
