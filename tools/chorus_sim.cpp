// chorus-sim: Chorus's own schedules on a modelled cluster (16k-100k GPUs), and a long
// job's failures and checkpoints. Collective mode prints, per algorithm, chorus-perf's
// table of simulated time and bandwidth, then per size the fastest simulated algorithm and
// the tuner's choice at that scale. Job mode (--job) prints effective training time.
#include "engine/step_trace.hpp"
#include "settings/settings.hpp"
#include "sim/checkpoint.hpp"
#include "sim/fabric_network.hpp"
#include "sim/simulate.hpp"
#include "tuner/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace chorus;
using namespace chorus::sim;

namespace {

void usage() {
  std::puts(
      "usage: chorus-sim [collective options] | --job [job options] | --llama\n"
      "collectives (on a modelled fabric):\n"
      "  --fabric NAME        preset: dgx-h100 (default), meta-roce, meta-ib, uniform\n"
      "  --fabric-file PATH   fabric file (format in src/sim/fabric.hpp)\n"
      "  --nodes N            nodes (GPUs = N x GPUs per node); --gpus G: nodes = G / GPUs per "
      "node\n"
      "  --qps Q              flows each transfer is striped over (ECMP hashes each)\n"
      "  -c NAME              allreduce (default), allgather, reducescatter, broadcast, reduce, "
      "alltoall\n"
      "  -A a,b,...           algorithms (default: all of the collective)\n"
      "  -b BYTES -e BYTES -f FACTOR   sizes as chorus-perf (default 64K..1G x4; K/M/G suffixes)\n"
      "  --full               no compression (replay every rank)\n"
      "  --no-tuner           leave out the tuner's choices (time the simulation alone)\n"
      "  --csv PATH           also write rows: "
      "collective,fabric,ranks,algorithm,bytes,us,busbw,best,tuner\n"
      "                       (best: the fastest, every one tied for it joined by '|')\n"
      "  --timeline PREFIX    also write each call's replayed steps as Chrome-trace JSON,\n"
      "                       PREFIX.ALGORITHM.BYTES.json (CHORUS_TRACE_STEPS's form; with\n"
      "                       compression the replayed ranks only: add --full)\n"
      "jobs (failures and checkpoints):\n"
      "  --job --gpus G --gpu-mtbf-hours H | --job-mtbf-hours H  --wall-hours H\n"
      "        --interval-min M --save-s S [--async-s S] --restart-min M\n"
      "        [--shrink --replica-gpus G --shrinkable F --repair-hours H]\n"
      "  --llama              the Llama 3 snapshot (16,384 GPUs, 54 days, 419 interruptions) and "
      "100k");
}

size_t parseBytes(const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  switch (end && *end ? *end : 0) {
    case 'K':
    case 'k':
      v *= 1024;
      break;
    case 'M':
    case 'm':
      v *= 1 << 20;
      break;
    case 'G':
    case 'g':
      v *= 1 << 30;
      break;
    default:
      break;
  }
  return static_cast<size_t>(v);
}

// The non-empty items of a comma-separated list.
std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out = chorus::settings::splitList(text);
  std::erase(out, std::string());
  return out;
}

std::optional<Collective> parseCollective(const std::string& name) {
  static const std::map<std::string, Collective> names = {
      {"allreduce", Collective::AllReduce},
      {"allgather", Collective::AllGather},
      {"reducescatter", Collective::ReduceScatter},
      {"broadcast", Collective::Broadcast},
      {"reduce", Collective::Reduce},
      {"alltoall", Collective::AllToAll}};
  auto it = names.find(name);
  return it == names.end() ? std::nullopt : std::optional(it->second);
}

// Bytes on the wire per rank relative to the buffer, as chorus-perf (nccl-tests).
double busFactor(Collective c, int n) {
  switch (c) {
    case Collective::AllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return static_cast<double>(n - 1) / n;
    default:
      return 1;
  }
}

// Elements the algorithm is asked for, given a buffer of `bytes` (chorus-perf's count),
// and that buffer's size: all-gather and reduce-scatter count per rank, all-to-all per
// pair. Counts round to a multiple of the ranks (nranks x 64 at least), so every rank's
// share is equal and the compressed replay applies; the table shows the bytes simulated.
size_t countFor(Collective c, size_t bytes, int n, size_t* buffer) {
  size_t total = std::max<size_t>(bytes / 4, size_t(n));
  total = (total + n - 1) / n * n;
  size_t count = total;
  if (c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllToAll)
    count = total / n;
  *buffer = total * 4;
  return count;
}

