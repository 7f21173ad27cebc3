// chorus_collectives_test: every collective x type x op x count x in-place/out-of-place,
// (--more: gather, scatter, all-gather-v, reduce-scatter-v, more_collectives.hpp)
// checked element by element against an independent reference (reference.hpp), with
// guard zones around every buffer and checks that inputs and non-output regions stay
// untouched. Run under chorus-run:
//   chorus-run -n 4 chorus_collectives_test --transport shm [--quick] [--case N[,N...]] [--verbose]
// Every failure prints rank, case, first bad index, expected and got; rank 0 ends with
// "N passed, M failed" (rank-cases, aggregated with the library); exit 1 on any failure.
#include "buffers.hpp"
#include "case_check.hpp"
#include "cases.hpp"
#include "dtypes.hpp"
#include "inputs.hpp"
#include "more_collectives.hpp"
#include "reference.hpp"

#include <chorus/chorus.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace chorus_test;
class Runner {
 public:
  explicit Runner(chorus::Communicator& comm) : comm_(comm), rank_(comm.rank()), n_(comm.size()) {}

  std::vector<unsigned char>& scratch() { return scratch_; }

  void run(const Case& c, CaseCheck& chk) {
    const TypeInfo& t = *c.type;
    const bool red = isReduction(c.coll);
    // Tabulate when the case touches more than a period of elements of some rank.
    const bool big = c.count * static_cast<size_t>(n_) > kPeriod;
    Inputs in(t, valueKindFor(t, red, c.op), c.seed, big);
    const size_t s = static_cast<size_t>(t.size);
    const size_t mis = static_cast<size_t>((c.index / 2) % 3) * s;  // vary the alignment
    const size_t cnt = c.count;
    const chorus::DataType dt = t.type;
    const bool avgUlp = red && c.op == chorus::RedOp::Avg && t.kind == Kind::Float;
    // Expected-element writers: rank r's input from element `first`, a reference.
    auto input = [&in](int r, size_t first) {
      return [&in, r, first](unsigned char* out, size_t n) { in.fill(out, r, first, n); };
    };
    auto own = [&](size_t first) { return input(rank_, first); };
    auto reduced = [](const Reference& ref, size_t first) {
      return [&ref, first](unsigned char* out, size_t n) { ref.fill(out, first, n); };
    };
    auto initial = [](const GuardedBuffer& b) {
      return [&b, sz = b.bytes()](unsigned char* out, size_t) { b.initialData(out, 0, sz); };
    };

    switch (c.coll) {
      case Coll::AllReduce: {
        Reference ref(in, c.op, n_, cnt);
        if (c.inPlace) {
          GuardedBuffer buf(cnt * s, mis, c.seed + 1);
          in.fill(buf.data(), rank_, 0, cnt);
          chorus::Work w = comm_.allReduce(buf.data(), buf.data(), cnt, dt, c.op);
          waitFor(w, "allReduce");
          chk.elements("result", buf.data(), cnt, reduced(ref, 0), avgUlp);
          chk.guards("buffer", buf);
        } else {
          GuardedBuffer send(cnt * s, mis, c.seed + 1);
          GuardedBuffer recv(cnt * s, mis, c.seed + 2);
          in.fill(send.data(), rank_, 0, cnt);
          chorus::Work w = comm_.allReduce(send.data(), recv.data(), cnt, dt, c.op);
          waitFor(w, "allReduce");
          chk.elements("result", recv.data(), cnt, reduced(ref, 0), avgUlp);
          chk.elements("send buffer (must be unchanged)", send.data(), cnt, own(0), false);
          chk.guards("send buffer", send);
          chk.guards("recv buffer", recv);
        }
        break;
      }
      case Coll::AllGather: {
        const size_t total = cnt * static_cast<size_t>(n_);
        auto gathered = [&](unsigned char* out, size_t) {
          for (int r = 0; r < n_; ++r) in.fill(out + r * cnt * s, r, 0, cnt);
        };
        GuardedBuffer recv(total * s, mis, c.seed + 2);
        std::optional<GuardedBuffer> send;
        const void* sp = recv.data() + rank_ * cnt * s;
        if (c.inPlace) {
          in.fill(recv.data() + rank_ * cnt * s, rank_, 0, cnt);
        } else {
          send.emplace(cnt * s, mis, c.seed + 1);
          in.fill(send->data(), rank_, 0, cnt);
          sp = send->data();
        }
        chorus::Work w = comm_.allGather(sp, recv.data(), cnt, dt);
        waitFor(w, "allGather");
        chk.elements("result", recv.data(), total, gathered, false);
        chk.guards("recv buffer", recv);
        if (send) {
          chk.elements("send buffer (must be unchanged)", send->data(), cnt, own(0), false);
          chk.guards("send buffer", *send);
        }
        break;
      }
      case Coll::AllToAll: {
        // Block j of the result is block `rank_` of rank j's input.
        const size_t total = cnt * static_cast<size_t>(n_);
        auto exchanged = [&](unsigned char* out, size_t) {
          for (int r = 0; r < n_; ++r) in.fill(out + r * cnt * s, r, rank_ * cnt, cnt);
        };
        GuardedBuffer recv(total * s, mis, c.seed + 2);
        std::optional<GuardedBuffer> send;
        const void* sp = recv.data();
        if (c.inPlace) {
          in.fill(recv.data(), rank_, 0, total);
        } else {
          send.emplace(total * s, mis, c.seed + 1);
          in.fill(send->data(), rank_, 0, total);
          sp = send->data();
        }
        chorus::Work w = comm_.allToAll(sp, recv.data(), cnt, dt);
        waitFor(w, "allToAll");
        chk.elements("result", recv.data(), total, exchanged, false);
        chk.guards("recv buffer", recv);
        if (send) {
          chk.elements("send buffer (must be unchanged)", send->data(), total, own(0), false);
          chk.guards("send buffer", *send);
        }
        break;
      }
      case Coll::ReduceScatter: {
        const size_t total = cnt * static_cast<size_t>(n_);
        const size_t mine = static_cast<size_t>(rank_) * cnt;
        Reference ref(in, c.op, n_, total);
        GuardedBuffer send(total * s, mis, c.seed + 1);
        in.fill(send.data(), rank_, 0, total);
        std::optional<GuardedBuffer> recv;
        unsigned char* rp = send.data() + mine * s;
        if (!c.inPlace) {
          recv.emplace(cnt * s, mis, c.seed + 2);
          rp = recv->data();
        }
        chorus::Work w = comm_.reduceScatter(send.data(), rp, cnt, dt, c.op);
        waitFor(w, "reduceScatter");
        chk.elements("result", rp, cnt, reduced(ref, mine), avgUlp);
        if (c.inPlace) {  // the other ranks' slices are input: unchanged
          chk.elements("send buffer before own slice (must be unchanged)", send.data(), mine,
                       own(0), false);
          chk.elements("send buffer after own slice (must be unchanged)", rp + cnt * s,
                       total - mine - cnt, own(mine + cnt), false);
        } else {
          chk.elements("send buffer (must be unchanged)", send.data(), total, own(0), false);
          chk.guards("recv buffer", *recv);
        }
        chk.guards("send buffer", send);
        break;
      }
      case Coll::Broadcast: {
        GuardedBuffer recv(cnt * s, mis, c.seed + 2);
        std::optional<GuardedBuffer> send;
        if (c.inPlace) {
          if (rank_ == c.root) in.fill(recv.data(), rank_, 0, cnt);  // others: junk
        } else {
          send.emplace(cnt * s, mis, c.seed + 1);
          in.fill(send->data(), rank_, 0, cnt);  // non-roots: data that must not be used
        }
        const void* sp = send ? send->data() : recv.data();
        chorus::Work w = comm_.broadcast(sp, recv.data(), cnt, dt, c.root);
        waitFor(w, "broadcast");
        chk.elements("result", recv.data(), cnt, input(c.root, 0), false);
        chk.guards("recv buffer", recv);
        if (send) {
          chk.elements("send buffer (must be unchanged)", send->data(), cnt, own(0), false);
          chk.guards("send buffer", *send);
        }
        break;
      }
      case Coll::Reduce: {
        const bool root = rank_ == c.root;
        GuardedBuffer send(cnt * s, mis, c.seed + 1);
        in.fill(send.data(), rank_, 0, cnt);
        std::optional<GuardedBuffer> recv;
        if (!c.inPlace) recv.emplace(cnt * s, mis, c.seed + 2);
        unsigned char* rp = recv ? recv->data() : send.data();
        chorus::Work w = comm_.reduce(send.data(), rp, cnt, dt, c.op, c.root);
        waitFor(w, "reduce");
        if (root) {
          Reference ref(in, c.op, n_, cnt);
          chk.elements("result", rp, cnt, reduced(ref, 0), avgUlp);
        } else if (c.inPlace) {
          chk.elements("non-root buffer (must be unchanged)", rp, cnt, own(0), false);
        } else {
          chk.elements("non-root recv buffer (must be untouched)", rp, cnt, initial(*recv), false);
        }
        if (!c.inPlace) {
          chk.elements("send buffer (must be unchanged)", send.data(), cnt, own(0), false);
          chk.guards("recv buffer", *recv);
        }
        chk.guards("send buffer", send);
        break;
      }
      case Coll::Gather:
      case Coll::Scatter:
      case Coll::AllGatherV:
      case Coll::ReduceScatterV:
        MoreCollectives(comm_, c, chk).run();
        break;
      case Coll::SendRecv: {
        const int dst = (rank_ + c.root) % n_;
        const int src = (rank_ - c.root % n_ + n_) % n_;
        GuardedBuffer send(cnt * s, mis, c.seed + 1);
        GuardedBuffer recv(cnt * s, mis, c.seed + 2);
        in.fill(send.data(), rank_, 0, cnt);
        chorus::Work first;
        chorus::Work second;
        if (recvFirst(rank_, n_, c.root)) {
          first = comm_.recv(recv.data(), cnt, dt, src);
          second = comm_.send(send.data(), cnt, dt, dst);
        } else {
          first = comm_.send(send.data(), cnt, dt, dst);
          second = comm_.recv(recv.data(), cnt, dt, src);
        }
        waitFor(first, "send/recv (first issued)");
        waitFor(second, "send/recv (second issued)");
        chk.elements("received", recv.data(), cnt, input(src, 0), false);
        chk.elements("send buffer (must be unchanged)", send.data(), cnt, own(0), false);
        chk.guards("send buffer", send);
        chk.guards("recv buffer", recv);
        break;
      }
    }
  }

