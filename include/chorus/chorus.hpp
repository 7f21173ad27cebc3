// Chorus C++ API: a communicator over a group of ranks and its collectives.
#pragma once

#include <chorus/types.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>

namespace chorus {

enum class DataType : int {
  Int8 = chorusInt8,
  Uint8 = chorusUint8,
  Int32 = chorusInt32,
  Uint32 = chorusUint32,
  Int64 = chorusInt64,
  Uint64 = chorusUint64,
  Float16 = chorusFloat16,
  Float32 = chorusFloat32,
  Float64 = chorusFloat64,
  Bfloat16 = chorusBfloat16,
  Float8e4m3 = chorusFloat8e4m3,
  Float8e5m2 = chorusFloat8e5m2,
};

enum class RedOp : int {
  Sum = chorusSum,
  Prod = chorusProd,
  Max = chorusMax,
  Min = chorusMin,
  Avg = chorusAvg,
};

enum class Result : int {
  Success = chorusSuccess,
  SystemError = chorusSystemError,
  InternalError = chorusInternalError,
  InvalidArgument = chorusInvalidArgument,
  InvalidUsage = chorusInvalidUsage,
  RemoteError = chorusRemoteError,
  InProgress = chorusInProgress,
  Timeout = chorusTimeout,
};

size_t sizeOf(DataType type);  // bytes per element; 0 for an unknown type
const char* toString(DataType type);
const char* toString(RedOp op);
const char* toString(Result result);
bool isValid(DataType type);
bool isValid(RedOp op);

// Every failure surfaces as an Error carrying a result code and a message that names the
// rank, the peer, the collective and its sequence number where they are known.
class Error : public std::runtime_error {
 public:
  Error(Result code, const std::string& what) : std::runtime_error(what), code_(code) {}
  Result code() const { return code_; }

 private:
  Result code_;
};

// 128 opaque bytes (like ncclUniqueId): the rendezvous address and a random job secret.
struct UniqueId {
  std::array<char, 128> bytes{};
};

// Creates a unique id and starts the rendezvous store in the calling process (it lives
// until the process exits). Call it on one process and hand the id to every rank.
UniqueId getUniqueId();

struct Options {
  // Limit on how long any wait may go without progress; CHORUS_TIMEOUT (seconds) sets
  // the default.
  std::chrono::milliseconds timeout{0};  // 0: take CHORUS_TIMEOUT or the built-in default
  // "auto" (shm when every rank shares the host, else CHORUS_NET's network transport),
  // "shm", "tcp", "ib" (verbs) or "ucx" (the last two when built);
  // CHORUS_TRANSPORT sets the default.
  std::string transport;
  // Algorithm choice, NCCL-style: "ring", "allreduce:ring,broadcast:ring"; CHORUS_ALGO.
  std::string algorithm;
  // Same shape, same algorithm and reduction order on every run and after a restart:
  // the tuner's link probe, CHORUS_TUNE_FILE and cost model are left out and the fixed
  // size thresholds decide (a forced algorithm still wins). CHORUS_DETERMINISTIC=1 also
  // sets it. Every rank must agree.
  bool deterministic = false;
};

// Host memory that peers on this machine can map (ncclMemAlloc): memfd shared memory,
// on huge pages where the system has them (hugetlbfs pages, else transparent huge pages
// on shared memory when enabled; CHORUS_DEBUG=INFO and chorus-info say which). Collectives
// whose buffers all lie in such memory on every rank read peers' buffers in place (the
// one-sided path) where that is faster. Throws Error(SystemError) when the memory cannot
// be had, Error(InvalidArgument) for 0 bytes.
void* memAlloc(size_t bytes);
// Frees a memAlloc buffer; nullptr is ignored. Throws Error(InvalidArgument) for a pointer
// memAlloc did not return.
void memFree(void* ptr);
// "hugetlb", "thp" or "4k": the pages memAlloc gets on this machine now.
std::string memPageKind();

namespace detail {
class CommImpl;
struct OpState;
}  // namespace detail

// Handle to one collective in flight. Collectives issued one after another run
// concurrently and need not complete in issue order: a later one may finish first (each
// Work says when its own is done). Every rank must issue them in the same order.
class Work {
 public:
  Work() = default;
  // Drives the collective until it completes (true) or `timeout` passes (false: still in
  // flight, wait again). Throws Error if the collective failed.
  bool wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  // Non-blocking: makes what progress it can; true once complete. Throws on failure.
  bool test();