std::string fit(double v, int width) {
  char text[32];
  for (int decimals = 2; decimals >= 0; --decimals) {
    std::snprintf(text, sizeof(text), "%.*f", decimals, v);
    if (static_cast<int>(std::strlen(text)) <= width) return text;
  }
  std::snprintf(text, sizeof(text), "%.1e", v);
  return text;
}

// Algorithms whose every step has its own flow pattern (p - 1 patterns of p flows each):
// beyond this many ranks their flow-level solve is too slow to be worth it.
const char* tooCostly(const Algorithm& a, int n) {
  const bool quadratic = !std::strcmp(a.name, "oneshot") || !std::strcmp(a.name, "twoshot") ||
                         !std::strcmp(a.name, "pairwise");
  if (quadratic && n > 2048)
    return "every step has its own flow pattern (p - 1 patterns of p flows)";
  return nullptr;
}

// The fastest of a size's simulated algorithms: every one whose time equals the minimum
// within a relative 1e-9. Ties are real here: where one bound (a shared NIC's rate) sets
// the time, several schedules replay to the same time, but the floating-point sums of
// different schedules round differently in their last bits (hier 2097.6639999999998 us,
// hier_rd 2097.6640000000002 on a 2x2 bed); 1e-9 is far above that and far below any
// difference a measurement could resolve. In the order given.
std::vector<std::pair<const Algorithm*, double>> fastestTied(
    const std::vector<std::pair<const Algorithm*, double>>& results) {
  double best = results.front().second;
  for (auto& [a, us] : results) best = std::min(best, us);
  std::vector<std::pair<const Algorithm*, double>> tied;
  for (auto& r : results)
    if (r.second <= best * (1 + 1e-9)) tied.push_back(r);
  return tied;
}

std::string joinNames(const std::vector<std::pair<const Algorithm*, double>>& results,
                      const char* separator) {
  std::string names;
  for (auto& [a, us] : results) names += (names.empty() ? "" : separator) + std::string(a->name);
  return names;
}

// The replay's steps in CHORUS_TRACE_STEPS's form (engine/step_trace.hpp): call #0 of
// every replayed rank, from 0 us, the call's span ending at the rank's last step.
void writeTimeline(const std::string& path, const std::vector<StepTime>& timeline,
                   Collective collective, const Algorithm& algorithm, size_t count) {
  StepTraceWriter writer(path);
  std::map<int, double> last;
  std::vector<const StepTime*> order;  // by start: the local lanes go in time order
  for (const StepTime& t : timeline) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](const StepTime* a, const StepTime* b) { return a->start < b->start; });
  for (const StepTime* step : order) {
    const StepTime& t = *step;
    StepTraceWriter::StepEvent e;
    e.rank = t.rank;
    e.step = t.step;
    e.kind = t.kind;
    e.peer = t.peer;
    e.bytes = t.bytes;
    e.after = t.after;
    e.start = t.start;
    e.end = t.finish;
    e.algorithm = algorithm.name;
    writer.step(e);
    last[t.rank] = std::max(last[t.rank], t.finish);
  }
  for (auto [rank, end] : last)
    writer.call(rank, std::string(toString(collective)) + " " + algorithm.name, 0, 0, end, count,
                true);
}

