// Communicator set-up and the submission path of every collective.
#include "comm/comm_impl.hpp"

#include "comm/group.hpp"

#include "algorithms/layout.hpp"
#include "algorithms/schedule_rules.hpp"
#include "bootstrap/process_watch.hpp"
#include "engine/wait_figures.hpp"
#include "engine/wire_header.hpp"
#include "errors.hpp"
#include "log.hpp"
#include "settings/settings.hpp"
#include "store/barrier.hpp"
#include "topology/topology.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/link_model.hpp"

#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

namespace chorus::detail {
namespace {

// Several communicators may share one store: each gets its own key prefix, numbered in
// creation order (the same on every rank). Counted per rank of the job (the rank the
// store knows), as several ranks may live in one process (initAll).
std::string nextPrefix(const security::JobSecret& secret, int jobRank) {
  static std::mutex mutex;
  static std::map<std::pair<security::JobSecret, int>, int> created;
  std::lock_guard lock(mutex);
  return "comm" + std::to_string(created[{secret, jobRank}]++) + "/";
}

// Collectives the tuner chooses for; the others have one algorithm.
bool tuned(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllGather ||
         c == Collective::ReduceScatter || c == Collective::Broadcast || c == Collective::Reduce ||
         c == Collective::AllToAll;
}

// The cores this thread could run on before bindToCore bound it to one (0: not bound).
thread_local int coresBeforeBinding = 0;
thread_local int boundCore = -1;  // the core bindToCore bound this thread to

// Cores this process may run on (taskset, cgroup cpusets), not the machine's total.
int usableCores() {
  if (coresBeforeBinding > 0) return coresBeforeBinding;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The machine a host identity (bootstrap's hostIdentity: boot id/hostname/netns) is on:
// its kernel's boot id. Shared memory and the topology go by host, but the cores are the
// kernel's: the test bed's nodes are network namespaces on one machine, where 2x2 is 4
// ranks on 2 cores while each node sees 2 ranks (and so bound and spun as if each had a
// core). Not told apart: containers on one kernel with disjoint cpusets (counted as one).
std::string machineOfHost(const std::string& host) { return host.substr(0, host.find('/')); }

// Where the machine's ranks outnumber cores, binds the calling thread to core
// `machineRank` modulo the cores, once, unless its affinity was narrowed already (taskset, a
// cpuset) or CHORUS_BIND_CORE=0; returns the core it bound to, else -1. A waiting rank hands its
// core over with sched_yield, which never moves it to another core, and under SCHED_FIFO nothing
// else does either: ranks stay where they started, 7 of 8 on one core of 2 seen, while the lone
// rank's core polls. np 8 on 2 cores, 8 B all-reduce, chrt -f 1, three alternating runs: 18.0
// / 18.6 / 16.9 us bound against 20.5 / 21.0 / 33.5 us unbound (perf/README.md, "Small
// all-reduce").
int bindToCore(int machineRank) {
  if (coresBeforeBinding > 0 || !settings::boolean("CHORUS_BIND_CORE")) return boundCore;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  const int allowed = CPU_COUNT(&set);
  if (allowed < 2 || allowed != get_nprocs()) return -1;
  int nth = machineRank % allowed;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set) || nth-- > 0) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) return -1;
    coresBeforeBinding = allowed;
    return boundCore = cpu;
  }
  return -1;
}

// Which ranks share a node: equal host identities, unless CHORUS_TOPO_FILE groups them
// otherwise (node rules by rank or host), e.g. to describe a cluster or to try the
// hierarchical algorithms on one machine.
Layout nodeLayout(const std::vector<std::string>& hosts) {
  const std::string path = settings::text("CHORUS_TOPO_FILE");
  std::optional<topo::TopologyFile> file;
  if (!path.empty()) file = topo::loadTopologyFile(path);
  const topo::ClusterTopology cluster = topo::clusterFromHostIds(hosts, file ? &*file : nullptr);
  return Layout::fromNodeOf(cluster.nodeOf);
}