 private:
  chorus::Communicator& comm_;
  int rank_;
  int n_;
  std::vector<unsigned char> scratch_;  // expected elements, reused across cases
};

struct Args {
  std::string transport;
  std::string algo;
  std::string expectLayout;        // Communicator::layout() must say exactly this
  std::string expectAlgo;          // "allreduce:hier,allgather:hier": what algorithmFor must name
  std::string buffers = "malloc";  // malloc | registered | registered0 | memalloc (buffers.hpp)
  std::string only;                // run only these collectives' cases (collName, comma-separated)
  bool quick = false;
  bool more = false;  // gather, scatter, all-gather-v, reduce-scatter-v instead
  bool verbose = false;
  std::vector<int> onlyCases;  // --case N[,N...]: these cases only
  int every = 1;               // run every k-th selected case only (a fixed sample, for slow beds)
};

bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    bool hasValue = i + 1 < argc;
    if (k == "--transport" && hasValue) {
      a->transport = argv[++i];
    } else if (k == "--algo" && hasValue) {
      a->algo = argv[++i];
    } else if (k == "--expect-layout" && hasValue) {
      a->expectLayout = argv[++i];
    } else if (k == "--expect-algo" && hasValue) {
      a->expectAlgo = argv[++i];
    } else if (k == "--buffers" && hasValue) {
      a->buffers = argv[++i];
      if (a->buffers != "malloc" && a->buffers != "registered" && a->buffers != "registered0" &&
          a->buffers != "memalloc") {
        std::fprintf(stderr, "--buffers: malloc, registered, registered0 or memalloc\n");
        return false;
      }
    } else if (k == "--only" && hasValue) {
      a->only = argv[++i];
    } else if (k == "--case" && hasValue) {
      for (const char* at = argv[++i]; *at;) {
        char* end = nullptr;
        a->onlyCases.push_back(static_cast<int>(std::strtol(at, &end, 10)));
        at = *end == ',' ? end + 1 : end + std::strlen(end);
      }
    } else if (k == "--every" && hasValue) {
      a->every = std::max(1, std::atoi(argv[++i]));
    } else if (k == "--quick") {
      a->quick = true;
    } else if (k == "--more") {
      a->more = true;
    } else if (k == "--verbose") {
      a->verbose = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--transport shm|tcp] [--algo SPEC] [--quick] [--more] [--case "
                   "N[,N...]] [--every K] "
                   "[--buffers malloc|registered|registered0|memalloc] [--only COLLECTIVE,...] "
                   "[--verbose] [--expect-layout TEXT] [--expect-algo COLL:NAME,...]\n",
                   argv[0]);
      return false;
    }
  }
  return true;
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Args args;
  if (!parseArgs(argc, argv, &args)) return 2;
  if (std::string err = selfCheckEncodings(); !err.empty()) {
    std::printf("FAIL test self-check of the fp16/bf16 encoder: %s\n", err.c_str());
    return 2;
  }

  chorus::Options opt;
  opt.timeout = std::chrono::seconds(60);
  opt.transport = args.transport;
  opt.algorithm = args.algo;
  chorus::Communicator comm;
  try {
    comm = chorus::Communicator::initFromEnv(opt);
  } catch (const std::exception& e) {
    std::printf("FAIL rank %d: Communicator::initFromEnv threw: %s\n", envInt("CHORUS_RANK"),
                e.what());
    return 1;
  }
  const int rank = comm.rank();
  const int n = comm.size();
  Stats stats;
  bufferSource() = {args.buffers == "registered"    ? BufferMode::Registered
                    : args.buffers == "registered0" ? BufferMode::RegisteredOnRank0
                    : args.buffers == "memalloc"    ? BufferMode::MemAlloc
                                                    : BufferMode::Malloc,
                    &comm};

  // The communicator must match the launcher and the requested transport.
  int envRank = envInt("CHORUS_RANK");
  int envSize = envInt("CHORUS_WORLD_SIZE");
  if ((envRank >= 0 && envRank != rank) || (envSize >= 0 && envSize != n)) {
    std::printf("FAIL rank %d: comm rank/size %d/%d differ from CHORUS_RANK/WORLD_SIZE %d/%d\n",
                rank, rank, n, envRank, envSize);
    ++stats.failed;
  }
  // The node structure the communicator found from the ranks' hosts must be the launcher's
  // (chorus-run: one node; the test bed: its namespaces).
  const int envLocalRank = envInt("CHORUS_LOCAL_RANK");
  const int envLocalSize = envInt("CHORUS_LOCAL_SIZE");
  if ((envLocalRank >= 0 && envLocalRank != comm.localRank()) ||
      (envLocalSize >= 0 && envLocalSize != comm.localSize())) {
    std::printf(
        "FAIL rank %d: localRank/localSize %d/%d differ from CHORUS_LOCAL_RANK/SIZE %d/%d\n", rank,
        comm.localRank(), comm.localSize(), envLocalRank, envLocalSize);
    ++stats.failed;
  }
  if (!args.transport.empty() && comm.transportName() != args.transport) {
    std::printf("FAIL rank %d: transportName() is '%s', requested '%s'\n", rank,
                comm.transportName().c_str(), args.transport.c_str());
    ++stats.failed;
  }

  // The layout and the algorithms that run, where the test names them: a hierarchical
  // algorithm without a usable layout would run the flat ring and pass unnoticed.
  if (!args.expectLayout.empty() && comm.layout() != args.expectLayout) {
    std::printf("FAIL rank %d: layout() is '%s', expected '%s'\n", rank, comm.layout().c_str(),
                args.expectLayout.c_str());
    ++stats.failed;
  }
  for (size_t at = 0; !args.expectAlgo.empty() && at != std::string::npos;) {
    const size_t comma = args.expectAlgo.find(',', at);
    const std::string item =
        args.expectAlgo.substr(at, comma == std::string::npos ? comma : comma - at);
    at = comma == std::string::npos ? comma : comma + 1;
    const size_t colon = item.find(':');
    const std::string coll = item.substr(0, colon), want = item.substr(colon + 1);
    for (size_t count : {size_t{1}, size_t{4096}, size_t{1} << 20}) {
      const std::string got = comm.algorithmFor(coll, count, chorus::DataType::Float32);
      if (got != want) {
        std::printf("FAIL rank %d: %s of %zu floats runs '%s', expected '%s'\n", rank, coll.c_str(),
                    count, got.c_str(), want.c_str());
        ++stats.failed;
      }
    }
  }

  const std::vector<Case> cases = buildCases(n, args.quick, args.more);
  if (rank == 0) {
    std::printf("chorus_collectives_test: %d ranks, transport %s, %zu cases%s, %s buffers\n", n,
                comm.transportName().c_str(), cases.size(), args.quick ? " (quick)" : "",
                args.buffers.c_str());
  }

  auto selected = [&](const Case& c) {
    return args.only.empty() ||
           ("," + args.only + ",").find("," + std::string(collName(c.coll)) + ",") !=
               std::string::npos;
  };
  if (!args.only.empty() && std::none_of(cases.begin(), cases.end(), selected)) {
    std::printf("FAIL rank %d: --only %s matches no case\n", rank, args.only.c_str());
    return 1;
  }
  Runner runner(comm);
  std::map<std::string, double> seconds;  // per collective, this rank
  bool stopped = false;
  int selectedSoFar = 0;
  const auto start = Clock::now();
  for (const Case& c : cases) {
    if (!args.onlyCases.empty() &&
        std::find(args.onlyCases.begin(), args.onlyCases.end(), c.index) == args.onlyCases.end())
      continue;
    if (!selected(c)) continue;
    if (selectedSoFar++ % args.every != 0) continue;
    CaseCheck chk(rank, c, stats, runner.scratch());
    const auto t0 = Clock::now();
    const double wait0 = gWaitSeconds;
    try {
      runner.run(c, chk);
    } catch (const chorus::Error& e) {
      chk.fail(std::string("threw chorus::Error(") + chorus::toString(e.code()) + "): " + e.what());
      // Argument errors are local and symmetric: the other ranks throw too; go on.
      stopped =
          e.code() != chorus::Result::InvalidArgument && e.code() != chorus::Result::InvalidUsage;
    } catch (const Hang& e) {
      chk.fail(std::string("HANG: ") + e.what());
      comm.abort();
      stopped = true;
    } catch (const std::exception& e) {
      chk.fail(std::string("threw ") + e.what());
      stopped = true;
    }
    const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    seconds[collName(c.coll)] += sec;
    if (args.verbose) {
      std::printf("rank %d: %s: %.3f s, %.3f s in Work::wait\n", rank, describe(c).c_str(), sec,
                  gWaitSeconds - wait0);
    }
    if (chk.ok()) {
      ++stats.passed;
      stats.ulpCases += chk.ulp() ? 1 : 0;
    } else {
      ++stats.failed;
    }
    if (stopped) {
      std::printf("rank %d: stopping after %s: the communicator is no longer usable\n", rank,
                  describe(c).c_str());
      break;
    }
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  long long totals[3] = {stats.passed, stats.failed, stats.ulpCases};
  bool aggregated = false;
  if (!stopped) {
    try {
      // The totals live on the stack: an algorithm forced for registered buffers cannot run.
      if (args.buffers != "malloc") comm.setAlgorithm("allreduce:auto");
      chorus::Work w =
          comm.allReduce(totals, totals, 3, chorus::DataType::Int64, chorus::RedOp::Sum);
      aggregated = w.wait(kWaitLimit);
    } catch (const std::exception& e) {
      std::printf("rank %d: aggregating the results failed: %s\n", rank, e.what());
    }
  }
  if (!aggregated) {
    totals[0] = stats.passed;
    totals[1] = stats.failed;
    totals[2] = stats.ulpCases;
  }
  if (stats.failed > 0) {
    std::printf("rank %d: %ld passed, %ld failed\n", rank, stats.passed, stats.failed);
  }
  if (rank == 0) {
    std::string timing;
    for (const auto& [name, sec] : seconds) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s %.2fs", name.c_str(), sec);
      timing += buf;
    }
    std::printf("rank 0 time %.2fs:%s\n", elapsed, timing.c_str());
    if (totals[2] > 0) {
      std::printf("note: %lld float avg rank-cases matched only within 1 ULP\n", totals[2]);
    }
    std::printf("%s over %d ranks (each case counted on every rank)%s\n",
                aggregated ? "totals" : "rank 0 only", n, stopped ? ", stopped early" : "");
    std::printf("%lld passed, %lld failed\n", totals[0], totals[1]);
  }
  return (stats.failed > 0 || stopped || totals[1] > 0) ? 1 : 0;
}