int collectives(int argc, char** argv) {
  std::string fabricName = "dgx-h100", fabricFile, csvPath, timelinePrefix;
  int nodes = 0, gpus = 0, qps = 0;
  Collective collective = Collective::AllReduce;
  std::vector<std::string> only;
  size_t minBytes = 64 << 10, maxBytes = size_t{1} << 30;
  double factor = 4;
  bool compress = true;
  bool withTuner = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "chorus-sim: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--fabric")
      fabricName = next();
    else if (a == "--fabric-file")
      fabricFile = next();
    else if (a == "--nodes")
      nodes = std::atoi(next());
    else if (a == "--gpus")
      gpus = std::atoi(next());
    else if (a == "--qps")
      qps = std::atoi(next());
    else if (a == "-c") {
      auto c = parseCollective(next());
      if (!c) {
        std::fprintf(stderr, "chorus-sim: unknown collective %s\n", argv[i]);
        return 2;
      }
      collective = *c;
    } else if (a == "-A")
      only = split(next());
    else if (a == "-b")
      minBytes = parseBytes(next());
    else if (a == "-e")
      maxBytes = parseBytes(next());
    else if (a == "-f")
      factor = std::atof(next());
    else if (a == "--full")
      compress = false;
    else if (a == "--no-tuner")
      withTuner = false;
    else if (a == "--csv")
      csvPath = next();
    else if (a == "--timeline")
      timelinePrefix = next();
    else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "chorus-sim: unknown option %s\n", a.c_str());
      usage();
      return 2;
    }
  }
  if (factor <= 1 || minBytes == 0 || maxBytes < minBytes) {
    std::fprintf(stderr, "chorus-sim: need 0 < -b <= -e and -f > 1\n");
    return 2;
  }
  Fabric fabric = fabricFile.empty() ? presetFabric(fabricName) : readFabricFile(fabricFile);
  if (gpus > 0) nodes = (gpus + fabric.gpusPerNode - 1) / fabric.gpusPerNode;
  if (nodes > 0) fabric.nodes = nodes;
  if (qps > 0) fabric.qps = qps;
  const int n = fabric.gpus();
  FabricNetwork net(fabric);
  const Layout layout = Layout::uniform(fabric.nodes, fabric.gpusPerNode);
  std::vector<const Algorithm*> algos;
  for (const Algorithm& a : allAlgorithms()) {
    // One-sided algorithms read peers' registered host memory: not modelled on a fabric yet.
    if (a.collective != collective || a.oneSided) continue;
    if (!only.empty() && std::find(only.begin(), only.end(), std::string(a.name)) == only.end())
      continue;
    algos.push_back(&a);
  }
  if (algos.empty()) {
    std::fprintf(stderr, "chorus-sim: no such algorithm\n");
    return 2;
  }
  // The tuner as a communicator on this fabric would hold it: its two link classes with the
  // fabric's figures (sim::tunerLinks), the same replay without the flow-level effects.
  std::vector<const Algorithm*> candidates;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == collective && !a.oneSided) candidates.push_back(&a);
  const LinkClasses links = tunerLinks(fabric);
  Tuning tuning = defaultTuning(LinkClass::Nvlink);
  tuning.model = links.intra;
  tuning.source = "fabric " + fabric.name;
  Tuner tuner(n, tuning, Tuner::Mode::Model, fabric.nodes > 1 ? &layout : nullptr,
              fabric.nodes > 1 ? std::optional(links.inter) : std::nullopt);
  std::FILE* csv = csvPath.empty() ? nullptr : std::fopen(csvPath.c_str(), "w");
  if (!csvPath.empty() && !csv) {
    std::perror(csvPath.c_str());
    return 1;
  }
  if (csv) std::fprintf(csv, "collective,fabric,ranks,algorithm,bytes,us,busbw,best,tuner\n");
  std::fputs(fabric.describe().c_str(), stdout);
  std::printf("# chorus-sim %s on %d ranks: simulated, out-of-place = in-place (one schedule)\n",
              toString(collective), n);
  std::vector<size_t> sizes;
  for (double b = static_cast<double>(minBytes); b <= static_cast<double>(maxBytes) * 1.0001;
       b *= factor)
    sizes.push_back(static_cast<size_t>(b));
  std::map<size_t, std::vector<std::pair<const Algorithm*, double>>> bySize;
  const auto began = std::chrono::steady_clock::now();
  auto cpuSeconds = [] { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; };
  for (const Algorithm* a : algos) {
    const double algorithmBegan = cpuSeconds();
    std::printf("#\n# algorithm %s\n", a->name);
    if (const char* why = tooCostly(*a, n)) {
      std::printf("# skipped at %d ranks: %s\n", n, why);
      continue;
    }
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
                "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "");
    for (size_t want : sizes) {
      size_t bytes = 0;
      const size_t count = countFor(collective, want, n, &bytes);
      SimOptions options;
      options.compress = compress;
      options.layout = &layout;
      std::vector<StepTime> timeline;
      if (!timelinePrefix.empty()) options.timeline = &timeline;
      const SimResult r = simulate(*a, collective, n, count, 4, net, options);
      if (!timelinePrefix.empty() && !r.tooLarge)
        writeTimeline(timelinePrefix + "." + a->name + "." + std::to_string(bytes) + ".json",
                      timeline, collective, *a, count);
      if (r.tooLarge) {
        std::printf("# %zu B: not replayed: not symmetric, %zu steps over the limit\n", bytes,
                    options.maxSteps);
        continue;
      }
      const double algbw = bytes / r.micros / 1000;
      const double busbw = algbw * busFactor(collective, n);
      const std::string cols =
          "  " + std::string(7 - std::min<size_t>(7, fit(r.micros, 7).size()), ' ') +
          fit(r.micros, 7) + "  " +
          std::string(6 - std::min<size_t>(6, fit(algbw, 6).size()), ' ') + fit(algbw, 6) + "  " +
          std::string(6 - std::min<size_t>(6, fit(busbw, 6).size()), ' ') + fit(busbw, 6) +
          "    N/A";
      const bool reduces = collective != Collective::AllGather &&
                           collective != Collective::Broadcast &&
                           collective != Collective::AllToAll;
      std::printf("%12zu  %12zu  %8s  %6s  %6d%s%s   # %s\n", bytes, count, "float",
                  reduces ? "sum" : "none",
                  collective == Collective::Broadcast || collective == Collective::Reduce ? 0 : -1,
                  cols.c_str(), cols.c_str(),
                  r.period < n
                      ? ("compressed " + std::to_string(r.period) + "/" + std::to_string(n) +
                         (r.symmetry == Symmetry::Xor      ? " by xor"
                          : r.symmetry == Symmetry::Rotate ? " by turn"
                                                           : " by shift"))
                            .c_str()
                      : "full");
      std::fflush(stdout);
      bySize[bytes].push_back({a, r.micros});
    }
    std::printf("# %s: %.2f s CPU\n", a->name, cpuSeconds() - algorithmBegan);
  }
  const double tunerBegan = cpuSeconds();
  std::printf("#\n# %10s  %-12s %-12s %s\n", "size (B)", "best (sim)", "tuner", "");
  for (auto& [bytes, results] : bySize) {
    const auto tied = fastestTied(results);
    const auto& best = tied.front();
    size_t total = 0;
    const size_t count = countFor(collective, bytes, n, &total);
    const Algorithm& choice =
        withTuner ? tuner.choose(collective, count, DataType::Float32, candidates, false)
                  : *best.first;
    double choiceUs = 0;
    for (auto& [a, us] : results)
      if (a == &choice) choiceUs = us;
    const bool choiceTied =
        std::any_of(tied.begin(), tied.end(), [&](auto& t) { return t.first == &choice; });
    std::printf("  %10zu  %-12s %-12s %s\n", bytes, joinNames(tied, "=").c_str(),
                withTuner ? choice.name : "(not asked)",
                choiceTied ? ""
                : choiceUs > 0
                    ? ("tuner's pick " + fit(choiceUs / best.second, 6) + "x slower").c_str()
                    : "");
    if (csv)
      for (auto& [a, us] : results)
        std::fprintf(csv, "%s,%s,%d,%s,%zu,%.6g,%.6g,%s,%s\n", toString(collective),
                     fabric.name.c_str(), n, a->name, bytes, us,
                     bytes / us / 1000 * busFactor(collective, n), joinNames(tied, "|").c_str(),
                     withTuner ? choice.name : "");
  }
  std::printf("# tuner's choices: %.2f s CPU\n", cpuSeconds() - tunerBegan);
  std::printf("# simulated in %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  if (csv) std::fclose(csv);
  return 0;
}

