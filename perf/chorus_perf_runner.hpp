// The benchmark driver shared by chorus-perf and compare_mpi: sweeps sizes, types, ops
// and roots, times out-of-place and in-place calls, checks results, aggregates times over
// ranks and prints the nccl-tests table on rank 0. A Backend supplies the collectives.
#pragma once

#include "chorus_perf_args.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace perf {

// One collective call, with the library's conventions (NCCL's): `count` is the per-rank
// send count for allgather and the per-rank receive count for reducescatter; for
// sendrecv every rank sends `count` elements to rank + 1 and receives from rank - 1.
struct Call {
  Coll coll = Coll::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  Type type = Type::Float32;
  Op op = Op::Sum;
  int root = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Runs one call to completion; throws (any std::exception) on failure.
  virtual void run(const Call& call) = 0;
  virtual bool supports(Type) const { return true; }
  // -R 1: registers a buffer (returns a handle for deregister); -R 2: the library's
  // allocator (memAlloc/memFree). A backend without them throws a std::exception.
  virtual void* registerBuffer(void* data, size_t bytes);
  virtual void deregister(void* handle);
  virtual void* allocate(size_t bytes);
  virtual void release(void* data);
  virtual bool supports(Op) const { return true; }
  // Printed in the header (e.g. the library and transport) and on each rank's line.
  virtual std::string info() const { return {}; }
  virtual std::string rankInfo() const { return {}; }
  // In-place reduce-scatter leaves the result at send + rank * count (NCCL); MPI_IN_PLACE
  // leaves it at the start of the buffer instead.
  virtual bool reduceScatterInPlaceAtRankOffset() const { return true; }
  // Whether an in-place sendrecv (one buffer both sent and received) has defined
  // contents afterwards; when not, its #wrong column is N/A as in nccl-tests.
  virtual bool inPlaceSendRecvDefined() const { return false; }
  // Variants of the library to compare in one run (runVariants), e.g. algorithms;
  // select() switches to one, picked() names what the library chose for a call.
  virtual std::vector<std::string> variants() const { return {}; }
  virtual void select(const std::string& /*variant*/) {}
  virtual std::string picked(const Call& /*call*/) const { return {}; }
};

// Runs the whole benchmark described by args. Returns the process exit status: 0, or 1
// when any element was wrong. Errors from the backend propagate after rank 0 has written
// the JSON report (if asked for) with the message.
int runBenchmark(const Args& args, Backend& backend, const std::string& program);

// Every variant of the backend at every size, interleaved (a different order each of
// args.repeats rounds, the median kept), out of place, first type/op/root: one table of
// busbw per variant, '*' on the best, the variant named "auto" with what it picked and
// its speed relative to the best. Returns as runBenchmark.
int runVariants(const Args& args, Backend& backend, const std::string& program);

}  // namespace perf
