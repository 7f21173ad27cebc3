// The communicator's insides: store, transport, engine, algorithm choice, sequence count.
#pragma once

#include "bootstrap/bootstrap.hpp"
#include "comm/algorithm_choice.hpp"
#include "engine/engine.hpp"
#include "store/store.hpp"
#include "transports/transport.hpp"
#include "tuner/tuner.hpp"

#include <chorus/chorus.hpp>

#include <map>
#include <memory>
#include <mutex>

namespace chorus::detail {

// The longest wait without progress: Options::timeout, else CHORUS_TIMEOUT (seconds), else
// 300 s. Bounds set-up and rendezvous too.
std::chrono::milliseconds timeoutFor(const Options& options);

class CommImpl : public std::enable_shared_from_this<CommImpl> {
 public:
  // `parent`: set when shrinking, the ranks of the parent communicator that form this
  // one (in order) and the parent's store server, if it hosts one, to keep alive.
  struct Parent {
    std::vector<int> ranks;
    std::shared_ptr<TcpStoreServer> store;
    std::string prefix;  // store key prefix of the new communicator ("": the next free one)
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
  // A communicator of the ranks not in `exclude` (failed or unwanted), numbered in order;
  // every survivor calls it with the same list. Works on a failed communicator.
  std::shared_ptr<CommImpl> shrink(std::span<const int> exclude);
  ~CommImpl();
  // Every rank lives in this process (initAll): destruction skips the barrier with the
  // others, so that one thread may destroy them one after another.
  void setRanksInThisProcess() { ranksInThisProcess_ = true; }

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const char* transportName() const { return transport_->name(); }
  Engine& engine() { return *engine_; }
  const AlgorithmChoice& algorithms() const { return algorithms_; }
  // Applies a CHORUS_ALGO-style spec (Communicator::setAlgorithm).
  void setAlgorithm(std::string_view spec);
  const Tuner& tuner() const { return *tuner_; }
  const Layout& layout() const { return layout_; }

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
  // The algorithm that runs when `chosen` is picked: a hierarchical one without a usable
  // layout (one node, unequal nodes) is the flat ring its builder falls back to, and is
  // named so.
  const Algorithm& runnable(const Algorithm& chosen) const;

 private:
  CommImpl(int rank, int nranks) : rank_(rank), nranks_(nranks) {}
  void validate(const Call& call) const;
  std::shared_ptr<OpState> prepare(const Call& call);
  Work queueOrLaunch(std::shared_ptr<OpState> op);
  std::shared_ptr<const Schedule> scheduleFor(const Algorithm& algorithm, const Call& call);
  // Tuning (tuning_setup.cpp): rank 0 takes the tune file's entry, or probes the link and
  // times the kernels, or keeps the defaults, and shares the result so that every rank's
  // tuner decides alike.
  void setUpTuner(int localRanks, int cores);
  LinkModel probeLink(int peer);
  // Failure reports through the store (failure_report.cpp): what this rank failed with,
  // what another rank reported before it died, and at a stall what the awaited peers
  // are doing.
  void reportFailure(const std::string& cause);
  std::string reportedFailure(int peer);
  std::string diagnoseStall(const std::string& mine, const std::vector<int>& peers);
  void reportWaiting(const std::string& mine, const std::vector<int>& peers);

  int rank_, nranks_;
  std::chrono::milliseconds timeout_{};
  std::shared_ptr<TcpStoreServer> hostedStore_;
  Rendezvous rendezvous_;
  std::vector<int> parentRanks_;  // a shrunk communicator: its members' parent ranks
  Options options_;
  std::unique_ptr<TcpStoreClient> storeClient_;
  std::shared_ptr<Store> externalStore_;  // createOnStore: the caller's store
  std::unique_ptr<Store> store_;          // scoped to this communicator
  std::string prefix_;                    // store_'s key prefix
  uint64_t splits_ = 0;                   // split() calls so far (names the children's prefixes)
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Engine> engine_;
  AlgorithmChoice algorithms_;
  Layout layout_;  // which ranks share a node
  std::unique_ptr<Tuner> tuner_;
  uint64_t nextSequence_ = 0;
  bool ready_ = false;  // every rank finished creation
  bool reportedToLauncher_ = false;
  bool ranksInThisProcess_ = false;
  int launchRank_ = 0;  // this process's rank in the job (CHORUS_RANK), for report files
  std::map<std::tuple<const Algorithm*, size_t, int>, std::shared_ptr<const Schedule>> schedules_;
};

}  // namespace chorus::detail
