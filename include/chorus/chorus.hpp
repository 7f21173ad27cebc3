// Chorus C++ API: a communicator over a group of ranks and its collectives.
#pragma once

#include <chorus/types.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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
  Error(Result code, const std::string& what, std::vector<int> failedRanks = {})
      : std::runtime_error(what), code_(code), failedRanks_(std::move(failedRanks)) {}
  Result code() const { return code_; }
  // The ranks (in the failing communicator's numbering, ascending) known to have failed:
  // died, lost their connection, or reported by a peer that failed because of them. What
  // shrink() should exclude. Empty when no rank is known to be at fault (a timeout: the
  // message says which rank never arrived, but it may be slow rather than dead; an abort;
  // bad input).
  const std::vector<int>& failedRanks() const { return failedRanks_; }

 private:
  Result code_;
  std::vector<int> failedRanks_;
};

// 128 opaque bytes (like ncclUniqueId): the rendezvous address and a random job secret.
struct UniqueId {
  std::array<char, 128> bytes{};
};

// Creates a unique id and starts the rendezvous store in the calling process (it lives
// until the process exits). Call it on one process and hand the id to every rank.
// With CHORUS_COMM_ID (or NCCL_COMM_ID) = host:port, every process gets the same id
// without handing it around, and rank 0 hosts the store at that address when the
// communicator is created (one such communicator at a time).
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
struct GroupState;
}  // namespace detail

// Communicator::split's color for a rank that joins no sub-communicator (NCCL's
// NCCL_SPLIT_NOCOLOR).
inline constexpr int NoColor = -1;

// Handle to one collective in flight, or to every call of a group (groupEnd). Collectives
// issued one after another run concurrently and need not complete in issue order: a later
// one may finish first (each Work says when its own is done). Every rank must issue them
// in the same order.
class Work {
 public:
  Work() = default;
  // Drives the collective until it completes (true) or `timeout` passes (false: still in
  // flight, wait again). Throws Error if the collective failed.
  bool wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  // Non-blocking: makes what progress it can; true once complete. Throws on failure.
  bool test();
  // The algorithm the engine runs (or ran) for this call, as algorithmFor and CHORUS_ALGO
  // name them ("ring", "peer_twoshot", "mailbox", ...): the tuner's choice for these
  // buffers, or the forced one. Known from the start, also for a call already complete;
  // "group" for the Work groupEnd returns. Throws Error(InvalidUsage) on an empty Work.
  std::string algorithm() const;

 private:
  friend class detail::CommImpl;
  friend Work groupEnd();
  Work(std::shared_ptr<detail::CommImpl> comm, std::shared_ptr<detail::OpState> op,
       std::shared_ptr<detail::GroupState> group = nullptr)
      : comm_(std::move(comm)), op_(std::move(op)), group_(std::move(group)) {}
  std::shared_ptr<detail::CommImpl> comm_;
  std::shared_ptr<detail::OpState> op_;
  // Calls made inside a group and the Work groupEnd returns: waiting drives every
  // communicator of the group (they may need each other, e.g. ranks of one process).
  std::shared_ptr<detail::GroupState> group_;
};

// Group calls, NCCL's ncclGroupStart/ncclGroupEnd, per thread and nestable. Between
// groupStart() and the outermost groupEnd(), every call on any communicator is checked
// (bad arguments throw at once) and queued, not started; its Work cannot be waited on
// yet (Error InvalidUsage). The outermost groupEnd() starts them all together and returns
// one Work that completes when every one of them has; each call's own Work works too.
// So sends and receives to any set of peers never deadlock, whatever their sizes and
// order, and collectives on several communicators of this process (initAll) progress
// together. At launch each communicator runs the group's collectives in issue order, then
// its sends and receives in issue order: ranks need not agree on how the two interleave,
// only on the order of the collectives and of the messages between each pair of ranks.
// An inner groupEnd() only closes its level and returns a Work for the whole group.
void groupStart();
Work groupEnd();
// How deep this thread is inside groups (0: none).
int groupDepth();

// A group as an object: starts one on construction; end() ends it (groupEnd). If it is
// destroyed without end(), the queued calls are dropped unstarted (their Works throw) and
// the group is closed, as when an exception leaves it.
class Group {
 public:
  Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  ~Group();
  Work end();

 private:
  bool open_ = true;
};

// Runs `calls` inside a group and ends it: group([&] { comm.send(...); comm.recv(...); })
// .wait(). If `calls` throws, nothing it queued starts and the exception passes on.
Work group(const std::function<void()>& calls);

class Communicator {
 public:
  // Collective: every rank calls it with the same id and nranks.
  static Communicator init(int rank, int nranks, const UniqueId& id, const Options& options = {});
  // From the environment: CHORUS_RANK/RANK, CHORUS_WORLD_SIZE/WORLD_SIZE,
  // CHORUS_ADDR/MASTER_ADDR, CHORUS_PORT/MASTER_PORT (as chorus-run and torchrun set
  // them), or Open MPI's OMPI_COMM_WORLD_* when started by mpirun.
  static Communicator initFromEnv(const Options& options = {});
  // Several ranks in this process (ncclCommInitAll): nranks communicators of one job,
  // ranks 0..nranks-1, created together (one thread each; the rendezvous store lives in
  // this process). Each may then be driven from its own thread, or all from one thread
  // through groups.
  static std::vector<Communicator> initAll(int nranks, const Options& options = {});