// Each rank reads its own CHORUS_TOPO_FILE, so ranks could group the ranks into nodes
// differently and then build schedules that do not fit together (a stall or wrong data).
// Rank 0 publishes the layout it uses (as it publishes the tuner's figures); every rank
// compares, and all learn whether any differed, so that every rank fails here with a
// clear error. O(1) store keys whatever the rank count.
Layout agreedLayout(Store& store, int rank, int nranks, const std::vector<std::string>& hosts,
                    Deadline deadline) {
  std::optional<Layout> layout;
  std::string mine;
  try {
    layout = nodeLayout(hosts);
    mine = layout->describe();
  } catch (const std::exception& e) {
    mine = std::string("error: ") + e.what();
  }
  std::string reference = mine;
  if (rank == 0) {
    store.set("layout", std::as_bytes(std::span(mine)));
  } else {
    reference = storeText(store.get("layout", deadline));
  }
  const bool differs = reference != mine;
  const std::string detail = "rank " + std::to_string(rank) + " groups the ranks as \"" + mine +
                             "\", rank 0 as \"" + reference + "\"";
  if (differs) store.set("layout/mismatch", std::as_bytes(std::span(detail)));
  store.add("layout/mismatches", differs ? 1 : 0);
  storeBarrier(store, "layout/checked", nranks, deadline);
  const int64_t mismatches = store.add("layout/mismatches", 0);
  if (mismatches == 0) {
    if (!layout) throw Error(Result::InvalidArgument, "CHORUS_TOPO_FILE: " + mine.substr(7));
    return *layout;
  }
  const std::string example = differs ? detail : storeText(store.get("layout/mismatch", deadline));
  // Rank 0 leaves (and its exit ends the store) only when the others have read all they
  // need: each acknowledges, the last one says so.
  if (rank != 0 && store.add("layout/read", 1) == nranks - 1) store.set("layout/read/done", {});
  if (rank == 0) store.get("layout/read/done", deadline);
  const std::string advice = ": every rank must see the same CHORUS_TOPO_FILE";
  if (differs) throw Error(Result::InvalidUsage, "CHORUS_TOPO_FILE: " + detail + advice);
  throw Error(Result::InvalidUsage, "CHORUS_TOPO_FILE: " + std::to_string(mismatches) + " rank" +
                                        (mismatches == 1 ? "" : "s") +
                                        " disagree with rank 0 on which ranks share a node, e.g. " +
                                        example + advice);
}

}  // namespace

std::chrono::milliseconds timeoutFor(const Options& options) {
  if (options.timeout.count() > 0) return options.timeout;
  return settings::duration("CHORUS_TIMEOUT");  // validated by the registry: > 0
}

namespace {
// Throws PeerError for the deaths the store reported among the members (`member` maps a
// job rank to this communicator's rank, -1 when not one), or for the store's host.
void storeDeaths(TcpStoreClient& client, const std::function<int(int)>& member) {
  std::vector<int> deadRanks;
  try {
    deadRanks = client.deadRanks();
  } catch (const PeerError& storeHost) {  // the store's host died: name it as a member
    const int r = member(storeHost.peer());
    if (r == storeHost.peer()) throw;
    if (r < 0) throw PeerError(-1, storeHost.what(), {});  // not one of ours: no rank to name
    throw PeerError(r, "rank " + std::to_string(r) + " (job rank " +
                           std::to_string(storeHost.peer()) + ")" +
                           (client.serverStoppedAnswering()
                                ? " cannot be reached (the store it hosts stopped answering for "
                                  "CHORUS_KEEPALIVE)"
                                : " died (lost the connection to the store it hosted)"));
  }
  std::vector<int> dead;  // members only, in this communicator's numbering, ascending
  for (int jobRank : deadRanks)
    if (const int r = member(jobRank); r >= 0) dead.push_back(r);
  if (dead.empty()) return;
  std::sort(dead.begin(), dead.end());
  // A host that stopped answering (crashed, or cut off) is not known to have died.
  std::set<int> cutOff;
  for (int jobRank : client.unreachableRanks())
    if (const int r = member(jobRank); r >= 0) cutOff.insert(r);
  auto cause = [&](int r) {
    return cutOff.count(r) ? " cannot be reached (the rendezvous store heard nothing from its "
                             "host for CHORUS_KEEPALIVE)"
                           : " died (its connection to the rendezvous store closed)";
  };
  std::string what = "rank " + std::to_string(dead[0]) + cause(dead[0]);
  for (size_t i = 1; i < dead.size(); ++i)
    what += "; rank " + std::to_string(dead[i]) +
            (cutOff.count(dead[i]) == cutOff.count(dead[0]) ? " too" : cause(dead[i]));
  throw PeerError(dead[0], what, dead);
}
}  // namespace

