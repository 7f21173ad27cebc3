// The NCCL layer's insides: what an ncclComm_t holds, how a call becomes Chorus Works,
// and how errors become ncclResult_t codes with a message for ncclGetLastError.
#pragma once

#include <nccl.h>

#include <chorus/chorus.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

// Every entry point is defined once as nccl<Name> (weak, so a profiler may interpose) and
// exported a second time as pnccl<Name>, an alias of the same code, as NCCL does.
#define NCCL_API(ret, func, ...)                                                            \
  extern "C" __attribute__((visibility("default"))) ret func(__VA_ARGS__);                  \
  extern "C" __attribute__((visibility("default"), alias(#func))) ret p##func(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), weak)) ret func(__VA_ARGS__)

namespace chorus::nccl {

// A pre-multiplied sum made by ncclRedOpCreatePreMulSum: the scalar is copied at creation
// (ncclScalarHostImmediate) or read from `pointer` at each launch (ncclScalarDevice on a
// host pointer).
struct PreMulOp {
  DataType type;
  std::array<std::byte, 8> scalar{};
  const void* pointer = nullptr;
};

// What one call leaves in flight: its Works and the scratch buffers they read.
// Scratch is declared first so that it outlives the Works reading it.
struct InFlight {
  ncclComm_t comm = nullptr;
  std::vector<std::unique_ptr<std::byte[]>> scratch;
  std::vector<Work> works;
};
// Waits for every pending call of comm (errors ignored: a failed op touches no buffer
// again), then forgets them. Before destroying a communicator.
void drainPending(ncclComm_t comm);

// Communicators of one clique made in this process (ncclCommInitAll, or creations grouped
// in one thread). Destroying one waits for its peers, so they are destroyed together,
// each on its own thread, when the last of them is destroyed.
struct Clique {
  std::mutex mutex;
  size_t members = 0;
  std::vector<ncclComm_t> destroyed;
};

}  // namespace chorus::nccl

struct ncclComm {
  chorus::Communicator comm;
  bool blocking = true;
  std::string lastError;
  // Non-blocking creation runs on `initThread`; until it ends, `comm` is empty.
  std::thread initThread;
  std::atomic<bool> initDone{true};
  ncclResult_t initResult = ncclSuccess;
  // Calls that returned ncclInProgress (non-blocking), until ncclCommGetAsyncError or
  // ncclCommFinalize sees them done.
  std::vector<chorus::nccl::InFlight> pending;
  std::vector<std::optional<chorus::nccl::PreMulOp>> preMulOps;
  std::atomic<int> activeCalls{0};  // threads inside a call on this comm (for abort)
  bool finalized = false;
  std::shared_ptr<chorus::nccl::Clique> clique;  // set when created beside its peers
  // Waits for a non-blocking creation to end; throws its error.
  chorus::Communicator& ready();
};

namespace chorus::nccl {

// Error plumbing (errors.cpp). setError records the message for ncclGetLastError.
ncclResult_t setError(ncclComm_t comm, ncclResult_t code, const std::string& message);
ncclResult_t toNccl(Result result);
// Runs body, turning exceptions into codes and messages; `what` names the call.
ncclResult_t guarded(ncclComm_t comm, const char* what, const std::function<void()>& body);
// Counts a thread inside a call on comm, so ncclCommAbort from another thread waits for it.
class CallScope {
 public:
  explicit CallScope(ncclComm_t comm) : comm_(comm) {
    if (comm_) comm_->activeCalls.fetch_add(1);
  }
  ~CallScope() {
    if (comm_) comm_->activeCalls.fetch_sub(1);
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  ncclComm_t comm_;
};

// The Chorus options an ncclConfig_t asks for (null: defaults); reads only what its size
// covers. Throws Error(InvalidArgument) for a config not made by NCCL_CONFIG_INITIALIZER.
struct ConfigChoice {
  bool blocking = true;
  Options options;
};
ConfigChoice readConfig(const ncclConfig_t* config, const char* what);

// Launching calls (group.cpp). A Launch submits one call's work on its communicator.
using Launch = std::function<void(InFlight&)>;
// Inside a group: queues the launch and returns ncclSuccess. Otherwise launches it now
// and completes it as the communicator's mode says.
ncclResult_t enqueue(ncclComm_t comm, const char* what, Launch launch);
// Drives every Work of `calls` to completion (several communicators round-robin).
void complete(std::vector<InFlight>& calls);
bool inGroup();
// Queues a communicator creation for the group's end (ncclCommInitRank inside a group);
// `out` is where it lands.
void enqueueInit(ncclComm_t* out, std::function<ncclResult_t()> init);
// Makes the communicators one clique (see Clique).
void formClique(ncclComm_t* comms, size_t count);

// Memory (memory.cpp): whether `ptr` is device memory (CUDA driver loaded with dlopen when
// present; without a driver every pointer is host memory).
bool isDevicePointer(const void* ptr);
// ncclInvalidUsage naming the buffer when it is device memory (no GPU support built).
void requireHost(const void* ptr, const char* what, const char* which);

// Types and ops (collectives.cpp).
bool validType(ncclDataType_t type);
DataType toChorus(ncclDataType_t type);

}  // namespace chorus::nccl