  Communicator() = default;
  Communicator(Communicator&&) noexcept = default;
  Communicator& operator=(Communicator&&) noexcept = default;
  ~Communicator();

  int rank() const;
  int size() const;
  // This rank's index among the ranks on its node (its host, as the library groups ranks
  // for shared memory), in rank order, and how many ranks that node has. Taken from the
  // ranks' own reports at init, not from a launcher's variables, so it holds however the
  // job was started and after a shrink or grow. A GPU program picks its device by it
  // (localRank() mod the node's GPUs), as NCCL programs do with their launcher's local rank.
  int localRank() const;
  int localSize() const;
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
  // Gather: rank r's `sendCount` elements land in block r of the root's recv (size() x
  // sendCount); recv is used on the root only. In-place: send == recv + rank * sendCount
  // on the root.
  Work gather(const void* send, void* recv, size_t sendCount, DataType type, int root);
  // Scatter: block r of the root's send (size() x recvCount) lands in rank r's recv; send
  // is used on the root only. In-place: recv == send + rank * recvCount on the root.
  Work scatter(const void* send, void* recv, size_t recvCount, DataType type, int root);
  // All-gather with per-rank counts (PyTorch's uneven all_gather): counts has size()
  // entries, the same on every rank; rank r contributes counts[r] elements (its send
  // holds counts[rank()]) and recv holds them all packed in rank order (block r at the
  // sum of counts[0..r)). In-place: send == recv + that offset of this rank.
  Work allGatherV(const void* send, void* recv, std::span<const size_t> counts, DataType type);
  // Reduce-scatter with per-rank counts (FSDP's uneven shards): send holds the sum of
  // counts, packed in rank order; rank r receives the reduction of block r (counts[r]
  // elements). In-place: recv == send + this rank's offset.
  Work reduceScatterV(const void* send, void* recv, std::span<const size_t> counts, DataType type,
                      RedOp op);
  // Completes once every rank has called it (a collective; Work as any other).
  Work barrier();
  // chorus::group(calls), for calls on this communicator (or any other).
  Work group(const std::function<void()>& calls);

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
  // The algorithm a call on ordinary (not registered) buffers would run now (forced, or
  // the tuner's choice), to check the tuner; registered buffers may take a one-sided
  // algorithm instead, which Work::algorithm() names. Collective "allreduce", "allgather",
  // "reducescatter", "broadcast", "reduce", "alltoall"; count as the call takes it.
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
  // The failed ranks of the error that failed the communicator (Error::failedRanks); empty
  // while it has not failed.
  std::vector<int> failedRanks() const;
  // A new communicator of the ranks not listed (dead or unwanted), numbered in order:
  // every remaining rank calls it. Ranks that learnt of different deaths (two ranks dying
  // at once) may pass different lists: the survivors exclude the union of their lists and
  // of the members the store saw die; Error(InvalidUsage) if they still disagree (or one
  // of them is excluded by another), Error(Timeout) naming the members that neither called
  // shrink nor died. Works after a failure; the store must still be up (it lives in rank
  // 0's process unless a launcher hosts it).
  Communicator shrink(std::span<const int> excludeRanks);
  // NCCL's ncclCommSplit: every rank of this communicator calls it; the ranks that pass
  // the same color (>= 0) form a new communicator, numbered by key, ties by their rank
  // here. A rank passing NoColor joins none and gets an empty Communicator (false).
  // The new one shares this one's rendezvous store and job secret (no new store, no new
  // listening port) and exchanges colors over this communicator's connections; it opens
  // its own transport connections among its members, so both may be used at once.
  // Options (timeout, transport, algorithm) are this communicator's.
  Communicator split(int color, int key);
  // Growing back after a shrink. A replacement process (chorus-run --respawn starts one
  // with CHORUS_REJOIN=<epoch>) calls joinFromEnv(); the members call grow(n), every one
  // with the same n, which admits the next n processes that joined. Both return the new
  // communicator: members and newcomers numbered by launch rank, so a replacement takes its
  // predecessor's place. grow() works on a failed communicator; both wait at most the
  // timeout (Options, CHORUS_TIMEOUT) and then throw Error(Timeout) saying who is missing.
  // Each replacement of a launch rank has a higher epoch; a second process with the same
  // epoch, or one of an older epoch, is refused (Error(InvalidUsage)), and a launch rank
  // still held by a member cannot join again. Needs a store that outlives the ranks
  // (chorus-run's, or the process of getUniqueId while it lives).
  Communicator grow(int newcomers);
  static Communicator joinFromEnv(const Options& options = {});
  // How many processes have joined and wait for a grow() (a store read, not collective:
  // ranks may see different counts; agree on one, e.g. rank 0's by broadcast).
  int pendingJoins();

 private:
  explicit Communicator(std::shared_ptr<detail::CommImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::CommImpl> impl_;
};

}  // namespace chorus