std::shared_ptr<CommImpl> CommImpl::create(int rank, int nranks, const Rendezvous& rendezvous,
                                           bool hostsStore, const Options& options,
                                           const Parent* parent, std::shared_ptr<Store> external) {
  settings::validateProcess();
  if (nranks < 1) throwInvalid("communicator: nranks must be >= 1, got " + std::to_string(nranks));
  if (rank < 0 || rank >= nranks)
    throwInvalid("communicator: rank " + std::to_string(rank) + " out of range [0, " +
                 std::to_string(nranks) + ")");
  std::shared_ptr<CommImpl> c(new CommImpl(rank, nranks));
  c->timeout_ = timeoutFor(options);
  c->rendezvous_ = rendezvous;
  c->launchRank_ = static_cast<int>(settings::integer("CHORUS_RANK", rank));
  c->options_ = options;
  c->algorithms_.apply(settings::text("CHORUS_ALGO"));
  c->algorithms_.apply(options.algorithm);
  const Deadline deadline = Clock::now() + c->timeout_;

  if (external) {
    c->externalStore_ = std::move(external);
    c->store_ = std::make_unique<PrefixStore>(*c->externalStore_, "chorus/");
  } else {
    if (hostsStore)
      c->hostedStore_ = std::make_shared<TcpStoreServer>(rendezvous.store, rendezvous.secret, rank);
    if (parent) c->hostedStore_ = parent->store;
    // A shrunk communicator's client is an observer (-1): the store already knows these
    // processes by their parent ranks, and reports deaths under those (mapped below).
    c->storeClient_ = std::make_shared<TcpStoreClient>(rendezvous.store, rendezvous.secret,
                                                       parent ? -1 : rank, deadline);
    c->claim_ = parent ? parent->claim : c->storeClient_;
    c->prefix_ = parent && !parent->prefix.empty()
                     ? parent->prefix
                     : nextPrefix(rendezvous.secret, parent ? parent->ranks[rank] : rank);
    c->store_ = std::make_unique<PrefixStore>(*c->storeClient_, c->prefix_);
  }
  Store& store = *c->store_;

  const std::string host = hostIdentity();
  store.set("host/" + std::to_string(rank), std::as_bytes(std::span(host)));
  // How this host's other ranks can watch this process (by pid, in the engine's peer check).
  const std::string process = processIdentity();
  store.set("process/" + std::to_string(rank), std::as_bytes(std::span(process)));
  const std::string machine = machineOfHost(host);
  int localRanks = 0, machineRanks = 0, machineRank = 0;
  std::vector<std::string> hosts;
  std::vector<bool> onThisMachine;
  for (int r = 0; r < nranks; ++r) {
    hosts.push_back(storeText(store.get("host/" + std::to_string(r), deadline)));
    c->localRank_ += r < rank && hosts.back() == host;
    localRanks += hosts.back() == host;
    const bool sameMachine = machineOfHost(hosts.back()) == machine;
    onThisMachine.push_back(sameMachine);
    machineRanks += sameMachine;
    machineRank += r < rank && sameMachine;
  }
  c->localSize_ = localRanks;
  const int core = machineRanks > usableCores() ? bindToCore(machineRank) : boundCore;

  // CHORUS_TRANSPORT forces one transport for every peer; otherwise shared memory when
  // every rank is on this host, else the network transport (CHORUS_NET: ib, ucx, tcp).
  std::string kind =
      options.transport.empty() ? settings::text("CHORUS_TRANSPORT") : options.transport;
  if (kind == "auto")
    kind = localRanks == nranks ? "shm" : settings::text("CHORUS_NET", defaultNetTransport());
  TransportContext ctx{rank, nranks, &store, host, deadline, c->timeout_};
  c->transport_ = makeTransport(kind, ctx);
  // After the transport (it does not need the layout), so that the steps before it stay
  // as they were: tests/security plays rank 0 up to the transport's addresses.
  c->layout_ = agreedLayout(store, rank, nranks, hosts, deadline);

  EngineConfig config;
  config.rank = rank;
  config.nranks = nranks;
  config.timeout = c->timeout_;
  const int cores = usableCores();
  config.yieldWhileSpinning = machineRanks > cores;
  // Oversubscribed ranks poll with sched_yield, which hands the core straight to a peer
  // with work; 200 us of that keeps small-message latency low (perf/compare.sh) before
  // the rank sleeps on a futex and stops costing anything.
  config.spin = std::chrono::microseconds(settings::integer(
      "CHORUS_SPIN_US", (config.yieldWhileSpinning ? kOversubscribedSpin : kDefaultSpin).count()));
  config.adaptiveYield = settings::boolean("CHORUS_YIELD_ADAPT");
  config.pauseSpin = std::chrono::microseconds(
      config.yieldWhileSpinning ? 0 : settings::integer("CHORUS_PAUSE_SPIN_US", 20));
  config.sliceBytes = std::max<size_t>(kMinSliceBytes, settings::integer("CHORUS_SLICE_BYTES"));
  config.streamFromBytes = settings::integer("CHORUS_STREAM_FROM_BYTES");
  config.tracePrefix = settings::text("CHORUS_TRACE_STEPS");
  if (parent && !config.tracePrefix.empty()) {
    // A split, shrink or grow numbers its ranks its own way: two processes may both be
    // its rank 0 beside the world's. Its files carry its key prefix ("comm0/split0/1/" ->
    // PREFIX.comm0.split0.1.rankR.json), so that none overwrites another's.
    std::string tag = c->prefix_;
    std::replace(tag.begin(), tag.end(), '/', '.');
    if (tag.ends_with('.')) tag.pop_back();
    config.tracePrefix += "." + tag;
  }
  TcpStoreClient* client = c->storeClient_.get();
  std::vector<int> parentRanks = parent ? parent->ranks : std::vector<int>{};
  c->parentRanks_ = parentRanks;
  c->jobSize_ = parent ? parent->jobSize : nranks;
  // The store knows processes by their job ranks: a shrunk communicator maps them to its own
  // numbering (-1: not a member, excluded when shrinking).
  auto member = [parentRanks](int jobRank) {
    if (parentRanks.empty()) return jobRank;
    auto it = std::find(parentRanks.begin(), parentRanks.end(), jobRank);
    return it == parentRanks.end() ? -1 : static_cast<int>(it - parentRanks.begin());
  };
  // This host's peers, watched by pid once every rank is ready (below): their deaths reach
  // us without the network, where a stalled link or a forked child still holding the dead
  // rank's sockets hides them from the store's watch. 2 s after the store's word (checked
  // first) could have come: the store tells a death within milliseconds where it can.
  auto localPeers = std::make_shared<LocalPeerWatch>(std::chrono::seconds(2));
  config.checkPeers = [client, member, localPeers] {
    if (client) storeDeaths(*client, member);
    localPeers->check();
  };
  CommImpl* self = c.get();  // the engine dies before the communicator
  config.onFailure = [self](const std::string& cause, const std::vector<int>& failedRanks) {
    self->reportFailure(cause, failedRanks);
  };
  config.lastWords = [self](int peer) { return self->reportedFailure(peer); };
  config.diagnose = [self](const std::string& mine, const std::vector<int>& peers,
                           int unreachable) {
    return self->diagnoseStall(mine, peers, unreachable);
  };
  config.waiting = [self](const std::string& mine, const std::vector<int>& peers) {
    self->reportWaiting(mine, peers);
  };
  c->engine_ = std::make_unique<Engine>(*c->transport_, config);
  c->setUpTuner(localRanks, cores, onThisMachine, config.sliceBytes);
  storeBarrier(store, "ready", nranks, deadline);
  // Every rank set its process key before the barrier. The shm transport watches its
  // peers' pids itself.
  if (std::string_view(c->transport_->name()) != "shm")
    for (int r = 0; r < nranks; ++r)
      if (r != rank && hosts[size_t(r)] == host)
        if (const pid_t pid =
                pidInOurNamespace(storeText(store.get("process/" + std::to_string(r), deadline))))
          localPeers->add(r, pid);
  c->ready_ = true;
  logf(LogLevel::Info,
       "rank %d/%d ready: transport %s, %d local ranks, timeout %.1f s; %d ranks on this "
       "machine, %d cores: %s, %s",
       rank, nranks, c->transport_->name(), localRanks,
       std::chrono::duration<double>(c->timeout_).count(), machineRanks, cores,
       core >= 0 ? ("bound to core " + std::to_string(core)).c_str() : "not bound",
       config.yieldWhileSpinning ? "yields while waiting" : "spins while waiting");
  return c;
}

