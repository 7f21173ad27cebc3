// chorus-train: data-parallel training of a small real model over chorus::Communicator,
// with overlapped bucketed all-reduce, asynchronous verified checkpoints at the Young-Daly
// interval, failure injection and bit-exact resume. See README.md in this directory.
#include "args.hpp"
#include "checkpoint.hpp"
#include "comm_thread.hpp"
#include "core_turns.hpp"
#include "gemm.hpp"
#include "grad_sync.hpp"
#include "optimizer.hpp"
#include "recovery.hpp"
#include "report.hpp"
#include "task.hpp"
#include "timeline.hpp"

#include <cblas.h>
#include <chorus/chorus.hpp>

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace trainer;

namespace {

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// This rank's best sgemm rate (FLOP/s) over square sizes 128..768, a few tries each,
// measured with every rank running it at once so that shared cores count as they do in
// training (the best size depends on the caches; the model's own GEMMs are smaller).
// Each size is repeated for at least 15 ms and 768 was added: four tries of 128..512 (about
// 60 ms in all) measured 18.6 GFLOP/s on a 16-core machine where the model's own GEMMs
// (64 x 1024 x 1024) then ran at 20.3, an MFU of 1.09 (cause not established: clock ramp
// or size). With --gpu: this rank's share of its GPU's rate on device-resident operands,
// so MFU counts the host copies of each call as lost time.
double measurePeakGemm() {
  if (const double gpuRate = trainer::gemm::gpuPeakRate(); gpuRate > 0) return gpuRate;
  double best = 0;
  for (int n : {128, 256, 384, 512, 768}) {
    std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n);
    const auto sizeStart = Clock::now();
    for (int i = 0; i < 4 || seconds(Clock::now() - sizeStart) < 0.015; ++i) {
      const auto t0 = Clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                  n, 0.0f, c.data(), n);
      best = std::max(best, 2.0 * n * n * n / seconds(Clock::now() - t0));
    }
  }
  return best;
}

struct Failure {
  int64_t step = -1;
  int rank = -1;
};

// The failure planned for this restart: the i-th of --fail-at-step/--fail-rank, or of
// --fail-count failures drawn from --fail-random at increasing steps.
Failure failureFor(const Args& a, int attempt, int nranks) {
  if (attempt < static_cast<int>(a.failAtStep.size()))
    return {a.failAtStep[attempt], a.failRank[attempt]};
  if (attempt >= a.failCount) return {};
  SplitMix64 rng{a.failRandomSeed};
  const int64_t gap = std::max<int64_t>(1, a.steps / (a.failCount + 1));
  Failure f;
  for (int i = 0; i <= attempt; ++i) {
    f.step = (i + 1) * gap + static_cast<int64_t>(rng.below(static_cast<uint64_t>((gap + 1) / 2)));
    f.rank = static_cast<int>(rng.below(static_cast<uint64_t>(nranks)));
  }
  return f;
}

