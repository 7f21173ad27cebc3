// The communicator's insides: store, transport, engine, algorithm choice, sequence count.
#pragma once

#include "bootstrap/bootstrap.hpp"
#include "comm/algorithm_choice.hpp"
#include "engine/engine.hpp"
#include "memory/shared_memory.hpp"
#include "store/store.hpp"
#include "transports/transport.hpp"
#include "tuner/probe_figures.hpp"
#include "tuner/tuner.hpp"

#include <chorus/chorus.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <set>

namespace chorus::detail {

// The longest this rank's reports to the store (stuck, failed, a failed communicator's
// leaving) wait for it: its host may be cut off, and a report must not hold up the error it
// goes with (the store answers in milliseconds).
constexpr auto kReportBy = std::chrono::seconds(2);

// The longest wait without progress: Options::timeout, else CHORUS_TIMEOUT (seconds), else
// 300 s. Bounds set-up and rendezvous too.
std::chrono::milliseconds timeoutFor(const Options& options);

class CommImpl : public std::enable_shared_from_this<CommImpl> {
 public:
  // `parent`: set when shrinking, growing or joining: the store identities of the members
  // in rank order (the rank each process claimed in the store), the parent's store server,
  // if it hosts one, to keep alive, the store client that holds this process's claim, the
  // new communicator's key prefix and the job's launch size.
  struct Parent {
    std::vector<int> ranks;
    std::shared_ptr<TcpStoreServer> store;
    std::shared_ptr<TcpStoreClient> claim;
    std::string prefix;  // store key prefix of the new communicator ("": the next free one)
    int jobSize = 0;
  };
  static std::shared_ptr<CommImpl> create(int rank, int nranks, const Rendezvous& rendezvous,
                                          bool hostsStore, const Options& options,
                                          const Parent* parent = nullptr,
                                          std::shared_ptr<Store> external = nullptr);
  // A communicator that rendezvouses through a store the caller already has (PyTorch's
  // c10d::Store behind an adapter) instead of Chorus's own TcpStore: no store server, no
  // secret, no dead-rank reports from the store (the transports still notice a dead peer:
  // shm by its pid, tcp by its closed connection). Keys go under "chorus/". Every rank calls
  // it with the same store. Such a communicator cannot shrink.
  static std::shared_ptr<CommImpl> createOnStore(int rank, int nranks, std::shared_ptr<Store> store,
                                                 const Options& options);
  // A communicator of the ranks not in `exclude` (failed or unwanted), numbered in order.
  // The survivors agree first (shrink.cpp): the union of their lists and of the members
  // the store saw die is excluded. Works on a failed communicator.
  std::shared_ptr<CommImpl> shrink(std::span<const int> exclude);
  // Grow (grow.cpp): every member calls grow(n) with the same n; it admits the next n
  // processes that called join() and returns a communicator of the members and them,
  // numbered by launch rank (a replacement takes its predecessor's place). Works on a
  // failed communicator.
  std::shared_ptr<CommImpl> grow(int newcomers);
  // A replacement process of launch rank `jobRank` (of `jobSize`), the `epoch`-th (>= 1):
  // claims its own store identity for that epoch, so that a second process of the same
  // epoch, or one of an older epoch, is refused; then waits until members grow().
  static std::shared_ptr<CommImpl> join(const Rendezvous& rendezvous, int jobRank, int jobSize,
                                        int epoch, const Options& options);
  // Processes that called join() and no grow() admitted yet (a store read; not collective).
  int pendingJoins();
  ~CommImpl();
  // Every rank lives in this process (initAll): destruction skips the barrier with the
  // others, so that one thread may destroy them one after another.
  void setRanksInThisProcess() { ranksInThisProcess_ = true; }
  bool ranksInThisProcess() const { return ranksInThisProcess_; }

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  int localRank() const { return localRank_; }
  int localSize() const { return localSize_; }
  const char* transportName() const { return transport_->name(); }
  Engine& engine() { return *engine_; }
  const AlgorithmChoice& algorithms() const { return algorithms_; }
  // Applies a CHORUS_ALGO-style spec (Communicator::setAlgorithm).
  void setAlgorithm(std::string_view spec);
  const Tuner& tuner() const { return *tuner_; }
  const Layout& layout() const { return layout_; }
  memory::Registrations& registrations() { return registrations_; }
  // Removes a registration and drops what the transport keeps for it (PeerMemory::forget).
  void deregister(void* handle);

  struct Call {
    Collective collective;
    const void* input;
    void* output;
    size_t count;
    DataType type;
    RedOp op;
    int root;                             // or the peer of send/recv
    std::span<const size_t> counts = {};  // the v-collectives' per-rank counts (count: sum)
  };
  // Checks the call and launches it, or queues it in this thread's open group.
  Work submit(const Call& call);
  // A barrier: an all-reduce of one byte the op itself holds.
  Work barrier();
  // Starts a checked, prepared op on the engine (numbering it): submit, or groupEnd.
  void launch(const std::shared_ptr<OpState>& op);
  // split(color, key): NoColor gives null.
  std::shared_ptr<CommImpl> split(int color, int key);
  // What submit would run for this shape (forced, or the tuner's choice).
  const char* algorithmFor(Collective collective, size_t count, DataType type);
  // The staged one-sided algorithm for a call on buffers peers cannot read in place, or
  // nullptr (the copy path's choice stands).
  const Algorithm* stagedFor(Collective collective, size_t count, DataType type,
                             bool log = false) const;
  // How peers would reach these (input, output) registrations in place (the tuner's input).
  Tuner::Reach reach(const std::pair<LocalRegion, LocalRegion>& regions) const;
  // The algorithm that runs when `chosen` is picked: a hierarchical one without a usable
  // layout (one node, unequal nodes) is the flat ring its builder falls back to, and is
  // named so.
  const Algorithm& runnable(const Algorithm& chosen) const;

