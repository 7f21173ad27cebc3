// chorus-perf: nccl-tests style benchmark of Chorus collectives. Start it with
// `chorus-run -n N chorus-perf ...` or `mpirun -np N chorus-perf ...`; it does not link
// MPI (Communicator::initFromEnv reads either launcher's environment).
#include "chorus_perf_args.hpp"
#include "chorus_perf_calibrate.hpp"
#include "chorus_perf_explain.hpp"
#include "chorus_perf_runner.hpp"

#include <chorus/chorus.hpp>

#include "algorithms/algorithms.hpp"
#include "settings/settings.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

// -A each, or each=NAME,...: the variants interleaved in one table (runVariants).
bool isEach(std::string_view algorithm) {
  return algorithm == "each" || algorithm.starts_with("each=");
}

class ChorusBackend : public perf::Backend {
 public:
  ChorusBackend(chorus::Communicator& comm, std::string algorithm, bool registered)
      : comm_(comm), algorithm_(std::move(algorithm)), registered_(registered) {
    if (!isEach(algorithm_) && algorithm_ != "auto") spec_ = algorithm_;
  }

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }

  void run(const perf::Call& c) override {
    // The runner's own calls (timings, error counts) use its small buffers, which a
    // one-sided algorithm forced for the benchmark cannot read: they run the tuner's choice.
    if (registered_ && !spec_.empty() && !benchmarkBuffer(c.send) && !benchmarkBuffer(c.recv)) {
      comm_.setAlgorithm("allreduce:auto," + lowerName() + ":auto");
      runOne(c);
      comm_.setAlgorithm(spec_);
      return;
    }
    runOne(c);
  }

  void runOne(const perf::Call& c) {
    const auto type = static_cast<chorus::DataType>(c.type);  // same values as NCCL's
    const auto op = static_cast<chorus::RedOp>(c.op);
    chorus::Work work;
    switch (c.coll) {
      case perf::Coll::AllReduce:
        work = comm_.allReduce(c.send, c.recv, c.count, type, op);
        break;
      case perf::Coll::AllGather:
        work = comm_.allGather(c.send, c.recv, c.count, type);
        break;
      case perf::Coll::ReduceScatter:
        work = comm_.reduceScatter(c.send, c.recv, c.count, type, op);
        break;
      case perf::Coll::Broadcast:
        work = comm_.broadcast(c.send, c.recv, c.count, type, c.root);
        break;
      case perf::Coll::Reduce:
        work = comm_.reduce(c.send, c.recv, c.count, type, op, c.root);
        break;
      case perf::Coll::AllToAll:
        work = comm_.allToAll(c.send, c.recv, c.count, type);
        break;
      case perf::Coll::SendRecv: {
        // Ring neighbour exchange: both posted before either is waited for.
        const int n = size();
        chorus::Work sent = comm_.send(c.send, c.count, type, (rank() + 1) % n);
        chorus::Work received = comm_.recv(c.recv, c.count, type, (rank() + n - 1) % n);
        sent.wait();
        received.wait();
        return;
      }
    }
    work.wait();
    // What the tuner ran on the benchmark's own buffers (with -R 1|2 a one-sided algorithm
    // that algorithmFor, asked without buffers, does not name): picked() reports it.
    if (tunerChooses() && (!registered_ || benchmarkBuffer(c.send) || benchmarkBuffer(c.recv)))
      autoRan_[{c.count, static_cast<int>(c.type)}] = work.algorithm();
  }

  void* registerBuffer(void* data, size_t bytes) override {
    buffers_.push_back({static_cast<const char*>(data), bytes});
    return comm_.registerBuffer(data, bytes);
  }
  void deregister(void* handle) override { comm_.deregister(handle); }
  void* allocate(size_t bytes) override {
    void* p = chorus::memAlloc(bytes);
    buffers_.push_back({static_cast<const char*>(p), bytes});
    return p;
  }
  void release(void* data) override { chorus::memFree(data); }

  std::string info() const override {
    return "Chorus nranks " + std::to_string(size()) + " transport " + comm_.transportName() +
           " algorithm " + algorithm_ + " memAlloc pages " + chorus::memPageKind();
  }
  std::string rankInfo() const override { return "transport " + comm_.transportName(); }

  // -A each=NAME,...: those variants only (auto among them or not), in that order.
  // -A each: every algorithm of the collective that runs on these buffers (the one-sided
  // ones on registered or memAlloc buffers; staged ones on any, but not over tcp, which has
  // no access to peers' memory: forcing them there is an error), then the tuner.
  std::vector<std::string> variants() const override {
    std::vector<std::string> names;
    if (algorithm_.starts_with("each=")) {
      for (std::string& name : chorus::settings::splitList(std::string_view(algorithm_).substr(5)))
        if (!name.empty()) names.push_back(std::move(name));  // "each=rd,,auto": two
      return names;
    }
    const bool peerMemory = comm_.transportName() != "tcp";
    for (const chorus::Algorithm& a : chorus::allAlgorithms())
      if (a.collective == collective() && (a.staged ? peerMemory : registered_ || !a.oneSided))
        names.push_back(a.name);
    names.push_back("auto");
    return names;
  }
  void select(const std::string& variant) override {
    spec_ = lowerName() + ":" + variant;
    comm_.setAlgorithm(spec_);
  }
  // What auto ran on these buffers when it has run at this size, else what the tuner would
  // pick for ordinary buffers.
  std::string picked(const perf::Call& c) const override {
    if (auto it = autoRan_.find({c.count, static_cast<int>(c.type)}); it != autoRan_.end())
      return it->second;
    return comm_.algorithmFor(lowerName(), c.count, static_cast<chorus::DataType>(c.type));
  }

 private:
  chorus::Collective collective() const {
    switch (coll_) {
      case perf::Coll::AllGather:
        return chorus::Collective::AllGather;
      case perf::Coll::ReduceScatter:
        return chorus::Collective::ReduceScatter;
      case perf::Coll::Broadcast:
        return chorus::Collective::Broadcast;
      case perf::Coll::Reduce:
        return chorus::Collective::Reduce;
      case perf::Coll::AllToAll:
        return chorus::Collective::AllToAll;
      default:
        return chorus::Collective::AllReduce;
    }
  }
  std::string lowerName() const {
    std::string name = chorus::toString(collective());
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return name;
  }

  chorus::Communicator& comm_;
  std::string algorithm_;
  bool registered_ = false;  // -R 1 or 2: the one-sided algorithms can run
  std::string spec_;         // the algorithm forced for the benchmark's calls ("": none)
  std::vector<std::pair<const char*, size_t>> buffers_;    // registered or allocated
  std::map<std::pair<size_t, int>, std::string> autoRan_;  // (count, type): auto's algorithm
  bool tunerChooses() const { return spec_.empty() || spec_.ends_with(":auto"); }
  bool benchmarkBuffer(const void* p) const {
    for (auto [data, bytes] : buffers_)
      if (p >= data && static_cast<const char*>(p) < data + bytes) return true;
    return false;
  }
  perf::Coll coll_ = perf::Coll::AllReduce;

 public:
  void setColl(perf::Coll coll) { coll_ = coll; }
};

