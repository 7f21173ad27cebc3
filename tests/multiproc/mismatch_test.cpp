// chorus_mismatch_test: ranks that call different things at the same point get an error
// that names the rank and what it called, at once, instead of a hang or wrong data.
//   chorus-run -n 3 chorus_mismatch_test --case count|collective|op|type|root|counts|p2p|absent|
//                                               memalloc|small|smallbig
// (small: 2 against 64 floats, both through the shm mailbox, one as LL words and one as a
// plain message, so each rank meets a message of the other kind and length; smallbig: 16
// there against 1000 through a schedule.)
// Rank 1 is the odd one out. Every rank whose call touches the difference must fail
// within 10 s (only a sender whose data was taken, or a rank the difference does not
// reach, may complete), with an error that says "mismatched calls" and names both calls
// (its own and the other one), directly or as the report of the rank that found it.
// Prints "rank R: <error>"; exit 0 when all that holds, 1 otherwise ("FAIL").
// `absent`: rank 2 never calls; the others must time out (CHORUS_TIMEOUT) with an error
// that says rank 2 is not waiting in any collective.
// `topo --odd-topo FILE`: rank 1 reads FILE as its CHORUS_TOPO_FILE, the others the
// environment's; creation must fail on every rank within 10 s with an error that names
// CHORUS_TOPO_FILE (rank 1: both layouts), not stall.
#include <chorus/chorus.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using chorus::DataType;
using chorus::RedOp;

chorus::Work call(chorus::Communicator& comm, const std::string& which, bool odd,
                  std::vector<float>& in, std::vector<float>& out) {
  const size_t n = 1000;
  if (which == "count")
    return comm.allReduce(in.data(), out.data(), odd ? n / 2 : n, DataType::Float32, RedOp::Sum);
  // Small all-reduces take the shm mailbox: both ranks there, or rank 1 alone there.
  if (which == "small")
    return comm.allReduce(in.data(), out.data(), odd ? 2 : 64, DataType::Float32, RedOp::Sum);
  if (which == "smallbig")
    return comm.allReduce(in.data(), out.data(), odd ? 16 : n, DataType::Float32, RedOp::Sum);
  if (which == "collective")
    return odd ? comm.allGather(in.data(), out.data(), n / comm.size(), DataType::Float32)
               : comm.allReduce(in.data(), out.data(), n, DataType::Float32, RedOp::Sum);
  if (which == "op")
    return comm.allReduce(in.data(), out.data(), n, DataType::Float32,
                          odd ? RedOp::Max : RedOp::Sum);
  if (which == "type")
    return comm.allReduce(in.data(), out.data(), n, odd ? DataType::Int32 : DataType::Float32,
                          RedOp::Sum);
  if (which == "root") {  // the chain: rank 1 hears from rank 0 whichever root it thinks
    comm.setAlgorithm("broadcast:ring");
    return comm.broadcast(in.data(), out.data(), n, DataType::Float32, odd ? 2 : 0);
  }
  if (which == "memalloc") {     // only rank 1's buffers are ordinary memory: the others
    const size_t big = 1 << 16;  // take the one-sided path (pinned to peer_twoshot)
    in.resize(big, 1.0f);
    out.resize(big);
    if (odd) {
      comm.setAlgorithm("allreduce:ring");  // whatever it picks; pinned for the message
      return comm.allReduce(in.data(), out.data(), big, DataType::Float32, RedOp::Sum);
    }
    comm.setAlgorithm("allreduce:peer_twoshot");  // pinned: the one-sided pick may vary
    auto* shared = static_cast<float*>(chorus::memAlloc(2 * big * sizeof(float)));
    std::fill(shared, shared + big, 1.0f);  // freed at exit
    return comm.allReduce(shared, shared + big, big, DataType::Float32, RedOp::Sum);
  }
  if (which == "counts") {  // the same total, rank 1's blocks differ
    const std::vector<size_t> counts =
        odd ? std::vector<size_t>{400, 300, 300} : std::vector<size_t>{300, 300, 400};
    return comm.allGatherV(in.data(), out.data(), counts, DataType::Float32);
  }
  if (which == "p2p") {  // rank 0 sends 1000 to rank 1, which expects 500
    if (comm.rank() == 0) return comm.send(in.data(), n, DataType::Float32, 1);
    if (comm.rank() == 1) return comm.recv(out.data(), n / 2, DataType::Float32, 0);
    return comm.allReduce(in.data(), out.data(), 0, DataType::Float32, RedOp::Sum);
  }
  std::fprintf(stderr, "unknown case %s\n", which.c_str());
  std::exit(2);
}

struct Expect {
  const char* odd;   // in the description of rank 1's call
  const char* even;  // in the description of the others' calls
  bool othersMayComplete;
};