std::shared_ptr<CommImpl> CommImpl::createOnStore(int rank, int nranks,
                                                  std::shared_ptr<Store> store,
                                                  const Options& options) {
  if (!store) throwInvalid("communicator: createOnStore needs a store");
  return create(rank, nranks, Rendezvous{}, false, options, nullptr, std::move(store));
}

CommImpl::~CommImpl() {
  // Leave together, so that no rank mistakes an orderly exit for a death, and the store
  // hosted here outlives every rank's last use of it.
  if (engine_) engine_->drain(Clock::now() + timeout_);
  // Where a failed communicator's store did not answer its check-out (cut off, most likely:
  // the failure may be that), the goodbye gets as long, not its usual 10 s.
  bool storeSilent = false;
  try {
    // A creation that failed has no one to wait for. A failed communicator checks out
    // without waiting, so that ranks whose calls completed are not left waiting for it.
    bool someoneDied = false;  // a member of this communicator (a shrink's parent ranks)
    if (storeClient_)
      for (int dead : storeClient_->deadRanks())
        someoneDied |=
            parentRanks_.empty() || std::count(parentRanks_.begin(), parentRanks_.end(), dead);
    if (ready_ && !someoneDied && !ranksInThisProcess_) {
      if (engine_->failed()) {
        // Its store may be cut off too (the failure may be that): a few seconds at most.
        const Deadline by = Clock::now() + kReportBy;
        if (store_->addBy("destroy", 1, by) == nranks_) store_->setBy("destroy/done", {}, by);
      } else {
        storeBarrier(*store_, "destroy", nranks_,
                     Clock::now() + std::min(timeout_, std::chrono::milliseconds(30000)));
      }
    }
  } catch (const Error& e) {
    storeSilent = e.code() == Result::Timeout && engine_ && engine_->failed();
    logf(LogLevel::Warn, "rank %d: leaving without the others: %s", rank_, e.what());
  } catch (const std::exception& e) {
    logf(LogLevel::Warn, "rank %d: leaving without the others: %s", rank_, e.what());
  }
  engine_.reset();  // its hooks hold the store client too
  try {
    // Check out of the store (an orderly exit, not a death) unless a communicator made from
    // this one still uses the client: the claim may outlive it in a shrunk or grown one.
    // A root communicator's claim is its own client (one more reference, ours).
    const long ownClaim = claim_ && claim_ == storeClient_ ? 1 : 0;
    auto goodbye = [&](TcpStoreClient& client) {
      if (storeSilent)
        client.goodbye(Clock::now() + kReportBy);
      else
        client.goodbye();
    };
    if (storeClient_ && storeClient_.use_count() == 1 + ownClaim) goodbye(*storeClient_);
    if (claim_ && claim_ != storeClient_ && claim_.use_count() == 1) goodbye(*claim_);
  } catch (const std::exception&) {
  }
  transport_.reset();
  store_.reset();
  storeClient_.reset();
  claim_.reset();
  hostedStore_.reset();
}

