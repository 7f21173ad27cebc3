#include "chorus_perf_types.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace perf {
namespace {

struct TypeInfo {
  const char* name;
  size_t size;
  bool isFloat;
};
constexpr std::array<TypeInfo, kNumTypes> kTypes = {{
    {"int8", 1, false},
    {"uint8", 1, false},
    {"int32", 4, false},
    {"uint32", 4, false},
    {"int64", 8, false},
    {"uint64", 8, false},
    {"half", 2, true},
    {"float", 4, true},
    {"double", 8, true},
    {"bfloat16", 2, true},
    {"f8e4m3", 1, true},
    {"f8e5m2", 1, true},
}};

constexpr std::array<const char*, kNumOps> kOps = {"sum", "prod", "max", "min", "avg"};

struct CollName {
  const char* name;
  Coll coll;
};
// Canonical names first; the rest are accepted spellings.
constexpr std::array<CollName, 14> kColls = {{
    {"allreduce", Coll::AllReduce},
    {"allgather", Coll::AllGather},
    {"reducescatter", Coll::ReduceScatter},
    {"broadcast", Coll::Broadcast},
    {"reduce", Coll::Reduce},
    {"sendrecv", Coll::SendRecv},
    {"alltoall", Coll::AllToAll},
    {"all_reduce", Coll::AllReduce},
    {"all_gather", Coll::AllGather},
    {"reduce_scatter", Coll::ReduceScatter},
    {"bcast", Coll::Broadcast},
    {"send_recv", Coll::SendRecv},
    {"p2p", Coll::SendRecv},
    {"all_to_all", Coll::AllToAll},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

size_t typeSize(Type type) { return kTypes[static_cast<int>(type)].size; }
bool isFloat(Type type) { return kTypes[static_cast<int>(type)].isFloat; }
const char* typeName(Type type) { return kTypes[static_cast<int>(type)].name; }
const char* opName(Op op) { return kOps[static_cast<int>(op)]; }

const char* collName(Coll coll) {
  for (const auto& c : kColls) {
    if (c.coll == coll) return c.name;
  }
  return "?";
}

std::optional<Type> parseType(std::string_view name) {
  const std::string n = lower(name);
  for (int i = 0; i < kNumTypes; ++i) {
    if (n == kTypes[i].name) return static_cast<Type>(i);
  }
  if (n == "float16" || n == "fp16") return Type::Float16;
  if (n == "float32" || n == "fp32") return Type::Float32;
  if (n == "float64" || n == "fp64") return Type::Float64;
  if (n == "bf16") return Type::Bfloat16;
  if (n == "fp8_e4m3" || n == "fp8e4m3" || n == "e4m3") return Type::Float8e4m3;
  if (n == "fp8_e5m2" || n == "fp8e5m2" || n == "e5m2") return Type::Float8e5m2;
  if (n == "char") return Type::Int8;
  if (n == "int") return Type::Int32;
  return std::nullopt;
}

std::optional<Op> parseOp(std::string_view name) {
  const std::string n = lower(name);
  for (int i = 0; i < kNumOps; ++i) {
    if (n == kOps[i]) return static_cast<Op>(i);
  }
  return std::nullopt;
}

std::optional<Coll> parseColl(std::string_view name) {
  std::string n = lower(name);
  std::replace(n.begin(), n.end(), '-', '_');
  for (const auto& c : kColls) {
    if (n == c.name) return c.coll;
  }
  return std::nullopt;
}

std::optional<Coll> collFromProgramName(std::string_view argv0) {
  const size_t slash = argv0.find_last_of('/');
  std::string n = lower(slash == std::string_view::npos ? argv0 : argv0.substr(slash + 1));
  n.erase(std::remove_if(n.begin(), n.end(), [](char c) { return c == '_' || c == '-'; }), n.end());
  // Longest names first: "allreduce" and "reducescatter" contain "reduce".
  constexpr std::array<CollName, 7> kOrder = {{{"reducescatter", Coll::ReduceScatter},
                                               {"alltoall", Coll::AllToAll},
                                               {"allreduce", Coll::AllReduce},
                                               {"allgather", Coll::AllGather},
                                               {"broadcast", Coll::Broadcast},
                                               {"sendrecv", Coll::SendRecv},
                                               {"reduce", Coll::Reduce}}};
  for (const auto& c : kOrder) {
    if (n.find(c.name) != std::string::npos) return c.coll;
  }
  return std::nullopt;
}

bool hasOp(Coll coll) {
  return coll == Coll::AllReduce || coll == Coll::ReduceScatter || coll == Coll::Reduce;
}

bool hasRoot(Coll coll) { return coll == Coll::Broadcast || coll == Coll::Reduce; }

Layout layoutFor(Coll coll, size_t bytes, Type type, int nranks, int rank) {
  const size_t n = static_cast<size_t>(nranks);
  const size_t elems = bytes / typeSize(type);
  Layout l;
  switch (coll) {
    case Coll::AllGather:
      l.paramCount = elems / n;
      l.sendCount = l.paramCount;
      l.recvCount = l.paramCount * n;
      l.count = l.recvCount;
      l.sendInPlaceOffset = l.paramCount * static_cast<size_t>(rank);
      break;
    case Coll::ReduceScatter:
      l.paramCount = elems / n;
      l.sendCount = l.paramCount * n;
      l.recvCount = l.paramCount;
      l.count = l.sendCount;
      l.recvInPlaceOffset = l.paramCount * static_cast<size_t>(rank);
      break;
    case Coll::AllToAll:  // as nccl-tests: the size is the whole buffer, count / n per peer
      l.paramCount = elems / n;
      l.sendCount = l.recvCount = l.count = l.paramCount * n;
      break;
    default:
      l.paramCount = l.sendCount = l.recvCount = l.count = elems;
      break;
  }
  l.bytes = l.count * typeSize(type);
  return l;
}

double busFactor(Coll coll, int nranks) {
  const double n = nranks;
  switch (coll) {
    case Coll::AllReduce:
      return 2.0 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AllToAll:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

}  // namespace perf
