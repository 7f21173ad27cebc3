// `chorus-perf --explain N [--link shm|tcp|ib|ucx|nvlink] [-t COLL]`: prints the cost
// model's predicted time of every algorithm at each size for N ranks (no ranks started),
// the crossover table the tuner works from (with CHORUS_TUNE_FILE's figures when set).
#include "chorus_perf_explain.hpp"

#include "algorithms/schedule.hpp"
#include "settings/settings.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/tuning.hpp"

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
  // The figures the tuner would use: CHORUS_TUNE_FILE's entry for this link and rank
  // count when there is one, else the defaults.
  chorus::Tuning tuning = chorus::defaultTuning(*linkClass);
  if (const char* file = chorus::settings::cstr("CHORUS_TUNE_FILE"); file && *file) {
    try {
      if (auto entry = chorus::pickTuning(chorus::readTuneFile(file), *linkClass, nranks))
        tuning = *entry, tuning.source = file;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "chorus-perf --explain: %s\n", e.what());
      return 1;
    }
  }
  std::printf("# figures: %s\n", tuning.source.c_str());
  std::fputs(chorus::explainTable(*collective, nranks, tuning.model).c_str(), stdout);
  return 0;
}

}  // namespace perf