void CommImpl::validate(const Call& call) const {
  // Built only for an error: a small call's whole cost is a few hundred nanoseconds.
  auto what = [&] { return std::string(toString(call.collective)) + ": "; };
  if (!isValid(call.type))
    throwInvalid(what() + "invalid data type " + std::to_string(static_cast<int>(call.type)));
  if (!isValid(call.op))
    throwInvalid(what() + "invalid reduction op " + std::to_string(static_cast<int>(call.op)));
  if (call.root < 0 || call.root >= nranks_)
    throwInvalid(what() +
                 (call.collective == Collective::Send || call.collective == Collective::Recv
                      ? "peer "
                      : "root ") +
                 std::to_string(call.root) + " out of range [0, " + std::to_string(nranks_) + ")");
  const size_t es = sizeOf(call.type);
  const bool vee =
      call.collective == Collective::AllGatherV || call.collective == Collective::ReduceScatterV;
  size_t myCount = call.count, myOffset = 0;  // the v-collectives' block of this rank
  if (vee) {
    if (call.counts.size() != static_cast<size_t>(nranks_))
      throwInvalid(what() + "counts has " + std::to_string(call.counts.size()) +
                   " entries, the communicator " + std::to_string(nranks_) + " ranks");
    size_t total = 0;
    for (int r = 0; r < nranks_; ++r) {
      if (call.counts[r] > static_cast<size_t>(PTRDIFF_MAX) / es - total)
        throwInvalid(what() + "counts add up to too many elements");
      if (r == rank_) myOffset = total;
      total += call.counts[r];
    }
    myCount = call.counts[rank_];
  } else if (size_t total;
             __builtin_mul_overflow(call.count, es * static_cast<size_t>(nranks_), &total) ||
             total > static_cast<size_t>(PTRDIFF_MAX)) {
    // As count > PTRDIFF_MAX / es / nranks, without two divisions on every call.
    throwInvalid(what() + "count " + std::to_string(call.count) + " too large");
  }
  if (call.count == 0) return;
  const bool isRoot = call.root == rank_;
  bool needInput = true, needOutput = true;
  size_t inBytes = call.count * es, outBytes = call.count * es;
  switch (call.collective) {
    case Collective::AllGatherV:  // count: the sum of counts
      inBytes = myCount * es;
      needInput = myCount > 0;
      break;
    case Collective::ReduceScatterV:
      outBytes = myCount * es;
      needOutput = myCount > 0;
      break;
    case Collective::Gather:
      outBytes *= nranks_;
      needOutput = isRoot;
      break;
    case Collective::Scatter:
      inBytes *= nranks_;
      needInput = isRoot;
      break;
    case Collective::AllGather:
      outBytes *= nranks_;
      break;
    case Collective::ReduceScatter:
      inBytes *= nranks_;
      break;
    case Collective::AllToAll:
      inBytes *= nranks_;
      outBytes *= nranks_;
      break;
    case Collective::Broadcast:
      needInput = isRoot;
      break;
    case Collective::Reduce:
      needOutput = isRoot;
      break;
    case Collective::Send:
    case Collective::Recv:
      needInput = call.collective == Collective::Send;
      needOutput = !needInput;
      break;
    default:
      break;
  }
  if (needInput && !call.input) throwInvalid(what() + "send buffer is null");
  if (needOutput && !call.output) throwInvalid(what() + "receive buffer is null");
  if (!needInput || !needOutput) return;
  auto in = reinterpret_cast<uintptr_t>(call.input), out = reinterpret_cast<uintptr_t>(call.output);
  const uintptr_t offset = (vee ? myOffset : static_cast<uintptr_t>(rank_) * call.count) * es;
  const Collective c = call.collective;
  bool inPlace =
      c == Collective::AllGather || c == Collective::Gather || c == Collective::AllGatherV
          ? in == out + offset
      : c == Collective::ReduceScatter || c == Collective::Scatter ||
              c == Collective::ReduceScatterV
          ? out == in + offset
          : in == out;
  const bool overlap = in < out ? out - in < inBytes : in - out < outBytes;
  if (!inPlace && overlap)
    throwInvalid(what() + "send and receive buffers overlap without being in-place");
}

