// compare_mpi: the chorus-perf table for the MPI library's own collectives
// (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce,
// MPI_Sendrecv), to compare against chorus-perf on the same machine and sizes.
// Start with `mpirun -np N compare_mpi [chorus-perf flags]`.
#include "chorus_perf_args.hpp"
#include "chorus_perf_runner.hpp"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

namespace {

MPI_Datatype mpiType(perf::Type type) {
  switch (type) {
    case perf::Type::Int8:
      return MPI_INT8_T;
    case perf::Type::Uint8:
      return MPI_UINT8_T;
    case perf::Type::Int32:
      return MPI_INT32_T;
    case perf::Type::Uint32:
      return MPI_UINT32_T;
    case perf::Type::Int64:
      return MPI_INT64_T;
    case perf::Type::Uint64:
      return MPI_UINT64_T;
    case perf::Type::Float32:
      return MPI_FLOAT;
    case perf::Type::Float64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;  // MPI has no half or bfloat16
  }
}

MPI_Op mpiOp(perf::Op op) {
  switch (op) {
    case perf::Op::Sum:
      return MPI_SUM;
    case perf::Op::Prod:
      return MPI_PROD;
    case perf::Op::Max:
      return MPI_MAX;
    case perf::Op::Min:
      return MPI_MIN;
    default:
      return MPI_OP_NULL;  // no average in MPI
  }
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + ": " + std::string(text, len));
}

class MpiBackend : public perf::Backend {
 public:
  MpiBackend() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool supports(perf::Type t) const override { return mpiType(t) != MPI_DATATYPE_NULL; }
  bool supports(perf::Op o) const override { return mpiOp(o) != MPI_OP_NULL; }
  bool reduceScatterInPlaceAtRankOffset() const override { return false; }
  bool inPlaceSendRecvDefined() const override { return true; }  // MPI_Sendrecv_replace

  void run(const perf::Call& c) override {
    if (c.count > static_cast<size_t>(INT_MAX)) throw std::runtime_error("count exceeds INT_MAX");
    const int count = static_cast<int>(c.count);
    const MPI_Datatype type = mpiType(c.type);
    const MPI_Op op = mpiOp(c.op);
    const size_t bytes = c.count * perf::typeSize(c.type);
    const bool same = c.send == c.recv;
    switch (c.coll) {
      case perf::Coll::AllReduce:
        check(MPI_Allreduce(same ? MPI_IN_PLACE : c.send, c.recv, count, type, op, MPI_COMM_WORLD),
              "MPI_Allreduce");
        break;
      case perf::Coll::AllGather: {
        const bool inPlace = c.send == static_cast<char*>(c.recv) + bytes * rank_;
        check(MPI_Allgather(inPlace ? MPI_IN_PLACE : c.send, count, type, c.recv, count, type,
                            MPI_COMM_WORLD),
              "MPI_Allgather");
        break;
      }
      case perf::Coll::ReduceScatter:
        check(MPI_Reduce_scatter_block(same ? MPI_IN_PLACE : c.send, c.recv, count, type, op,
                                       MPI_COMM_WORLD),
              "MPI_Reduce_scatter_block");
        break;
      case perf::Coll::Broadcast:
        // MPI_Bcast has one buffer: out-of-place, the root first copies send to recv.
        if (rank_ == c.root && !same) std::memcpy(c.recv, c.send, bytes);
        check(MPI_Bcast(c.recv, count, type, c.root, MPI_COMM_WORLD), "MPI_Bcast");
        break;
      case perf::Coll::Reduce: {
        const void* send = (same && rank_ == c.root) ? MPI_IN_PLACE : c.send;
        check(MPI_Reduce(send, c.recv, count, type, op, c.root, MPI_COMM_WORLD), "MPI_Reduce");
        break;
      }
      case perf::Coll::AllToAll:
        check(MPI_Alltoall(same ? MPI_IN_PLACE : c.send, count, type, c.recv, count, type,
                           MPI_COMM_WORLD),
              "MPI_Alltoall");
        break;
      case perf::Coll::SendRecv: {
        const int next = (rank_ + 1) % size_;
        const int prev = (rank_ + size_ - 1) % size_;
        if (same) {
          check(MPI_Sendrecv_replace(c.recv, count, type, next, 0, prev, 0, MPI_COMM_WORLD,
                                     MPI_STATUS_IGNORE),
                "MPI_Sendrecv_replace");
        } else {
          check(MPI_Sendrecv(c.send, count, type, next, 0, c.recv, count, type, prev, 0,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Sendrecv");
        }
        break;
      }
    }
  }

  std::string info() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, len);
    v = v.substr(0, v.find_first_of(",\n"));
    return v + " nranks " + std::to_string(size_);
  }
  std::string rankInfo() const override { return "MPI"; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const perf::ArgsSpec spec{"compare_mpi", false};
  perf::Args args;
  std::string error;
  int status = 0;
  switch (perf::parseArgs(argc, argv, spec, args, error)) {
    case perf::ParseStatus::Help:
      if (rank == 0) std::fputs(perf::usage(spec).c_str(), stdout);
      break;
    case perf::ParseStatus::Error:
      if (rank == 0)
        std::fprintf(stderr, "compare_mpi: %s\n%s", error.c_str(), perf::usage(spec).c_str());
      status = 2;
      break;
    case perf::ParseStatus::Ok:
      try {
        MpiBackend backend;
        status = perf::runBenchmark(args, backend,
                                    std::string("compare_mpi ") + perf::collName(args.coll));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "# Rank %d: error: %s\n", rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      break;
  }
  MPI_Finalize();
  return status;
}