void printJob(const char* label, const JobModel& job) {
  const JobResult r = simulateJob(job);
  std::printf(
      "%-34s %7.2f%%  lost %7.1f h  ckpt %6.1f h  down %6.1f h  failures %6.1f  restarts %6.1f\n",
      label, 100 * r.effective, r.lostHours, r.checkpointHours, r.downHours, r.failures,
      r.restarts);
}

int jobs(int argc, char** argv) {
  JobModel job;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::atof(argv[++i]) : (std::exit(2), 0.0); };
    if (a == "--job")
      continue;
    else if (a == "--gpus")
      job.gpus = static_cast<int>(next());
    else if (a == "--gpu-mtbf-hours")
      job.gpuMtbfHours = next();
    else if (a == "--job-mtbf-hours")
      job.jobMtbfHours = next();
    else if (a == "--wall-hours")
      job.wallHours = next();
    else if (a == "--interval-min")
      job.intervalMinutes = next();
    else if (a == "--save-s")
      job.saveBlockingSeconds = next();
    else if (a == "--async-s")
      job.saveAsyncSeconds = next();
    else if (a == "--restart-min")
      job.restartMinutes = next();
    else if (a == "--shrink")
      job.shrink = true;
    else if (a == "--replica-gpus")
      job.gpusPerReplica = static_cast<int>(next());
    else if (a == "--shrinkable")
      job.shrinkable = next();
    else if (a == "--repair-hours")
      job.repairHours = next();
    else if (a == "--runs")
      job.runs = static_cast<int>(next());
    else {
      std::fprintf(stderr, "chorus-sim: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (job.mtbfHours() <= 0) {
    std::fprintf(stderr, "chorus-sim: --job needs --gpu-mtbf-hours or --job-mtbf-hours\n");
    return 2;
  }
  std::printf(
      "# job: %d GPUs, MTBF %.2f h, %.0f h wall, checkpoint every %.1f min (save %.0f s blocking + "
      "%.0f s async), restart %.1f min%s\n",
      job.gpus, job.mtbfHours(), job.wallHours, job.intervalMinutes, job.saveBlockingSeconds,
      job.saveAsyncSeconds, job.restartMinutes, job.shrink ? ", shrink to survivors" : "");
  printJob("simulated", job);
  if (!job.shrink)
    std::printf("%-34s %7.2f%%\n", "first order (Young/Daly)", 100 * firstOrderEffective(job));
  double best = 0;
  const double bestMinutes = bestIntervalMinutes(job, &best);
  JobModel yd = job;
  yd.intervalMinutes = youngDalyMinutes(job);
  std::printf(
      "Young-Daly interval %.1f min -> %.2f%%; best simulated interval %.1f min -> %.2f%%\n",
      yd.intervalMinutes, 100 * simulateJob(yd).effective, bestMinutes, 100 * best);
  return 0;
}