CommImpl::BuiltSchedule CommImpl::scheduleFor(const Algorithm& algorithm, const Call& call) {
  CollectiveArgs args{call.collective, rank_,    nranks_,    call.count,
                      call.root,       &layout_, call.counts};
  auto build = [&] {
    auto schedule = std::make_shared<const Schedule>(algorithm.build(args));
    auto folds = std::make_shared<const std::vector<bool>>(rules::foldsIntoPrevious(*schedule));
    return BuiltSchedule{std::move(schedule), std::move(folds)};
  };
  if (!call.counts.empty()) return build();
  auto key = std::make_tuple(&algorithm, call.count, call.root);  // same rank, same nranks
  auto it = schedules_.find(key);
  if (it != schedules_.end()) return it->second;
  if (schedules_.size() >= 256) schedules_.clear();
  return schedules_.emplace(key, build()).first->second;
}

const char* CommImpl::algorithmFor(Collective collective, size_t count, DataType type) {
  if (viaMailbox(Call{collective, nullptr, nullptr, count, type, RedOp::Sum, 0})) return "mailbox";
  if (const Algorithm* forced = algorithms_.forced(collective)) return runnable(*forced).name;
  // As prepare() decides for buffers peers cannot read in place (ordinary memory).
  if (const Algorithm* staged = stagedFor(collective, count, type)) return staged->name;
  return runnable(
             tuner_->choose(collective, count, type, algorithms_.candidates(collective), false))
      .name;
}

Tuner::Reach CommImpl::reach(const std::pair<LocalRegion, LocalRegion>& regions) const {
  // Only shm's PeerMemory maps or copies on this host; ib reads over the network (RDMA
  // READ), memAlloc's memfd and huge pages or not.
  if (std::string_view(transport_->name()) != "shm") return Tuner::Reach::Network;
  if (regions.first.fd >= 0 && regions.second.fd >= 0) return Tuner::Reach::Mapped;
  return regions.first.hugePages && regions.second.hugePages ? Tuner::Reach::CmaHugePages
                                                             : Tuner::Reach::Cma;
}

const Algorithm* CommImpl::stagedFor(Collective collective, size_t count, DataType type,
                                     bool log) const {
  // Measured (and tested by the tuner's choice) over shm only; ib's one-sided reads on one
  // node were never timed against its copy path for this schedule, so ib keeps copying.
  if (count * sizeOf(type) < Tuner::kOneSidedMinBytes || !transport_->peerMemory() ||
      std::string_view(transport_->name()) != "shm")
    return nullptr;
  return tuner_->chooseStaged(
      collective, count, type, algorithms_.candidates(collective),
      [&](const Algorithm& a) { return !algorithms_.excluded(a); }, log);
}

const Algorithm& CommImpl::runnable(const Algorithm& chosen) const {
  if (!std::string_view(chosen.name).starts_with("hier") || hierarchicalLayout(&layout_, nranks_))
    return chosen;
  const Algorithm* flat = findAlgorithm(chosen.collective, "ring");
  return flat ? *flat : chosen;
}

void CommImpl::setAlgorithm(std::string_view spec) {
  algorithms_.apply(spec);
  tuner_->reset();
}