Expect expectFor(const std::string& which) {
  if (which == "count") return {"(500 x float sum", "(1000 x float sum", false};
  if (which == "small") return {"(2 x float sum", "(64 x float sum", false};
  if (which == "smallbig") return {"(16 x float sum", "(1000 x float sum", false};
  if (which == "collective")
    return {"allGather #1 (333 x float", "allReduce #1 (1000 x float", false};
  if (which == "op") return {"float max", "float sum", false};
  if (which == "type") return {"int32 sum", "float sum", false};
  if (which == "root") return {"root 2", "root 0", true};
  if (which == "memalloc") return {"float sum, ring)", "float sum, peer_twoshot)", false};
  if (which == "counts")
    return {"with other per-rank counts", "allGatherV #1 (1000 x float", false};
  return {"recv #1 (500 x float", "send #1 (1000 x float", true};  // p2p
}

// Creation with rank 1 given another topology file: every rank must get an error.
int topoCase(const char* oddFile) {
  const char* env = std::getenv("CHORUS_RANK");
  const int rank = env ? std::atoi(env) : -1;
  if (rank == 1) setenv("CHORUS_TOPO_FILE", oddFile, 1);
  const auto start = std::chrono::steady_clock::now();
  try {
    chorus::Communicator comm = chorus::Communicator::initFromEnv();
    std::printf("rank %d: FAIL: created although rank 1 has another topology file\n", rank);
    return 1;
  } catch (const chorus::Error& e) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const std::string what = e.what();
    bool ok = what.find("CHORUS_TOPO_FILE") != std::string::npos &&
              what.find("rank 1 groups the ranks as") != std::string::npos;
    if (rank == 1)  // its own layout (4 nodes) and rank 0's (2 nodes)
      ok = ok && what.find("\"4 nodes: 0 | 1 | 2 | 3\"") != std::string::npos &&
           what.find("\"2 nodes: 0-1 | 2-3\"") != std::string::npos;
    std::printf("rank %d: %s%s%s: %s (%.1f ms)\n", rank, ok ? "" : "FAIL (error unclear): ",
                ms < 10000 ? "" : "FAIL (not within 10 s): ", chorus::toString(e.code()),
                what.c_str(), ms);
    return ok && ms < 10000 ? 0 : 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "count";
  const char* oddTopo = nullptr;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--case") == 0) which = argv[i + 1];
    if (std::strcmp(argv[i], "--odd-topo") == 0) oddTopo = argv[i + 1];
  }
  if (which == "topo") {
    if (!oddTopo) {
      std::fprintf(stderr, "--case topo needs --odd-topo FILE\n");
      return 2;
    }
    return topoCase(oddTopo);
  }
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int rank = comm.rank();
  std::vector<float> in(1000, 1.0f), out(1000 * comm.size());
  // A matching call first: the check must not disturb calls that agree.
  comm.allReduce(in.data(), out.data(), 1000, DataType::Float32, RedOp::Sum).wait();
  if (out[0] != static_cast<float>(comm.size())) {
    std::printf("rank %d: FAIL: the matching call gave %g\n", rank, out[0]);
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  if (which == "absent") {
    if (rank == 2) {  // busy elsewhere, then leaves; the others must not hang meanwhile
      std::this_thread::sleep_for(std::chrono::seconds(8));
      comm.abort();
      return 0;
    }
    try {
      comm.allReduce(in.data(), out.data(), 1000, DataType::Float32, RedOp::Sum).wait();
      std::printf("rank %d: FAIL: completed without rank 2\n", rank);
      return 1;
    } catch (const chorus::Error& e) {
      const bool named = std::string(e.what()).find("rank 2 is not waiting in any collective") !=
                         std::string::npos;
      std::printf("rank %d: %s%s: %s\n", rank,
                  named ? "" : "FAIL (rank 2 not named): ", chorus::toString(e.code()), e.what());
      return named ? 0 : 1;
    }
  }
  try {
    chorus::Work work = call(comm, which, rank == 1, in, out);
    if (!work.wait(std::chrono::seconds(10))) {
      std::printf("rank %d: FAIL: no error after 10 s\n", rank);
      comm.abort();
      return 1;
    }
    if (rank != 1 && expectFor(which).othersMayComplete) {
      std::printf("rank %d: completed (the difference does not reach it)\n", rank);
      return 0;
    }
    std::printf("rank %d: FAIL: the mismatched call succeeded\n", rank);
    return 1;
  } catch (const chorus::Error& e) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const std::string what = e.what();
    const Expect expect = expectFor(which);
    const bool named = what.find("mismatched calls") != std::string::npos &&
                       what.find(expect.odd) != std::string::npos &&
                       what.find(expect.even) != std::string::npos;
    const bool inTime = ms < 10000;
    std::printf(
        "rank %d: %s%s%s: %s (%.1f ms)\n", rank, named ? "" : "FAIL (both calls not named): ",
        inTime ? "" : "FAIL (not within 10 s): ", chorus::toString(e.code()), what.c_str(), ms);
    return named && inTime ? 0 : 1;
  }
}