// Rank from the launcher's environment, before the communicator exists (for messages).
bool probablyRankZero() {
  for (const char* name : {"CHORUS_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v) == 0;
  }
  return true;
}

// "Rank 3: ", or the host and pid while no rank is known yet (unless the error has them).
std::string who(int rank, const char* what) {
  if (rank >= 0) return "Rank " + std::to_string(rank) + ": ";
  const std::string process = chorus::settings::processName();
  return std::string(what).rfind(process, 0) == 0 ? "" : process + ": ";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    chorus::settings::validateProcess();  // a bad CHORUS_* value fails every mode at once
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-perf: %s\n", e.what());
    return 2;
  }
  if (auto status = perf::runExplain(argc, argv)) return *status;
  if (auto status = perf::runCalibrate(argc, argv)) return *status;
  const perf::ArgsSpec spec{"chorus-perf", true};
  perf::Args args;
  std::string error;
  switch (perf::parseArgs(argc, argv, spec, args, error)) {
    case perf::ParseStatus::Help:
      if (probablyRankZero()) std::fputs(perf::usage(spec).c_str(), stdout);
      return 0;
    case perf::ParseStatus::Error:
      if (probablyRankZero()) {
        std::fprintf(stderr, "chorus-perf: %s\n%s", error.c_str(), perf::usage(spec).c_str());
      }
      return 2;
    case perf::ParseStatus::Ok:
      break;
  }

  chorus::Communicator comm;
  int rank = -1;
  try {
    comm = chorus::Communicator::initFromEnv();
    rank = comm.rank();
    const bool each = isEach(args.algorithm);
    if (!each && !args.algorithm.empty() && args.algorithm != "auto")
      comm.setAlgorithm(args.algorithm);
    ChorusBackend backend(comm, args.algorithm, args.registration != 0);
    backend.setColl(args.coll);
    if (each) return perf::runVariants(args, backend, "chorus-perf");
    return perf::runBenchmark(args, backend,
                              std::string("chorus-perf ") + perf::collName(args.coll));
  } catch (const chorus::Error& e) {
    std::fprintf(stderr, "# %schorus error %s: %s\n", who(rank, e.what()).c_str(),
                 chorus::toString(e.code()), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "# %serror: %s\n", who(rank, e.what()).c_str(), e.what());
  }
  if (comm) comm.abort();
  return 1;
}