bool CommImpl::viaMailbox(const Call& call) const {
  if (call.collective != Collective::AllReduce || nranks_ < 2 || nranks_ > kMailboxMaxRanks ||
      call.count == 0 || algorithms_.forced(call.collective))
    return false;
  const Mailbox* box = transport_->mailbox();
  const size_t bytes = call.count * sizeOf(call.type);
  return box && sizeof(WireHeader) + bytes <= box->capacity() &&
         bytes * static_cast<size_t>(nranks_ - 1) <= kMailboxReadBytes;
}

// The small all-reduce of a mailbox: no algorithm to choose, no schedule to look up, and
// no allocation once the previous mailbox op is let go (by the caller's Work and the
// engine): its state is reused, its progress vector's storage kept.
std::shared_ptr<OpState> CommImpl::prepareMailbox(const Call& call) {
  std::shared_ptr<OpState> op;
  if (mailboxSpare_ && mailboxSpare_.use_count() == 1) {
    std::atomic_thread_fence(std::memory_order_acquire);  // the last holder's writes
    op = mailboxSpare_;
    // What a mailbox op changes (the rest is set below, by launch and by the engine's
    // submit, or never set for a mailbox op); cheaper than assigning a fresh OpState.
    op->mailboxPosted = false;
    op->barrier = false;
    op->ownBytes = {};
    op->done = false;
    op->error = Result::Success;
    op->message.clear();
    op->failedRanks.clear();
  } else {
    op = mailboxSpare_ = std::make_shared<OpState>();
  }
  op->collective = call.collective;
  op->type = call.type;
  op->op = call.op;
  op->count = call.count;
  op->algorithm = "mailbox";
  op->algorithmIndex = OpState::kMailboxAlgorithm;
  op->elementSize = sizeOf(call.type);
  op->input = static_cast<const std::byte*>(call.input);
  op->output = static_cast<std::byte*>(call.output);
  op->viaMailbox = true;
  return op;
}

void CommImpl::deregister(void* handle) {
  auto [data, bytes] = registrations_.remove(handle);
  if (PeerMemory* memory = transport_->peerMemory()) memory->forget(data, bytes);
}

// The regions holding the call's buffers when one-sided access is possible for it: the
// buffers are registered (or from memAlloc) and the transport reaches peers' memory. One
// rank has no peers (its one-sided schedules are a local copy, and ib opens no device for
// it), so there the registrations alone answer, over any transport.
std::optional<std::pair<LocalRegion, LocalRegion>> CommImpl::exposableBuffers(
    const Call& call) const {
  if (nranks_ > 1 && !transport_->peerMemory()) return std::nullopt;
  // Elements of input and output (NCCL's counts: all-gather's input is one block, ...).
  const size_t blocks = call.count * static_cast<size_t>(nranks_);
  size_t inCount = call.count, outCount = call.count;
  switch (call.collective) {
    case Collective::AllReduce:
    case Collective::Broadcast:
      break;
    case Collective::AllGather:
      outCount = blocks;
      break;
    case Collective::ReduceScatter:
      inCount = blocks;
      break;
    case Collective::AllToAll:
      inCount = outCount = blocks;
      break;
    default:
      return std::nullopt;
  }
  const size_t es = sizeOf(call.type);
  auto in = registrations_.find(call.input, inCount * es);
  auto out = in && call.output == call.input && inCount == outCount
                 ? in
                 : registrations_.find(call.output, outCount * es);
  if (!in || !out) return std::nullopt;
  return std::make_pair(*in, *out);
}

// Calls smaller than this never look up their buffers' registrations for the rendezvous.
constexpr size_t kDirectTransferMinBytes = 1024;