 private:
  friend class detail::CommImpl;
  Work(std::shared_ptr<detail::CommImpl> comm, std::shared_ptr<detail::OpState> op)
      : comm_(std::move(comm)), op_(std::move(op)) {}
  std::shared_ptr<detail::CommImpl> comm_;
  std::shared_ptr<detail::OpState> op_;
};

class Communicator {
 public:
  // Collective: every rank calls it with the same id and nranks.
  static Communicator init(int rank, int nranks, const UniqueId& id, const Options& options = {});
  // From the environment: CHORUS_RANK/RANK, CHORUS_WORLD_SIZE/WORLD_SIZE,
  // CHORUS_ADDR/MASTER_ADDR, CHORUS_PORT/MASTER_PORT (as chorus-run and torchrun set
  // them), or Open MPI's OMPI_COMM_WORLD_* when started by mpirun.
  static Communicator initFromEnv(const Options& options = {});

  Communicator() = default;
  Communicator(Communicator&&) noexcept = default;
  Communicator& operator=(Communicator&&) noexcept = default;
  ~Communicator();

  int rank() const;
  int size() const;
  explicit operator bool() const { return impl_ != nullptr; }

  // Buffers are host memory. In-place follows NCCL: allReduce/broadcast/reduce with
  // send == recv; allGather with send == recv + rank * sendCount; reduceScatter with
  // recv == send + rank * recvCount.
  Work allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op);
  Work allGather(const void* send, void* recv, size_t sendCount, DataType type);
  Work reduceScatter(const void* send, void* recv, size_t recvCount, DataType type, RedOp op);
  Work broadcast(const void* send, void* recv, size_t count, DataType type, int root);
  Work reduce(const void* send, void* recv, size_t count, DataType type, RedOp op, int root);
  Work send(const void* buf, size_t count, DataType type, int peer);
  Work recv(void* buf, size_t count, DataType type, int peer);
  // All-to-all: `count` elements per peer; send and recv hold size() blocks of `count`
  // elements each, block j of send goes to rank j and block j of recv comes from rank j.
  // In-place with send == recv.
  Work allToAll(const void* send, void* recv, size_t count, DataType type);

  // Registers [buffer, buffer + bytes) of ordinary host memory for the one-sided path
  // (ncclCommRegister): peers read it through the kernel (CMA) instead of through the
  // transport's queues. Returns an opaque handle for deregister. Collectives take the
  // one-sided path only when every rank's buffers are registered (or from memAlloc);
  // a rank whose buffers are not gets a clear error naming the peer that differs.
  // Throws Error(InvalidArgument) for a null buffer, 0 bytes or an overlap with a range
  // already registered. The memory must stay valid until deregistered.
  void* registerBuffer(const void* buffer, size_t bytes);
  // Throws Error(InvalidArgument) for a handle registerBuffer did not return here.
  void deregister(void* handle);

  // Overrides the algorithm choice (same syntax as CHORUS_ALGO); throws on an unknown name.
  void setAlgorithm(std::string_view spec);
  // The algorithm a call would run now (forced, or the tuner's choice), to check the
  // tuner: collective "allreduce", "allgather", "reducescatter", "broadcast", "reduce",
  // "alltoall"; count as the call takes it.
  std::string algorithmFor(std::string_view collective, size_t count, DataType type);
  // Name of the transport in use ("shm", "tcp", "ib" or "ucx").
  std::string transportName() const;
  // Which ranks share a node, as this communicator groups them (host identity, or
  // CHORUS_TOPO_FILE; every rank agrees with rank 0 at creation): "2 nodes: 0-1 | 2-3".
  // The hierarchical algorithms need more than one node with equal rank counts; without
  // that, algorithmFor names the flat algorithm that runs in their place.
  std::string layout() const;
  // Marks the communicator failed; collectives in flight and later ones throw. Safe to
  // call from another thread: a wait in progress returns within ~100 ms.
  void abort();
  // The communicator's state without waiting (ncclCommGetAsyncError): makes what
  // progress it can, then Success when nothing is in flight, InProgress while something
  // is, or the error that failed the communicator (lastError() says what happened).
  Result asyncError();
  std::string lastError() const;
  // A new communicator of the ranks not listed (dead or unwanted), numbered in order:
  // every remaining rank calls it with the same list. Works after a failure; the store
  // must still be up (it lives in rank 0's process unless a launcher hosts it).
  Communicator shrink(std::span<const int> excludeRanks);

 private:
  explicit Communicator(std::shared_ptr<detail::CommImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::CommImpl> impl_;
};

}  // namespace chorus