 private:
  CommImpl(int rank, int nranks) : rank_(rank), nranks_(nranks) {}
  void validate(const Call& call) const;
  std::shared_ptr<OpState> prepare(const Call& call);
  Work queueOrLaunch(std::shared_ptr<OpState> op);
  std::optional<std::pair<LocalRegion, LocalRegion>> exposableBuffers(const Call& call) const;
  // Small all-reduces go through the transport's mailbox when it has one (shm) and no
  // algorithm is forced: the same answer on every rank for the same call. Each rank reads
  // every peer's message, so the bytes a call takes there shrink as ranks grow: 16 KiB at
  // 2 ranks, 8 KiB at 3, 4 KiB to 5, 2 KiB to 9, 1 KiB to 17, 512 B to 32 (np 8 here,
  // 512 B-2 KiB: 44-51 us against 79-215 through a schedule; np 2, 4-16 KiB: 1.1-2.3 us
  // against 2.4-3.5; perf/README, "The mailbox up to 2 KiB" and "Plain messages in the
  // mailbox").
  static constexpr int kMailboxMaxRanks = 32;
  static constexpr size_t kMailboxReadBytes = 16 << 10;  // most peers' data bytes a rank reads
  bool viaMailbox(const Call& call) const;
  std::shared_ptr<OpState> prepareMailbox(const Call& call);
  std::shared_ptr<OpState> mailboxSpare_;  // the last mailbox op, reused once let go
  // A schedule and what the engine derives from it once (rule 6's fold chains), cached
  // per algorithm and shape.
  struct BuiltSchedule {
    std::shared_ptr<const Schedule> schedule;
    std::shared_ptr<const std::vector<bool>> foldsIntoPrevious;
  };
  BuiltSchedule scheduleFor(const Algorithm& algorithm, const Call& call);
  // Tuning (tuning_setup.cpp): rank 0 takes the tune file's entry, or probes the link and
  // times the kernels, or keeps the defaults, and shares the result so that every rank's
  // tuner decides alike.
  // `sliceBytes`: the engine's (CHORUS_SLICE_BYTES), which the tuner's replay pipelines by.
  // `onThisMachine[r]`: rank r runs on this rank's machine (shares its `cores`).
  void setUpTuner(int localRanks, int cores, const std::vector<bool>& onThisMachine,
                  size_t sliceBytes);
  ProbeTimes probeTimes(int peer, int largeRounds);
  double probeExchange(const std::vector<int>& ranks);
  // Failure reports through the store (failure_report.cpp): what this rank failed with,
  // what another rank reported before it died, and at a stall what the awaited peers
  // are doing.
  void reportFailure(const std::string& cause, const std::vector<int>& failedRanks);
  FailureReport reportedFailure(int peer);
  std::string diagnoseStall(const std::string& mine, const std::vector<int>& peers,
                            int unreachable);
  void reportWaiting(const std::string& mine, const std::vector<int>& peers);
  std::optional<PeerSilence> silentHost(int peer);

  int rank_, nranks_;
  int localRank_ = 0, localSize_ = 1;  // among the ranks on this rank's host
  std::chrono::milliseconds timeout_{};
  std::shared_ptr<TcpStoreServer> hostedStore_;
  Rendezvous rendezvous_;
  std::vector<int> parentRanks_;  // shrunk or grown: its members' store identities
  int jobSize_ = 0;               // the launch's rank count (store identity = epoch x it + rank)
  std::string prefix_;            // of this communicator's store keys
  int children_ = 0;              // shrinks and grows of this communicator so far
  // shrink.cpp: the survivors' union of `excluded` (job ranks) and of the members' deaths,
  // agreed through the store under `prefix`; throws when they cannot agree.
  std::set<int> agreeOnExcluded(const std::string& prefix, int self, std::set<int> excluded);
  std::shared_ptr<TcpStoreClient> claim_;  // holds this process's rank in the store
  Options options_;
  std::shared_ptr<TcpStoreClient> storeClient_;
  std::shared_ptr<Store> externalStore_;  // createOnStore: the caller's store
  std::unique_ptr<Store> store_;          // scoped to this communicator
  uint64_t splits_ = 0;                   // split() calls so far (names the children's prefixes)
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Engine> engine_;
  AlgorithmChoice algorithms_;
  Layout layout_;  // which ranks share a node
  std::unique_ptr<Tuner> tuner_;
  memory::Registrations registrations_;  // registerBuffer
  uint64_t nextSequence_ = 0;
  bool ready_ = false;  // every rank finished creation
  bool reportedToLauncher_ = false;
  bool ranksInThisProcess_ = false;
  int launchRank_ = 0;  // this process's rank in the job (CHORUS_RANK), for report files
  std::map<std::tuple<const Algorithm*, size_t, int>, BuiltSchedule> schedules_;
};

}  // namespace chorus::detail
