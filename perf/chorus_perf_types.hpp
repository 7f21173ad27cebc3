// Data types, reduction ops and collectives of the benchmark suite, and what each
// collective moves (element counts, in-place offsets, bus-bandwidth factor), following
// nccl-tests. Independent of the library so compare_mpi can share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace perf {

// Values equal NCCL's (and Chorus') enums.
enum class Type : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
  Float8e4m3 = 10,  // OCP FP8 E4M3 ("fn": no inf, 0x7f/0xff NaN, max 448)
  Float8e5m2 = 11,  // OCP FP8 E5M2 (IEEE-like: inf, NaN)
};
inline constexpr int kNumTypes = 12;

enum class Op : int { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4 };
inline constexpr int kNumOps = 5;

enum class Coll { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv, AllToAll };

size_t typeSize(Type type);
bool isFloat(Type type);
const char* typeName(Type type);  // nccl-tests names: int8 ... half float double bfloat16
                                  // f8e4m3 f8e5m2
const char* opName(Op op);        // sum prod max min avg
const char* collName(Coll coll);  // allreduce allgather ...

std::optional<Type> parseType(std::string_view name);
std::optional<Op> parseOp(std::string_view name);
std::optional<Coll> parseColl(std::string_view name);
// Collective named by a program name such as "all_gather_perf" or "chorus-reduce-scatter".
std::optional<Coll> collFromProgramName(std::string_view argv0);

bool hasOp(Coll coll);    // takes a reduction op
bool hasRoot(Coll coll);  // broadcast, reduce

// Element counts for one row of the table, given the row's size in bytes.
struct Layout {
  size_t count = 0;       // elements printed in the "count" column (total for gather/scatter)
  size_t bytes = 0;       // bytes printed in the "size" column (count * typeSize)
  size_t paramCount = 0;  // count passed to the call (per-rank for allgather/reducescatter,
                          // per-peer for alltoall)
  size_t sendCount = 0;   // elements in the send buffer
  size_t recvCount = 0;   // elements in the receive buffer
  // In-place: both pointers point into one buffer of max(send, recv) elements at these
  // element offsets (NCCL convention: allgather send = recv + rank * paramCount,
  // reducescatter recv = send + rank * paramCount).
  size_t sendInPlaceOffset = 0;
  size_t recvInPlaceOffset = 0;
};
Layout layoutFor(Coll coll, size_t bytes, Type type, int nranks, int rank);

// busbw = algbw * factor: 2(n-1)/n all-reduce, (n-1)/n all-gather, reduce-scatter and
// all-to-all, 1 for broadcast, reduce and send/recv.
double busFactor(Coll coll, int nranks);

}  // namespace perf