// Waits up to `seconds` until a process asks to join (rank 0's count, agreed: every rank
// leaves the loop at the same iteration, as rank 0 decides); false if none came. Past
// `limit` seconds without an answer from rank 0, an error.
bool awaitJoin(CommThread& ct, double seconds, int limit) {
  const auto start = Clock::now();
  for (;;) {
    double v[2] = {0, 0};  // joins pending, rank 0 gave up
    if (ct.rank() == 0) {
      ct.run([&](chorus::Communicator& c) { v[0] = c.pendingJoins(); });
      v[1] = trainer::seconds(Clock::now() - start) > seconds;
    }
    ct.allReduce(v, 2, chorus::RedOp::Max);
    if (v[0] > 0) return true;
    if (v[1] > 0) return false;
    if (trainer::seconds(Clock::now() - start) > seconds + limit)
      throw std::runtime_error("waiting for a replacement: rank 0 never decided");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void waitForFile(const std::string& path, int limit) {
  const auto giveUp = Clock::now() + std::chrono::seconds(limit);
  while (!std::filesystem::exists(path)) {
    if (Clock::now() > giveUp)
      throw std::runtime_error(path + " did not appear (--join-after-file)");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void writeRaw(const std::string& path, const std::vector<float>& params) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(params.data()), params.size() * sizeof(float));
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

int main(int argc, char** argv) {
  const double processStart = unixNow();
  const Args args = parseArgs(argc, argv);
  const char* restartEnv = std::getenv("CHORUS_RESTART_COUNT");
  const int attempt = restartEnv ? std::atoi(restartEnv) : 0;
  openblas_set_num_threads(args.threads);

  chorus::Options options;
  options.deterministic = args.deterministic;
  options.timeout = std::chrono::seconds(args.timeoutS);
  // A replacement that chorus-run --respawn started (CHORUS_REJOIN) joins the survivors,
  // who admit it with grow() at a step's start and hand it their state.
  const bool newcomer = std::getenv("CHORUS_REJOIN") != nullptr;
  // The library binds the thread that creates the communicator (and the threads it starts
  // later) to one core where ranks outnumber cores (local rank mod cores). The training
  // thread keeps that core by default: at 4 ranks on 2 cores each core then runs two
  // ranks' compute, which the kernel shares evenly, and the ranks' backward passes end
  // closer together than when the kernel moves the training threads between the cores
  // (the twelfth pass in perf/trainer/README.md; the seventh, before the communication
  // thread's higher weight, found the opposite). --free-compute gives the training thread
  // its launch affinity back once the communication thread exists.
  cpu_set_t launchCores;
  const bool knowLaunchCores = sched_getaffinity(0, sizeof launchCores, &launchCores) == 0;
  // The library polls (200 us of sched_yield where ranks outnumber cores) before a wait
  // sleeps. Here the communication thread waits beside the training thread's backward, and
  // with the EEVDF scheduler (Linux 6.6+) a yield moves the yielding thread's deadline a
  // slice on: the computing thread keeps the core until the next tick (3.8 ms median
  // measured here), while a thread asleep on a futex runs within 30 us of its wake-up
  // (perf/trainer/README.md, ninth pass). So this job sleeps at once unless told otherwise
  // (--spin-us, or CHORUS_SPIN_US in the environment, which wins). The library's adaptive
  // yield (CHORUS_YIELD_ADAPT) recovers most of the difference, not all: measured 5-8 points
  // of hidden fraction lower than sleeping at once (tenth pass). Read at init, below.
  if (args.spinUs >= 0)
    setenv("CHORUS_SPIN_US", std::to_string(args.spinUs).c_str(), /*overwrite=*/0);
  const char* spinSetting = std::getenv("CHORUS_SPIN_US");
  const std::string librarySpin = spinSetting ? spinSetting : "default";
  chorus::Communicator comm;
  try {
    if (newcomer && !args.joinAfterFile.empty()) waitForFile(args.joinAfterFile, args.timeoutS);
    comm = newcomer ? chorus::Communicator::joinFromEnv(options)
                    : chorus::Communicator::initFromEnv(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-train: cannot join the job: %s\n", e.what());
    return 2;
  }
  // The GPU a rank computes on: its local rank (among the ranks on its node, as the
  // communicator found them) mod the node's GPUs.
  if (args.gpu) try {
      trainer::gemm::useGpu(comm.localRank(), comm.localSize());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "chorus-train: %s\n", e.what());
      return 2;
    }
  int rank = comm.rank(), nranks = comm.size();  // change when shrinking or growing
  const int launchRank = newcomer ? std::atoi(std::getenv("CHORUS_RANK")) : rank;
  const int launchSize = newcomer ? std::atoi(std::getenv("CHORUS_WORLD_SIZE")) : nranks;
  bool lead = rank == 0;
  int64_t step = 0;
  try {
    std::unique_ptr<Task> task = makeTask(args);
    const size_t P = task->parameterCount();
    const std::string fingerprint = task->fingerprint() + ";" + args.optimizer.kind;

    std::vector<float> params(P), grads(P + 1);  // grads[P]: this rank's loss, averaged too
    // The optimizer writes the step's new parameters here, bucket by bucket, and they are
    // swapped in once every bucket is done: a step that fails half way leaves `params` (and
    // the optimizer state, double-buffered the same way) as they were, to redo it.
    std::vector<float> nextParams(P);
    task->initialize(params.data(), args.seed);
    if (lead && !args.dumpInit.empty()) writeRaw(args.dumpInit, params);
    Optimizer opt(args.optimizer, P);
    Sampler sampler(task->trainSamples(), args.seed ^ 0xda7aULL);
    const auto buckets = makeBuckets(task->groups(), static_cast<size_t>(args.bucketMb * 1e6), 1);
    {  // the optimizer steps bucket by bucket: they must cover every parameter, once
      size_t covered = 0;
      for (const Bucket& b : buckets) covered += std::min(b.end, P) - b.begin;
      if (covered != P || buckets.back().begin != 0)
        throw std::logic_error("gradient buckets do not cover the parameters");
    }
    // One host: its steady clock is shared by the ranks, so their times compare (below).
    const bool oneHost = comm.layout().rfind("1 node", 0) == 0;
    CommThread ct(std::move(comm), std::chrono::seconds(args.timeoutS));
    if (args.freeCompute && knowLaunchCores) sched_setaffinity(0, sizeof launchCores, &launchCores);
    // Where ranks outnumber cores, the ranks sharing a core take turns at every GEMM and
    // optimizer bucket instead of every tick (core_turns.hpp, --gemm-yield).
    const bool gemmYield =
        args.gemmYield == "on" || (args.gemmYield == "auto" && oneHost && knowLaunchCores &&
                                   nranks > CPU_COUNT(&launchCores));
    trainer::core_turns::enable(gemmYield);
    ct.setMaxInFlight(args.maxInFlight);
    // The communication thread at a higher CPU weight than backward (--comm-nice, default
    // -10 relative): it sleeps on a futex whenever it has nothing to do (--spin-us 0), so
    // the weight costs compute nothing then, but when a bucket is posted or a peer's data
    // arrives EEVDF runs it ahead of backward sooner; the transfer left after backward fell
    // from 13.4 to 4.0 ms a step at np=4, samples/s 1.10x (perf/trainer/README.md,
    // eleventh pass). Lowering nice needs CAP_SYS_NICE (or RLIMIT_NICE); where
    // it is refused the thread keeps the training thread's, and the report says which.
    const int trainingNice = getpriority(PRIO_PROCESS, 0);
    int commNice = trainingNice;
    if (args.commNice != 0) {
      const int want = std::clamp(trainingNice + args.commNice, -20, 19);
      if (ct.setNice(want)) commNice = want;
    }
    if (args.commRealtime && !ct.setRealtime())
      std::fprintf(stderr,
                   "chorus-train: rank %d: --comm-rt refused (needs CAP_SYS_NICE); "
                   "the communication thread keeps normal priority\n",
                   rank);
    if (lead) std::filesystem::create_directories(args.out);
    JobLog jobLog(args.out);

    // Resume: rank 0 picks the newest good checkpoint and broadcasts it, so that every
    // rank starts from the same one.
    uint64_t found[6] = {0, 0, 0, 0, 0, 0};  // found, step, epoch, cursor, rng, order size
    double ckptTime = 0;
    std::optional<LoadedCheckpoint> loaded;
    if (lead && args.resume) {
      loaded = Checkpointer::loadNewest(args.ckptDir, fingerprint, stderr);
      if (loaded) {
        const CheckpointMeta& m = loaded->meta;
        found[0] = 1, found[1] = m.step, found[2] = m.sampler.epoch, found[3] = m.sampler.cursor;
        found[4] = m.sampler.rng, found[5] = m.sampler.order.size();
        ckptTime = m.wallTime;
      }
    }
    if (!newcomer)
      ct.run([&](chorus::Communicator& c) {
        chorus::Work w = c.broadcast(found, found, 6, chorus::DataType::Uint64, 0);
        ct.await(w, "broadcast of the checkpoint choice");
      });
    int64_t start = 0;
    if (found[0]) {
      Sampler::State s{found[4], found[2], found[3], std::vector<uint32_t>(found[5])};
      std::vector<float> state(P + opt.state().size());
      if (lead) {
        if (loaded->state.size() != state.size())
          throw std::runtime_error("checkpoint size mismatch");
        state = loaded->state;
        s.order = loaded->meta.sampler.order;
      }
      ct.run([&](chorus::Communicator& c) {
        chorus::Work a =
            c.broadcast(state.data(), state.data(), state.size(), chorus::DataType::Float32, 0);
        chorus::Work b = c.broadcast(s.order.data(), s.order.data(), s.order.size(),
                                     chorus::DataType::Uint32, 0);
        ct.await(a, "broadcast of the checkpoint");
        ct.await(b, "broadcast of the data order");
      });
      std::copy(state.begin(), state.begin() + P, params.begin());
      std::copy(state.begin() + P, state.end(), opt.state().begin());
      sampler.restore(std::move(s));
      start = static_cast<int64_t>(found[1]);
      if (lead) {
        std::fprintf(stderr, "chorus-train: restart %d resumes from %s (step %lld)\n", attempt,
                     loaded->path.c_str(), static_cast<long long>(start));
        jobLog.resumed(attempt, start, ckptTime, unixNow());
      }
    } else if (newcomer) {  // its state comes from the members once they admit it (below)
    } else if (lead && attempt > 0) {  // a restart with no good checkpoint: all is lost
      jobLog.resumed(attempt, 0, 0, unixNow());
    } else if (lead) {
      jobLog.startFresh(processStart);
    }

    // Peak GEMM rate of the job: every rank measures at once, the sum is the machine's.
    double peak = 0;
    if (!newcomer) {
      ct.barrier();
      peak = measurePeakGemm();
      ct.allReduce(&peak, 1, chorus::RedOp::Sum);
    }

    Timeline timeline(rank);
    auto ckpt =
        std::make_unique<Checkpointer>(args.ckptDir, rank, nranks, args.ckptKeep,
                                       !args.ckptBlocking, timeline, P + opt.state().size());
    GradSync sync(ct, buckets, timeline);
    // Every bucket shape's first all-reduce before the first step, as a real trainer warms
    // up, so that the library's set-up is not paid while the first backward runs; outside
    // the timed loop, reported as comm_warmup_seconds. A newcomer's communicator is the
    // members' after admit(), already warm.
    double warmupSeconds = 0;
    if (args.commWarmup && !newcomer) warmupSeconds = sync.warmUp(grads.data());
    // Injected failures strike the first process of a rank only, not its replacements.
    const Failure failure = newcomer ? Failure{} : failureFor(args, attempt, launchSize);
    int64_t globalBatch = static_cast<int64_t>(args.batch) * nranks;
    double samples = 0;
    std::vector<Shrink> shrinks;
    std::vector<Grow> grows;

    // Checkpoint interval: fixed, or Young-Daly once the first save has been measured.
    double mtbf = args.mtbf;
    if (mtbf <= 0 && lead && !jobLog.lost().empty())  // from the failures seen so far
      mtbf = (unixNow() - jobLog.jobStart()) / static_cast<double>(jobLog.lost().size());
    if (!newcomer) ct.allReduce(&mtbf, 1, chorus::RedOp::Max);
    int64_t every = args.ckptEvery;
    std::string policy = every > 0 ? "every " + std::to_string(every) + " steps (--ckpt-every)"
                                   : "none (no --ckpt-every or --mtbf)";
    int64_t measureAt = every <= 0 && mtbf > 0 ? std::min(args.steps - 1, start + 3) : -1;
    RunReport::YoungDaly youngDaly;
    // Growing back: the members admit newcomers and everyone takes a member's state and the
    // job's settings (the newcomer measured none of them).
    auto admit = [&](int newcomers) {
      const double began = unixNow();
      if (newcomers > 0) ct.grow(newcomers);
      double shared[4] = {peak, mtbf, static_cast<double>(every), static_cast<double>(measureAt)};
      const int64_t redo =
          resync(ct, newcomers > 0 ? step : kNothingDone, params, opt.state(), sampler, shared);
      peak = shared[0], mtbf = shared[1];
      every = static_cast<int64_t>(shared[2]), measureAt = static_cast<int64_t>(shared[3]);
      rank = ct.rank(), nranks = ct.size(), lead = rank == 0;
      globalBatch = static_cast<int64_t>(args.batch) * nranks;
      grows.push_back({redo, nranks, unixNow() - began});
      return redo;
    };
    if (newcomer) {
      start = admit(0);
      policy = "as the members had it (this process joined at step " + std::to_string(start) + ")";
      std::fprintf(stderr, "chorus-train: launch rank %d joined as rank %d of %d at step %lld\n",
                   launchRank, rank, nranks, static_cast<long long>(start));
    }

    std::FILE* metrics = nullptr;
    if (lead) {
      const std::string path = args.out + "/metrics.csv";
      const bool fresh = !std::filesystem::exists(path) || start == 0;
      metrics = std::fopen(path.c_str(), fresh ? "w" : "a");
      if (fresh) std::fprintf(metrics, "restart,step,loss,lr,step_seconds,held_out\n");
    }

    std::vector<uint32_t> batchIdx;
    double tCompute = 0, tExposed = 0, tAllReduce = 0, tPause = 0, tWrite = 0;
    double tEnvelope = 0, tStartDelay = 0;  // DDP's all-reduce time; buckets waiting to start
    double tHidden = 0;  // all-reduce time inside this rank's backward (the "hidden")
    // Per step: when this rank's backward ended, when it completed each bucket, and its
    // waits for all-reduce after it (steady-clock seconds), to split the exposed time at
    // the end of the run.
    const size_t nb = buckets.size();
    std::vector<double> backwardEnd(static_cast<size_t>(args.steps), 0);
    std::vector<double> bucketReady(backwardEnd.size() * nb, 0);  // [step * nb + bucket]
    struct StepWait {
      int bucket;
      double start, end;
    };
    std::vector<std::vector<StepWait>> stepWaits(backwardEnd.size());
    auto at = [](Clock::time_point t) { return seconds(t.time_since_epoch()); };
    int checkpoints = 0;
    float loss = 0;
    double heldOut = 0;
    const auto loopStart = Clock::now();
    for (step = start; step < args.steps; ++step) {
      if (step == args.holdForJoinAtStep && args.onFailure == "grow" && nranks < launchSize) {
        if (lead) std::ofstream(args.out + "/holding-for-join") << step << "\n";
        if (!awaitJoin(ct, args.timeoutS, args.timeoutS))
          throw std::runtime_error("--hold-for-join-at-step: no replacement within --timeout-s");
      }
      int joining = 0;
      if (args.onFailure == "grow" && nranks < launchSize && (joining = ct.pendingJoins()) > 0) {
        ckpt->awaitSnapshot();  // the state may be overwritten
        const int before = nranks;
        admit(joining);
        ckpt.reset();  // its shards were cut for the old ranks
        ckpt = std::make_unique<Checkpointer>(args.ckptDir, rank, nranks, args.ckptKeep,
                                              !args.ckptBlocking, timeline, P + opt.state().size());
        if (lead && !metrics) metrics = std::fopen((args.out + "/metrics.csv").c_str(), "a");
        if (lead)
          std::fprintf(stderr, "chorus-train: grew from %d to %d ranks at step %lld in %.3f s\n",
                       before, nranks, static_cast<long long>(step), grows.back().seconds);
      }
      const bool failNow = failure.step == step && failure.rank == launchRank;
      const Sampler::State stepStart = sampler.state();  // a failed step is redone from here
      auto die = [&] {
        std::fprintf(stderr, "chorus-train: rank %d: injected failure at step %lld: SIGKILL\n",
                     rank, static_cast<long long>(step));
        std::fflush(stderr);
        std::ofstream(args.out + "/killed-at.txt") << std::to_string(unixNow()) << "\n";
        ::raise(SIGKILL);
      };
      const auto t0 = Clock::now();
      sampler.nextBatch(static_cast<size_t>(globalBatch), batchIdx);
      grads[P] =
          task->forward(params.data(), std::span<const uint32_t>(batchIdx).subspan(
                                           static_cast<size_t>(rank) * args.batch, args.batch));
      const auto t1 = Clock::now();
      sync.begin(grads.data());
      task->backward(params.data(), grads.data(), [&](int layer) {
        sync.layerReady(layer);
        // mid-backward, the first all-reduce in flight
        if (failNow && args.failAfterBucket < 0 && sync.started() > 0) die();
      });
      const auto t2 = Clock::now();
      double exposed = 0, pause = 0;
      // The optimizer's part for bucket b, out of place (params -> nextParams).
      int stepped = 0;
      auto stepBucket = [&](const Bucket& b) {
        const auto begin = Clock::now();
        opt.stepRange(params.data(), nextParams.data(), grads.data(), b.begin, std::min(b.end, P),
                      step);
        if (step - start < args.traceSteps)
          timeline.add(Timeline::kMain, "optimizer", begin, Clock::now());
        trainer::core_turns::offer();
        if (failNow && stepped == args.failAfterBucket) die();
        ++stepped;
      };
      try {
        if (args.stepPerBucket) {
          exposed = sync.finish(stepBucket);  // each bucket stepped once it is averaged
        } else {
          exposed = sync.finish();
          for (const Bucket& b : buckets) stepBucket(b);
        }
      } catch (const chorus::Error& e) {
        const std::vector<int>& dead = e.failedRanks();
        if (args.onFailure == "exit" || dead.empty()) throw;
        // In place: carry on with the survivors, no restart, no checkpoint read.
        const double caught = unixNow();
        sync.abandon();
        ckpt->awaitSnapshot();       // the state is about to be overwritten
        sampler.restore(stepStart);  // redo the step with the same batch
        Shrink s;
        s.step = step;
        s.dead = dead;
        const int64_t redo = shrinkAndResync(ct, dead, step, params, opt.state(), sampler);
        s.shrinkSeconds = unixNow() - caught;
        double killedAt = 0;
        std::ifstream(args.out + "/killed-at.txt") >> killedAt;
        if (killedAt > 0) s.detectSeconds = caught - killedAt;
        rank = ct.rank(), nranks = ct.size(), lead = rank == 0;
        s.ranksAfter = nranks;
        shrinks.push_back(s);
        globalBatch = static_cast<int64_t>(args.batch) * nranks;
        ckpt.reset();  // its shards were cut for the old ranks
        ckpt = std::make_unique<Checkpointer>(args.ckptDir, rank, nranks, args.ckptKeep,
                                              !args.ckptBlocking, timeline, P + opt.state().size());
        if (lead && !metrics) metrics = std::fopen((args.out + "/metrics.csv").c_str(), "a");
        if (lead)
          std::fprintf(stderr,
                       "chorus-train: rank %d died in step %lld; the %d survivors shrank in "
                       "%.3f s (the error came %.3f s after the kill) and redo step %lld; "
                       "rank 0 had stepped %d of its %zu buckets, dropped\n",
                       dead.front(), static_cast<long long>(step), nranks, s.shrinkSeconds,
                       s.detectSeconds, static_cast<long long>(redo), stepped, buckets.size());
        if (args.growWait && !awaitJoin(ct, args.growWaitS, args.timeoutS)) {
          // Too late: carry on with fewer ranks; the replacement is admitted at the first
          // step it is pending (the check at the top of the loop).
          if (lead) {
            std::fprintf(stderr,
                         "chorus-train: no replacement joined within %.1f s (--grow-wait-s); "
                         "carrying on with %d ranks, admitting it when it comes\n",
                         args.growWaitS, nranks);
            std::ofstream(args.out + "/grow-wait-expired") << step << "\n";
          }
        }
        step = redo - 1;
        continue;
      }
      backwardEnd[step] = at(t2);
      for (size_t k = 0; k < nb; ++k)
        bucketReady[static_cast<size_t>(step) * nb + k] = at(sync.lastReady()[k]);
      stepWaits[step].clear();
      for (const GradSync::Wait& w : sync.lastWaits())
        stepWaits[step].push_back({w.bucket, at(w.start), at(w.end)});
      opt.commit();
      params.swap(nextParams);
      const auto t4 = Clock::now();
      // A save's snapshot reads the buffers that have just become the spare ones, which the
      // next step's optimizer writes: its copy must be complete before then.
      pause += ckpt->awaitSnapshot();
      loss = grads[P];
      if ((every > 0 && (step + 1) % every == 0 && step + 1 < args.steps) || step == measureAt) {
        CheckpointMeta meta{step + 1,    nranks,          P + opt.state().size(),
                            fingerprint, sampler.state(), unixNow()};
        pause += ckpt->save(meta, params, opt.state());
        ++checkpoints;
        if (step == measureAt) {  // Young-Daly from this save's measured cost
          ckpt->drain();          // the snapshot copy is what the pause can grow to
          double cost[3] = {
              std::max(pause, ckpt->lastSnapshotSeconds()), ckpt->lastWriteSeconds(),
              seconds(Clock::now() - loopStart) / static_cast<double>(step + 1 - start)};
          ct.allReduce(cost, 3, chorus::RedOp::Max);
          const double interval = std::max(std::sqrt(2 * cost[0] * mtbf), cost[1]);
          every = std::max<int64_t>(1, std::llround(interval / cost[2]));
          char why[400];
          std::snprintf(
              why, sizeof why,
              "every %lld steps (%.3f s): Young-Daly sqrt(2 x %.3g s pause x %.4g s MTBF%s) "
              "= %.3f s, at least the %.4f s background write; a blocking save "
              "(%.4f s) would give %.3f s",
              static_cast<long long>(every), interval, cost[0], mtbf,
              args.mtbf > 0 ? "" : " from failures seen", std::sqrt(2 * cost[0] * mtbf), cost[1],
              cost[0] + cost[1], std::sqrt(2 * (cost[0] + cost[1]) * mtbf));
          policy = why;
          youngDaly = {true, step, mtbf, cost[0], cost[1], cost[2], interval, args.mtbf <= 0};
          if (lead) std::fprintf(stderr, "chorus-train: checkpoint %s\n", why);
        }
      }
      const auto t5 = Clock::now();
      samples += static_cast<double>(globalBatch);
      // After backward, what was not waiting for communication was the optimizer's work.
      tCompute += seconds(t1 - t0) + seconds(t2 - t1) + (seconds(t4 - t2) - exposed);
      tExposed += exposed;
      tAllReduce += sync.lastAllReduceSeconds();
      tHidden += sync.lastAllReduceSecondsWithin(t1, t2);
      tEnvelope += sync.lastEnvelopeSeconds();
      tStartDelay += sync.lastStartDelaySeconds();
      tPause += pause;
      if (step - start < args.traceSteps) {
        timeline.add(Timeline::kMain, "forward", t0, t1);
        timeline.add(Timeline::kMain, "backward", t1, t2);
      }
      const bool evalNow = args.evalEvery > 0 && (step + 1) % args.evalEvery == 0;
      if (evalNow) heldOut = task->evaluate(params.data());
      if (lead) {
        jobLog.progress(step + 1, unixNow());
        std::fprintf(metrics, "%d,%lld,%.6f,%.6g,%.6f,%s\n", attempt,
                     static_cast<long long>(step + 1), loss, opt.lrAt(step), seconds(t5 - t0),
                     evalNow ? std::to_string(heldOut).c_str() : "");
        if (!args.quiet && evalNow)
          std::printf("step %lld loss %.4f held-out %s %.4f\n", static_cast<long long>(step + 1),
                      loss, task->metricName(), heldOut);
      }
    }
    ckpt->drain();
    if (checkpoints > 0) tWrite = ckpt->lastWriteSeconds();
    const double loopSeconds = seconds(Clock::now() - loopStart);
    heldOut = task->evaluate(params.data());
    if (metrics) std::fclose(metrics);

    // The exposed time split, each wait (for bucket k of step s) in three parts by two
    // instants: R, when the last rank completed bucket k's gradients, and B, when the last
    // rank's backward of step s ended (R <= B).
    //   before R   waiting for a slower rank's backward: bucket k cannot be reduced before
    //              every rank has produced it, whatever drives the communication;
    //   R to B     all-reduce not hidden while a slower rank is still in its backward;
    //   after B    all-reduce left after the last backward ended.
    // Needs one clock for all ranks: on several hosts the split is not made (-1).
    ct.allReduce(backwardEnd.data(), backwardEnd.size(), chorus::RedOp::Max);
    ct.allReduce(bucketReady.data(), bucketReady.size(), chorus::RedOp::Max);
    double tWaitSlowest = 0, tAfterLast = 0;
    for (int64_t s = start; s < args.steps; ++s)
      for (const StepWait& w : stepWaits[s]) {
        const double R = bucketReady[static_cast<size_t>(s) * nb + w.bucket];
        tWaitSlowest += std::max(0.0, std::min(w.end, R) - w.start);
        tAfterLast += std::max(0.0, w.end - std::max(w.start, backwardEnd[s]));
      }
    if (!oneHost) tWaitSlowest = tAfterLast = -1;

    // Per-step figures averaged over ranks.
    const double stepsRun = static_cast<double>(args.steps - start);
    double sums[12] = {tCompute,     tExposed,  tAllReduce,  tPause,     tWrite,  loopSeconds,
                       tWaitSlowest, tEnvelope, tStartDelay, tAfterLast, tHidden, warmupSeconds};
    ct.allReduce(sums, 12, chorus::RedOp::Avg);
    if (lead) {
      RunReport r;
      r.nranks = nranks, r.attempt = attempt, r.steps = args.steps, r.startStep = start;
      r.stepsRun = args.steps - start, r.globalBatch = globalBatch;
      r.parameters = static_cast<double>(P), r.flopsPerSample = task->flopsPerSample();
      r.seconds = sums[5];
      const double n = std::max(1.0, stepsRun);
      r.samplesPerSecond = samples / std::max(sums[5], 1e-9);
      r.stepSeconds = sums[5] / n, r.computeSeconds = sums[0] / n;
      r.exposedCommSeconds = sums[1] / n, r.allReduceSeconds = sums[2] / n;
      r.waitSlowestSeconds = oneHost ? sums[6] / n : -1;
      r.exposedTransferSeconds = oneHost ? (sums[1] - sums[6]) / n : -1;
      r.exposedAfterLastSeconds = oneHost ? sums[9] / n : -1;
      r.checkpointPauseSeconds = sums[3] / n;
      r.hiddenFraction = sums[2] > 0 ? std::clamp(sums[10] / sums[2], 0.0, 1.0) : 0;
      r.hiddenFractionByExposed = sums[2] > 0 ? std::clamp(1 - sums[1] / sums[2], 0.0, 1.0) : 0;
      r.envelopeSeconds = sums[7] / n, r.startDelaySeconds = sums[8] / n;
      r.hiddenFractionDdp = sums[7] > 0 ? std::clamp(1 - sums[1] / sums[7], 0.0, 1.0) : 0;
      r.checkpoints = checkpoints;
      r.pausePerCheckpoint = checkpoints ? sums[3] / checkpoints : 0;
      r.writePerCheckpoint = sums[4];
      r.checkpointPolicy = policy;
      r.checkpointEvery = every, r.youngDaly = youngDaly;
      r.gemmBackend = trainer::gemm::backend();
      r.peakFlops = peak, r.achievedFlops = r.samplesPerSecond * r.flopsPerSample;
      r.mfu = peak > 0 ? r.achievedFlops / peak : 0;
      r.elapsedSeconds = unixNow() - jobLog.jobStart();
      r.usefulSeconds = static_cast<double>(args.steps) * (sums[0] + sums[1]) / n;
      r.effectiveTrainingTime = std::min(1.0, r.usefulSeconds / r.elapsedSeconds);
      r.lost = jobLog.lost();
      r.shrinks = shrinks;
      r.grows = grows;
      r.finalLoss = loss, r.heldOut = heldOut, r.heldOutMetric = task->metricName();
      r.algorithm = sync.algorithms();
      for (const Bucket& b : buckets) r.bucketFloats.push_back(b.end - b.begin);
      r.librarySpin = librarySpin;
      r.commNice = commNice - trainingNice;
      r.gemmYield = gemmYield;
      r.commWarmupSeconds = args.commWarmup ? sums[11] : -1;
      std::ofstream(args.out + "/report.json") << r.json();
      if (!args.quiet) r.printTable(stdout);
      if (!args.saveFinal.empty()) writeRaw(args.saveFinal, params);
    }
    std::ofstream(args.out + "/trace-rank-" + std::to_string(launchRank) + ".json")
        << timeline.chromeEvents();
    ct.barrier();
    if (lead) mergeTraces(args.out, launchSize);
    std::fflush(stdout);
  } catch (const std::exception& e) {
    // A failed peer: Chorus's error names it. Leave at once; a checkpoint write in
    // progress leaves only a temporary file behind.
    std::fprintf(stderr, "chorus-train: rank %d: step %lld: %s\n", rank,
                 static_cast<long long>(step), e.what());
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(3);
  }
  return 0;
}
