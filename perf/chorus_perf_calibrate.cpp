// `chorus-run -n N chorus-perf --calibrate FILE`: times every all-reduce algorithm at sizes
// from 8 B to 16 MiB on these ranks, fits the cost model's link latency and bandwidth to
// those times (tuner/fit.hpp), measures the local reduce and copy rates, and writes the
// entry for this link class and local rank count into FILE (CHORUS_TUNE_FILE format;
// other entries are kept). Prints measured next to predicted time for every point.
#include "chorus_perf_calibrate.hpp"

#include "bootstrap/bootstrap.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/fit.hpp"
#include "tuner/local_rates.hpp"
#include "tuner/tuning.hpp"

#include <chorus/chorus.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace perf {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kSizes[] = {8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 16 << 20};

// Iterations per batch: enough to average out a small call, few for a big one.
int iterationsFor(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((size_t{4} << 20) / bytes, 2, 100));
}

// Median over three batches of the mean time of one call, as rank 0 sees it.
double timeCall(chorus::Communicator& comm, size_t count, std::vector<float>& in,
                std::vector<float>& out) {
  const int iterations = iterationsFor(count * sizeof(float));
  auto call = [&] {
    comm.allReduce(in.data(), out.data(), count, chorus::DataType::Float32, chorus::RedOp::Sum)
        .wait();
  };
  call();  // warm-up (and the schedule's first build)
  double batches[3];
  for (double& b : batches) {
    comm.allReduce(in.data(), in.data(), 1, chorus::DataType::Float32, chorus::RedOp::Max).wait();
    const auto start = Clock::now();
    for (int i = 0; i < iterations; ++i) call();
    b = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iterations;
  }
  std::sort(batches, batches + 3);
  return batches[1];
}

// Ranks that share this host, counted with an all-gather of a hash of its identity.
int localRanks(chorus::Communicator& comm) {
  const uint64_t mine = std::hash<std::string>{}(chorus::hostIdentity());
  std::vector<uint64_t> all(comm.size());
  comm.allGather(&mine, all.data(), 1, chorus::DataType::Uint64).wait();
  return static_cast<int>(std::count(all.begin(), all.end(), mine));
}

int calibrate(const std::string& path) {
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int n = comm.size();
  const int local = localRanks(comm);
  auto link = chorus::parseLinkClass(comm.transportName()).value_or(chorus::LinkClass::Tcp);
  std::vector<chorus::Measurement> points;
  std::vector<float> in((16 << 20) / sizeof(float), 1.0f), out(in.size());
  for (const chorus::Algorithm& a : chorus::allAlgorithms()) {
    // hier* are the flat ring on one node: only worth timing across nodes. One-sided
    // algorithms need registered buffers and have their own measured thresholds
    // (Tuner::chooseOneSided): the fit is of the copy path.
    if (a.collective != chorus::Collective::AllReduce || a.oneSided ||
        (std::string_view(a.name).starts_with("hier") && local == n))
      continue;
    comm.setAlgorithm(std::string("allreduce:") + a.name);
    for (size_t bytes : kSizes) {
      const size_t count = bytes / sizeof(float);
      points.push_back({&a, n, count, sizeof(float), timeCall(comm, count, in, out)});
    }
  }
  if (comm.rank() != 0) return 0;

  chorus::Tuning tuning = chorus::defaultTuning(link);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  chorus::measureLocalRates(tuning, std::min(1.0, static_cast<double>(cores) / local));
  const chorus::Fit fit = chorus::fitLink(points, tuning.model);
  tuning.model = fit.link;
  tuning.ranks = local;
  // The fastest algorithm measured at each size: used where the model disagrees.
  for (size_t bytes : kSizes) {
    const chorus::Measurement* best = nullptr;
    for (const chorus::Measurement& m : points)
      if (m.count * m.elementSize == bytes && (!best || m.micros < best->micros)) best = &m;
    if (best) tuning.measuredBest.emplace_back(bytes, best->algorithm->name);
  }
  chorus::updateTuneFile(path, tuning);

  std::printf("# calibration: %d ranks (%d on this host) over %s -> %s\n", n, local,
              chorus::toString(link), path.c_str());
  std::printf("# %s\n", tuning.toLine().c_str());
  std::printf("# fit: rms error of ln(predicted/measured) %.3f (%.0f%%)\n", fit.rmsLogError,
              100 * (std::exp(fit.rmsLogError) - 1));
  std::printf("%10s %12s %12s %12s %8s\n", "algorithm", "bytes", "measured_us", "model_us",
              "error");
  for (const chorus::Measurement& m : points) {
    const double model = chorus::predictMicros(*m.algorithm, m.algorithm->collective, n, m.count,
                                               m.elementSize, tuning.model);
    std::printf("%10s %12zu %12.1f %12.1f %7.0f%%\n", m.algorithm->name, m.count * m.elementSize,
                m.micros, model, 100 * (model / m.micros - 1));
  }
  return 0;
}

}  // namespace

std::optional<int> runCalibrate(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) != "--calibrate") continue;
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: chorus-perf --calibrate FILE\n");
      return 2;
    }
    try {
      return calibrate(argv[i + 1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "chorus-perf --calibrate: %s\n", e.what());
      return 1;
    }
  }
  return std::nullopt;
}

}  // namespace perf