std::shared_ptr<OpState> CommImpl::prepare(const Call& call) {
  validate(call);
  if (viaMailbox(call)) return prepareMailbox(call);
  const Algorithm* forced = algorithms_.forced(call.collective);
  std::optional<std::pair<LocalRegion, LocalRegion>> regions;
  const Algorithm* oneSided = nullptr;
  const size_t bytes = call.count * sizeOf(call.type);
  if (forced && forced->staged) {
    if (nranks_ > 1 && !transport_->peerMemory())  // one rank: a local copy, see exposableBuffers
      throwInvalid(std::string(toString(call.collective)) + ": algorithm " + forced->name +
                   " needs a transport with one-sided access to peers' memory (shm)");
  } else if (forced && forced->oneSided) {
    if (writesIntoPeers(*forced) && transport_->peerMemory() && !transport_->peerMemory()->writes())
      throwInvalid(std::string(toString(call.collective)) + ": algorithm " + forced->name +
                   " writes into peers' buffers, which this communicator's transport (" +
                   transport_->name() + ") cannot (shm, ib and ucx can)");
    regions = exposableBuffers(call);
    if (!regions)
      throwInvalid(std::string(toString(call.collective)) + ": algorithm " + forced->name +
                   (writesIntoPeers(*forced) ? " reads and writes" : " reads") +
                   " peers' buffers in place: allocate them with memAlloc or register "
                   "them (registerBuffer) on every rank" +
                   (transport_->peerMemory() || nranks_ == 1
                        ? ""
                        : std::string(", over a transport that can (shm, ib, ucx)")));
  } else if (!forced && bytes >= Tuner::kOneSidedMinBytes && (regions = exposableBuffers(call))) {
    oneSided = tuner_->chooseOneSided(
        call.collective, call.count, call.type, reach(*regions),
        [&](const Algorithm& a) { return !algorithms_.excluded(a); },
        rank_ == 0 && logLevel() >= LogLevel::Info);
  }
  // Buffers peers cannot read in place, or registered ones they would read by CMA on
  // 4 KiB pages (chooseOneSided declines those): staged through peer-mappable scratch.
  if (!forced && !oneSided)
    oneSided = stagedFor(call.collective, call.count, call.type,
                         rank_ == 0 && logLevel() >= LogLevel::Info);
  const Algorithm& algorithm =
      oneSided ? *oneSided
               : runnable(forced ? *forced
                          : !tuned(call.collective)
                              ? *algorithms_.candidates(call.collective).front()
                              : tuner_->choose(call.collective, call.count, call.type,
                                               algorithms_.candidates(call.collective),
                                               rank_ == 0 && logLevel() >= LogLevel::Info));
  auto op = std::make_shared<OpState>();
  op->collective = call.collective;
  op->type = call.type;
  op->op = call.op;
  op->count = call.count;
  op->root = call.root;
  op->algorithm = algorithm.name;
  op->algorithmIndex = static_cast<int>(&algorithm - allAlgorithms().data());
  op->elementSize = sizeOf(call.type);
  op->input = static_cast<const std::byte*>(call.input);
  op->output = static_cast<std::byte*>(call.output);
  BuiltSchedule built = scheduleFor(algorithm, call);
  op->schedule = std::move(built.schedule);
  op->foldsIntoPrevious = std::move(built.foldsIntoPrevious);
  if (algorithm.oneSided && regions) {
    op->inputRegion = regions->first;
    op->outputRegion = regions->second;
  } else if (bytes >= kDirectTransferMinBytes) {
    // Registered buffers of any algorithm: a channel with a rendezvous (ib) moves their
    // large messages straight from buffer to buffer (transport.hpp's DirectTransfer).
    if (call.collective == Collective::Send) {
      op->inputRegion = registrations_.find(call.input, bytes);
    } else if (call.collective == Collective::Recv) {
      op->outputRegion = registrations_.find(call.output, bytes);
    } else if (regions || (regions = exposableBuffers(call))) {
      op->inputRegion = regions->first;
      op->outputRegion = regions->second;
    }
  }
  uint32_t hash = 2166136261u;  // FNV-1a of the counts: ranks must pass the same ones
  for (size_t c : call.counts)
    for (int byte = 0; byte < 8; ++byte) hash = (hash ^ ((c >> (8 * byte)) & 0xff)) * 16777619u;
  op->countsHash = call.counts.empty() ? 0 : hash;
  return op;
}

void CommImpl::launch(const std::shared_ptr<OpState>& op) {
  op->sequence = nextSequence_++;
  if (logLevel() >= LogLevel::Trace)  // describe() formats a string: not on the hot path
    logf(LogLevel::Trace, "rank %d: %s", rank_, op->describe().c_str());
  engine_->submit(op);
}

Work CommImpl::queueOrLaunch(std::shared_ptr<OpState> op) {
  if (std::shared_ptr<GroupState> group = openGroup()) {
    group->calls.push_back({shared_from_this(), op});
    return Work(shared_from_this(), std::move(op), std::move(group));
  }
  launch(op);
  return Work(shared_from_this(), std::move(op));
}

Work CommImpl::submit(const Call& call) { return queueOrLaunch(prepare(call)); }

Work CommImpl::barrier() {
  // Max of one byte: any count-1 all-reduce would do; the op holds its own byte.
  static std::byte placeholder;  // passes the null checks; replaced below
  auto op = prepare(
      {Collective::AllReduce, &placeholder, &placeholder, 1, DataType::Uint8, RedOp::Max, 0});
  op->barrier = true;
  op->input = op->output = op->ownBytes.data();
  return queueOrLaunch(std::move(op));
}

}  // namespace chorus::detail
