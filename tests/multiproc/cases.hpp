// The case list of chorus_collectives_test: the same on every rank, in the same order.
#pragma once

#include "dtypes.hpp"
#include "inputs.hpp"

#include <chorus/chorus.hpp>

#include <cstddef>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

namespace chorus_test {

enum class Coll {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  SendRecv,
  AllToAll,
  Gather,
  Scatter,
  AllGatherV,
  ReduceScatterV
};

inline const char* collName(Coll c) {
  switch (c) {
    case Coll::AllReduce:
      return "allReduce";
    case Coll::AllGather:
      return "allGather";
    case Coll::ReduceScatter:
      return "reduceScatter";
    case Coll::Broadcast:
      return "broadcast";
    case Coll::Reduce:
      return "reduce";
    case Coll::SendRecv:
      return "sendRecv";
    case Coll::AllToAll:
      return "allToAll";
    case Coll::Gather:
      return "gather";
    case Coll::Scatter:
      return "scatter";
    case Coll::AllGatherV:
      return "allGatherV";
    case Coll::ReduceScatterV:
      return "reduceScatterV";
  }
  return "?";
}

inline bool isReduction(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce ||
         c == Coll::ReduceScatterV;
}
inline bool isRooted(Coll c) {
  return c == Coll::Broadcast || c == Coll::Reduce || c == Coll::Gather || c == Coll::Scatter;
}

// The v-collectives' per-rank counts for a case's count: uneven, every third rank empty.
inline std::vector<size_t> unevenCounts(int nranks, size_t count) {
  std::vector<size_t> counts(static_cast<size_t>(nranks), 0);
  for (int r = 0; count > 0 && r < nranks; ++r) counts[r] = r % 3 == 1 ? 0 : count + r;
  return counts;
}

inline const char* opName(chorus::RedOp op) {
  switch (op) {
    case chorus::RedOp::Sum:
      return "sum";
    case chorus::RedOp::Prod:
      return "prod";
    case chorus::RedOp::Max:
      return "max";
    case chorus::RedOp::Min:
      return "min";
    case chorus::RedOp::Avg:
      return "avg";
  }
  return "?";
}

inline constexpr chorus::RedOp kOps[] = {chorus::RedOp::Sum, chorus::RedOp::Prod,
                                         chorus::RedOp::Min, chorus::RedOp::Max,
                                         chorus::RedOp::Avg};

// The large count: odd, not a multiple of anything a chunking scheme would pick. A quarter
// of it under ThreadSanitizer (0.5 MiB of uint8 to 4 MiB of float64: the wider types still
// span several shm FIFOs and tcp rings). Its range checks made the 42 large cases
// 46 s of the 48 of a two-rank quick run.
#if defined(__SANITIZE_THREAD__)
inline constexpr size_t kLargeCount = (size_t{1} << 19) + 3;
#else
inline constexpr size_t kLargeCount = (size_t{1} << 21) + 3;
#endif
inline constexpr size_t kSmallCounts[] = {0, 1, 7, 1023};

struct Case {
  int index = 0;
  Coll coll = Coll::AllReduce;
  int root = 0;  // broadcast/reduce: root; sendRecv: shift (send to rank + shift)
  const TypeInfo* type = nullptr;
  chorus::RedOp op = chorus::RedOp::Sum;  // reductions only
  size_t count = 0;  // per-rank count for allGather (send), reduceScatter (recv), allToAll,
                     // gather (send), scatter (recv); the v-collectives: unevenCounts' base
  bool inPlace = false;
  uint64_t seed = 0;
};

inline std::string describe(const Case& c) {
  char buf[192];
  std::string what = collName(c.coll);
  if (isRooted(c.coll)) {
    what += "(root=" + std::to_string(c.root) + ")";
  } else if (c.coll == Coll::SendRecv) {
    what += "(shift=" + std::to_string(c.root) + ")";
  }
  std::snprintf(buf, sizeof buf, "case #%d %s %s%s%s count=%zu %s", c.index, what.c_str(),
                c.type->name, isReduction(c.coll) ? " " : "",
                isReduction(c.coll) ? opName(c.op) : "", c.count,
                c.inPlace ? "in-place" : "out-of-place");
  return buf;
}

// Which (type, op) pairs also run at the large count.
inline bool largeSelected(const TypeInfo& t, chorus::RedOp op, bool reduction, bool quick) {
  if (t.size == 1 && t.kind == Kind::Float) return false;  // fp8: small counts (CI time)
  if (quick) {
    if (!reduction) return t.type == chorus::DataType::Uint8 || t.type == chorus::DataType::Float64;
    return (t.type == chorus::DataType::Float32 && op == chorus::RedOp::Sum) ||
           (t.type == chorus::DataType::Bfloat16 && op == chorus::RedOp::Avg) ||
           (t.type == chorus::DataType::Uint8 && op == chorus::RedOp::Sum);
  }
  if (!reduction || op == chorus::RedOp::Sum) return true;
  return t.type == chorus::DataType::Float32 || t.type == chorus::DataType::Int32;
}

// more: the collectives of issue 13 only (gather, scatter, all-gather-v, reduce-scatter-v),
// every type (and op where a reduction applies), in place and out of place.
inline std::vector<Case> buildCases(int nranks, bool quick, bool more = false) {
  std::vector<Case> cases;
  auto add = [&](Coll coll, int root, const TypeInfo& t, chorus::RedOp op, size_t count,
                 bool inPlace) {
    Case c;
    c.index = static_cast<int>(cases.size());
    c.coll = coll;
    c.root = root;
    c.type = &t;
    c.op = op;
    c.count = count;
    c.inPlace = inPlace;
    c.seed = mix64(0x5eed0000ull + static_cast<uint64_t>(c.index));
    cases.push_back(c);
  };
  // Per-rank count for the large allGather/reduceScatter/allToAll: the whole buffer stays
  // ~kLargeCount.
  const size_t largePerRank = (kLargeCount / static_cast<size_t>(nranks)) | 1;
  std::vector<int> roots = {0};
  if (nranks > 1) roots.push_back(nranks - 1);

  struct Shape {
    Coll coll;
    int root;
  };
  std::vector<Shape> shapes;
  if (more) {
    for (int r : roots) shapes.push_back({Coll::Gather, r});
    for (int r : roots) shapes.push_back({Coll::Scatter, r});
    shapes.push_back({Coll::AllGatherV, 0});
    shapes.push_back({Coll::ReduceScatterV, 0});
  } else {
    shapes = {{Coll::AllReduce, 0}, {Coll::ReduceScatter, 0}};
    for (int r : roots) shapes.push_back({Coll::Reduce, r});
    shapes.push_back({Coll::AllGather, 0});
    shapes.push_back({Coll::AllToAll, 0});
    for (int r : roots) shapes.push_back({Coll::Broadcast, r});
  }

  for (const Shape& s : shapes) {
    bool red = isReduction(s.coll);
    bool perRank = s.coll != Coll::AllReduce && s.coll != Coll::Broadcast && s.coll != Coll::Reduce;
    for (const TypeInfo& t : kTypes) {
      for (chorus::RedOp op : kOps) {
        if (!red && op != chorus::RedOp::Sum) continue;  // copies: one pass per type
        for (bool inPlace : {false, true}) {
          for (size_t count : kSmallCounts) add(s.coll, s.root, t, op, count, inPlace);
          if (largeSelected(t, op, red, quick)) {
            add(s.coll, s.root, t, op, perRank ? largePerRank : kLargeCount, inPlace);
          }
        }
      }
    }
  }
  if (more) return cases;
  // Point to point: a ring exchange (shift 1) for every type and count, and every other
  // shift for a few types at count 7. On one rank the ring is a send to oneself.
  for (const TypeInfo& t : kTypes) {
    for (size_t count : kSmallCounts) add(Coll::SendRecv, 1, t, chorus::RedOp::Sum, count, false);
    if (largeSelected(t, chorus::RedOp::Sum, false, quick)) {
      add(Coll::SendRecv, 1, t, chorus::RedOp::Sum, kLargeCount, false);
    }
  }
  for (int shift = 2; shift < nranks; ++shift) {
    for (int ti : {1, 7}) {  // uint8, float32
      add(Coll::SendRecv, shift, kTypes[ti], chorus::RedOp::Sum, 7, false);
    }
  }
  return cases;
}

// Send/recv order that cannot deadlock even if a send blocks until its receive is posted:
// in every cycle of the permutation r -> r + shift, the smallest rank receives first.
inline bool recvFirst(int rank, int nranks, int shift) {
  int g = std::gcd(nranks, shift);
  return rank < (g == 0 ? 1 : g);
}

}  // namespace chorus_test
