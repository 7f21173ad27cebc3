// The public C++ API: thin wrappers over CommImpl.
#include "comm/comm_impl.hpp"
#include "comm/group.hpp"
#include "memory/shared_memory.hpp"
#include "settings/settings.hpp"

#include <algorithm>
#include <cctype>
#include <thread>

namespace chorus {

using detail::CommImpl;

Communicator Communicator::init(int rank, int nranks, const UniqueId& id, const Options& options) {
  const Rendezvous rendezvous = decodeUniqueId(id);
  // An id from CHORUS_COMM_ID names a store nobody runs yet: rank 0 hosts it.
  return Communicator(
      CommImpl::create(rank, nranks, rendezvous, rendezvous.rankZeroHosts && rank == 0, options));
}

Communicator Communicator::initFromEnv(const Options& options) {
  settings::validateProcess();  // a bad setting fails here, before any rendezvous
  std::chrono::milliseconds limit = detail::timeoutFor(options);
  EnvLaunch launch;
  try {
    launch = readEnvironment(Clock::now() + limit);
  } catch (const Error& e) {  // no rank yet: say which process speaks
    throw Error(e.code(), settings::processName() + ": " + e.what());
  }
  return Communicator(
      CommImpl::create(launch.rank, launch.nranks, launch.rendezvous, launch.hostsStore, options));
}

std::vector<Communicator> Communicator::initAll(int nranks, const Options& options) {
  if (nranks < 1) throw Error(Result::InvalidArgument, "initAll: nranks must be >= 1");
  const UniqueId id = freshUniqueId();  // its own store, whatever CHORUS_COMM_ID says
  std::vector<Communicator> comms(nranks);
  std::vector<std::exception_ptr> failures(nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r)
    threads.emplace_back([&, r] {
      try {
        comms[r] = init(r, nranks, id, options);
      } catch (...) {
        failures[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& f : failures)
    if (f) std::rethrow_exception(f);
  for (auto& c : comms) c.impl_->setRanksInThisProcess();
  return comms;
}

Communicator::~Communicator() = default;

static CommImpl& live(const std::shared_ptr<CommImpl>& impl) {
  if (!impl) throw Error(Result::InvalidUsage, "communicator is not initialised");
  return *impl;
}

int Communicator::rank() const { return live(impl_).rank(); }
int Communicator::size() const { return live(impl_).size(); }
int Communicator::localRank() const { return live(impl_).localRank(); }
int Communicator::localSize() const { return live(impl_).localSize(); }
std::string Communicator::transportName() const { return live(impl_).transportName(); }
std::string Communicator::layout() const { return live(impl_).layout().describe(); }
void Communicator::setAlgorithm(std::string_view spec) { live(impl_).setAlgorithm(spec); }
void Communicator::abort() { live(impl_).engine().abort("communicator aborted by the user"); }
std::string Communicator::algorithmFor(std::string_view collective, size_t count, DataType type) {
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                       Collective::Broadcast, Collective::Reduce, Collective::AllToAll}) {
    std::string name = toString(c);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    if (name == collective) return live(impl_).algorithmFor(c, count, type);
  }
  throw Error(Result::InvalidArgument,
              "algorithmFor: unknown collective '" + std::string(collective) + "'");
}
void* Communicator::registerBuffer(const void* buffer, size_t bytes) {
  return live(impl_).registrations().add(buffer, bytes);
}
void Communicator::deregister(void* handle) { live(impl_).deregister(handle); }
std::string memPageKind() { return memory::pageKind(); }
Result Communicator::asyncError() { return live(impl_).engine().state(); }
std::string Communicator::lastError() const { return live(impl_).engine().failureCause(); }
std::vector<int> Communicator::failedRanks() const { return live(impl_).engine().failedRanks(); }
// A split or shrink of communicators whose ranks all live in this process (initAll) has
// its ranks here too: destroying one then skips the barrier with its peers, which the
// same thread destroys one after another.
static std::shared_ptr<CommImpl> inProcessLike(const CommImpl& parent,
                                               std::shared_ptr<CommImpl> child) {
  if (child && parent.ranksInThisProcess()) child->setRanksInThisProcess();
  return child;
}

Communicator Communicator::shrink(std::span<const int> excludeRanks) {
  CommImpl& parent = live(impl_);
  return Communicator(inProcessLike(parent, parent.shrink(excludeRanks)));
}
Communicator Communicator::grow(int newcomers) { return Communicator(live(impl_).grow(newcomers)); }
int Communicator::pendingJoins() { return live(impl_).pendingJoins(); }

Communicator Communicator::joinFromEnv(const Options& options) {
  settings::validateProcess();
  EnvLaunch launch;
  try {
    launch = readEnvironment(Clock::now() + detail::timeoutFor(options));
  } catch (const Error& e) {
    throw Error(e.code(), settings::processName() + ": " + e.what());
  }
  const int64_t epoch = settings::integer("CHORUS_REJOIN", 0);
  if (epoch < 1)
    throw Error(Result::InvalidUsage,
                "joinFromEnv: CHORUS_REJOIN is not set (a replacement's epoch, >= 1; chorus-run "
                "--respawn sets it)");
  if (launch.hostsStore)
    throw Error(Result::InvalidUsage,
                "joinFromEnv: rank " + std::to_string(launch.rank) +
                    " would host the store itself; a replacement needs a store that outlived "
                    "the rank it replaces (chorus-run's)");
  return Communicator(CommImpl::join(launch.rendezvous, launch.rank, launch.nranks,
                                     static_cast<int>(epoch), options));
}

Communicator Communicator::split(int color, int key) {
  CommImpl& parent = live(impl_);
  auto impl = inProcessLike(parent, parent.split(color, key));
  return impl ? Communicator(std::move(impl)) : Communicator();
}
Work Communicator::barrier() { return live(impl_).barrier(); }
Work Communicator::group(const std::function<void()>& calls) { return ::chorus::group(calls); }

Work Communicator::gather(const void* send, void* recv, size_t sendCount, DataType type, int root) {
  return live(impl_).submit({Collective::Gather, send, recv, sendCount, type, RedOp::Sum, root});
}
Work Communicator::scatter(const void* send, void* recv, size_t recvCount, DataType type,
                           int root) {
  return live(impl_).submit({Collective::Scatter, send, recv, recvCount, type, RedOp::Sum, root});
}
static size_t sum(std::span<const size_t> counts) {
  size_t total = 0;
  for (size_t c : counts) total += c;  // overflow: validate() says so
  return total;
}
Work Communicator::allGatherV(const void* send, void* recv, std::span<const size_t> counts,
                              DataType type) {
  return live(impl_).submit(
      {Collective::AllGatherV, send, recv, sum(counts), type, RedOp::Sum, 0, counts});
}
Work Communicator::reduceScatterV(const void* send, void* recv, std::span<const size_t> counts,
                                  DataType type, RedOp op) {
  return live(impl_).submit(
      {Collective::ReduceScatterV, send, recv, sum(counts), type, op, 0, counts});
}

Work Communicator::allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op) {
  return live(impl_).submit({Collective::AllReduce, send, recv, count, type, op, 0});
}
Work Communicator::allGather(const void* send, void* recv, size_t sendCount, DataType type) {
  return live(impl_).submit({Collective::AllGather, send, recv, sendCount, type, RedOp::Sum, 0});
}
Work Communicator::reduceScatter(const void* send, void* recv, size_t recvCount, DataType type,
                                 RedOp op) {
  return live(impl_).submit({Collective::ReduceScatter, send, recv, recvCount, type, op, 0});
}
Work Communicator::broadcast(const void* send, void* recv, size_t count, DataType type, int root) {
  return live(impl_).submit({Collective::Broadcast, send, recv, count, type, RedOp::Sum, root});
}
Work Communicator::reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                          int root) {
  return live(impl_).submit({Collective::Reduce, send, recv, count, type, op, root});
}
Work Communicator::allToAll(const void* send, void* recv, size_t count, DataType type) {
  return live(impl_).submit({Collective::AllToAll, send, recv, count, type, RedOp::Sum, 0});
}
Work Communicator::send(const void* buf, size_t count, DataType type, int peer) {
  return live(impl_).submit({Collective::Send, buf, nullptr, count, type, RedOp::Sum, peer});
}
Work Communicator::recv(void* buf, size_t count, DataType type, int peer) {
  return live(impl_).submit({Collective::Recv, nullptr, buf, count, type, RedOp::Sum, peer});
}

bool Work::wait(std::chrono::milliseconds timeout) {
  if (!op_ && !group_) throw Error(Result::InvalidUsage, "wait on an empty Work");
  Deadline deadline =
      timeout == std::chrono::milliseconds::max() ? Deadline::max() : deadlineIn(timeout);
  if (group_) return detail::waitGroup(*group_, op_.get(), deadline);
  return comm_->engine().waitFor(*op_, deadline);
}

std::string Work::algorithm() const {
  if (!op_ && !group_) throw Error(Result::InvalidUsage, "algorithm of an empty Work");
  return op_ ? op_->algorithm : "group";
}

bool Work::test() {
  if (!op_ && !group_) throw Error(Result::InvalidUsage, "test on an empty Work");
  if (group_) return detail::testGroup(*group_, op_.get());
  if (!op_->done) comm_->engine().poll();
  if (op_->done && op_->error != Result::Success)
    throw Error(op_->error, op_->message, op_->failedRanks);
  return op_->done;
}

}  // namespace chorus
