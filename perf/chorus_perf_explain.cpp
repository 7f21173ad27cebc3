// `chorus-perf --explain N [--link shm|tcp|ib|ucx|nvlink] [-t COLL]`: prints the cost
// model's predicted time of every algorithm at each size for N ranks (no ranks started),
// the crossover table the tuner works from.
#include "chorus_perf_explain.hpp"

#include "algorithms/schedule.hpp"
#include "tuner/cost_model.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace perf {
namespace {

std::optional<chorus::Collective> collectiveNamed(std::string_view name) {
  if (name == "allreduce") return chorus::Collective::AllReduce;
  if (name == "allgather") return chorus::Collective::AllGather;
  if (name == "reducescatter") return chorus::Collective::ReduceScatter;
  if (name == "broadcast") return chorus::Collective::Broadcast;
  if (name == "reduce") return chorus::Collective::Reduce;
  if (name == "alltoall") return chorus::Collective::AllToAll;
  return std::nullopt;
}

}  // namespace

std::optional<int> runExplain(int argc, char** argv) {
  int nranks = 0;
  std::string link = "shm", coll = "allreduce";
  bool wanted = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--explain") {
      wanted = true;
      nranks = std::atoi(next());
    } else if (a == "--link") {
      link = next();
    } else if (a == "-t") {
      coll = next();
    }
  }
  if (!wanted) return std::nullopt;
  auto linkClass = chorus::parseLinkClass(link);
  auto collective = collectiveNamed(coll);
  if (nranks < 1 || !linkClass || !collective) {
    std::fprintf(stderr,
                 "usage: chorus-perf --explain NRANKS [--link shm|tcp|ib|ucx|nvlink] "
                 "[-t allreduce|allgather|reducescatter|broadcast|reduce|alltoall]\n");
    return 2;
  }
  std::fputs(
      chorus::explainTable(*collective, nranks, chorus::defaultLinkModel(*linkClass)).c_str(),
      stdout);
  return 0;
}

}  // namespace perf