// The Llama 3 snapshot: 16,384 GPUs, 54 days, 419 unexpected interruptions.
int llama() {
  const double wall = 54 * 24, mtbf16k = wall / 419, gpuMtbf = mtbf16k * 16384;
  std::printf(
      "# Llama 3 snapshot: 16,384 GPUs, 54 days, 419 unexpected interruptions: job MTBF "
      "%.2f h, per-GPU MTBF %.0f h (%.1f years)\n",
      mtbf16k, gpuMtbf, gpuMtbf / 8766);
  std::printf(
      "# checkpoint: 60 s blocking save (or 5 s blocking + 120 s async write); effective "
      "training time %%, '*' > 90%%\n");
  const double cadences[] = {5, 10, 15, 30, 60, 120, 240};
  const double restarts[] = {2, 5, 10, 20, 30, 60};
  auto jobOf = [&](int gpus, double restartMinutes) {
    JobModel job;
    job.gpus = gpus;
    job.gpuMtbfHours = gpuMtbf;
    job.wallHours = wall;
    job.restartMinutes = restartMinutes;
    job.runs = 8;
    return job;
  };
  auto printCadences = [&](JobModel& job) {  // one row: effective time at each interval
    for (double c : cadences) {
      job.intervalMinutes = c;
      const double e = simulateJob(job).effective;
      std::printf(" %7.2f%c", 100 * e, e > 0.9 ? '*' : ' ');
    }
  };
  for (int gpus : {16384, 100000}) {
    for (int async = 0; async < 2; ++async) {
      std::printf(
          "#\n# %d GPUs (MTBF %.2f h), %s save; rows: restart (min), columns: interval (min)\n",
          gpus, gpuMtbf / gpus, async ? "async" : "blocking");
      std::printf("%8s", "restart");
      for (double c : cadences) std::printf(" %8.0f", c);
      std::printf("   best interval / Young-Daly\n");
      for (double R : restarts) {
        std::printf("%8.0f", R);
        JobModel job = jobOf(gpus, R);
        job.saveBlockingSeconds = async ? 5 : 60;
        job.saveAsyncSeconds = async ? 120 : 0;
        printCadences(job);
        double best = 0;
        const double b = bestIntervalMinutes(job, &best);
        std::printf("   %.1f (%.2f%%) / %.1f\n", b, 100 * best, youngDalyMinutes(job));
      }
    }
    std::printf(
        "#\n# %d GPUs, shrink to survivors (replica = 128 GPUs, 78%% of failures "
        "absorbed, 30 s pause, repaired in 2 h), 60 s blocking save\n",
        gpus);
    std::printf("%8s", "restart");
    for (double c : cadences) std::printf(" %8.0f", c);
    std::printf("\n");
    for (double R : restarts) {
      std::printf("%8.0f", R);
      JobModel job = jobOf(gpus, R);
      job.shrink = true;
      printCadences(job);
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    for (int i = 1; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--job")) return jobs(argc, argv);
      if (!std::strcmp(argv[i], "--llama")) return llama();
    }
    return collectives(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-sim: %s\n", e.what());
    return 1;
  }
}
