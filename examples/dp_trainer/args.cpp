#include "args.hpp"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

namespace trainer {
namespace {

constexpr const char* kUsage =
    R"(usage: chorus-train [flags]   (launch with chorus-run -n N, mpirun, or torchrun-style env)
model and data
  --model mlp|transformer   the MLP classifier on the digits (default), or a tiny
                            decoder-only transformer LM on the texts of /usr/share/common-licenses
  --data PATH               digits CSV.gz (default: python3-sklearn's digits.csv.gz), or a
                            directory of text files for the transformer
  --hidden N --layers N     MLP: hidden width (1024) and hidden layer count (3)
  --dim N --heads N --context N --layers N   transformer: width (64), heads (4),
                            context bytes (64), blocks (2)
  --batch N                 samples per rank per step (64)
  --steps N                 training steps (200)
  --test-fraction F         held-out share (0.2); --eval-every N (50)
  --seed N                  one seed for split, init and data order (1)
optimizer
  --optimizer adamw|sgd  --lr F (1e-3)  --momentum F (0.9)  --weight-decay F (0)
  --warmup N (0)  --decay cosine|linear|none (cosine)  --min-lr-ratio F (0.1)
communication
  --bucket-mb F             gradient bucket size (1)
  --gpu                     MLP: GEMMs through cuBLAS (a build with -DCHORUS_TRAINER_CUBLAS=ON
                            and a GPU; operands copied per call)
  --whole-layers            MLP: a layer's gradient as one group (default: blocks of rows
                            of at most half a bucket, each reduced as soon as computed)
  --step-per-bucket         the optimizer steps each bucket as soon as it is averaged, while
                            the rest are still being reduced (default: once all are done;
                            on 2 shared cores no faster, see perf/trainer/README.md)
  --max-in-flight N         bucket all-reduces running at once (1: each starts once the
                            one before it is done)
  --comm-rt                 the communication thread (only it) at real-time priority
                            (SCHED_FIFO 1), so that it preempts backward as soon as a
                            bucket or a peer's message is ready (a warning if refused)
  --comm-nice N             the communication thread's nice relative to the training
                            thread's (default -10: about 9x its CPU weight, so that a
                            posted bucket or a peer's message runs ahead of backward; it
                            sleeps otherwise; 0: the same; kept equal where refused)
  --bind-compute            where ranks outnumber cores, keep the training thread on the
                            core the library binds the rank to (CHORUS_BIND_CORE: local
                            rank mod cores, two ranks a core at 4 ranks on 2), with its
                            communication thread (the default: the ranks' backward passes
                            end closer together; perf/trainer/README.md, twelfth pass)
  --free-compute            the training thread may run on any core (its launch affinity);
                            only the communication thread stays on the library's core
  --gemm-yield auto|on|off  after each GEMM (and each bucket of the optimizer) offer the core
                            to another runnable thread of the job (sched_yield): the ranks
                            that share a core take turns per GEMM instead of per scheduler
                            tick, so their backward passes end together (auto, the
                            default: on where one host's ranks outnumber its cores)
  --no-comm-warmup          skip the warm-up: by default every bucket's all-reduce runs once
                            before the first step (the same calls as a step, on the
                            gradient array), so that the library's set-up of each shape
                            (peer_staged: its peer-mappable scratch) is not paid in
                            the first step's backward; the report says what it cost
  --spin-us N               the library's polling before a wait sleeps (CHORUS_SPIN_US) for
                            this job, unless the environment sets CHORUS_SPIN_US (default 0:
                            sleep at once; -1: the library's default, 200 us of sched_yield
                            polling where ranks outnumber cores). A thread that yields next
                            to a computing thread gets the core back only at the next tick
                            (about 4 ms here), one that sleeps within 30 us of its wake-up,
                            so polling starves the bucket all-reduces during backward
                            (perf/trainer/README.md, ninth pass). The library now
                            stops yielding after a yield that took a tick
                            (CHORUS_YIELD_ADAPT), which recovers most but not all of
                            this (tenth pass), so the default stays 0
  --no-deterministic        let the tuner choose algorithms (default: CHORUS_DETERMINISTIC)
  --timeout-s N             deadline for any collective (120)
checkpoints
  --ckpt-dir DIR (<out>/ckpt)  --ckpt-every N (0: Young-Daly from --mtbf)  --mtbf SEC
  --ckpt-keep K (3)  --ckpt-blocking  --no-resume
failures
  --fail-at-step S[,S..] --fail-rank R[,R..]   SIGKILL rank R at step S on restart i
  --fail-random SEED --fail-count K            the same, K failures drawn from SEED
  --fail-after-bucket K     the failure strikes once the step's bucket K is averaged and
                            stepped by the optimizer (default: mid-backward)
  --on-failure exit|shrink|grow  exit (chorus-run --max-restarts relaunches; default), or
                            the survivors shrink() the communicator and carry on in place
                            (set CHORUS_RUN_GRACE high so chorus-run lets them); grow: as
                            shrink, and admit a replacement (chorus-run --respawn) with
                            grow() at the start of the step after it joins
  --grow-wait               with grow: the survivors wait for the replacement right after
                            the shrink and redo the failed step at full size (bit-exact)
  --grow-wait-s S           ... for at most S seconds (default --timeout-s); then they carry
                            on with fewer ranks and admit a late replacement at the first
                            step it is pending
  --join-after-file PATH    test hook: a replacement joins only once PATH exists
  --hold-for-join-at-step S test hook: at step S, short of ranks, rank 0 writes
                            <out>/holding-for-join and all wait for a pending join
output
  --out DIR (chorus-train-out)  --save-final FILE  --dump-init FILE (raw float32 weights)  --trace-steps N (30)  --threads N (1)  --quiet
)";

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr, "chorus-train: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

template <class T>
T number(const std::string& flag, const std::string& text) {
  std::istringstream in(text);
  T v{};
  if (!(in >> v) || !in.eof()) usage(flag + " wants a number, not '" + text + "'");
  return v;
}

template <class T>
std::vector<T> list(const std::string& flag, const std::string& text) {
  std::vector<T> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(number<T>(flag, item));
  return out;
}

}  // namespace

Args parseArgs(int argc, char** argv) {
  Args a;
  OptimizerConfig& o = a.optimizer;
  std::map<std::string, std::function<void(const std::string&)>> withValue = {
      {"--model", [&](auto& v) { a.model = v; }},
      {"--data", [&](auto& v) { a.data = v; }},
      {"--hidden", [&](auto& v) { a.hidden = number<int>("--hidden", v); }},
      {"--dim", [&](auto& v) { a.dim = number<int>("--dim", v); }},
      {"--heads", [&](auto& v) { a.heads = number<int>("--heads", v); }},
      {"--context", [&](auto& v) { a.context = number<int>("--context", v); }},
      {"--layers", [&](auto& v) { a.layers = number<int>("--layers", v); }},
      {"--batch", [&](auto& v) { a.batch = number<int>("--batch", v); }},
      {"--steps", [&](auto& v) { a.steps = number<int64_t>("--steps", v); }},
      {"--test-fraction", [&](auto& v) { a.testFraction = number<double>("--test-fraction", v); }},
      {"--eval-every", [&](auto& v) { a.evalEvery = number<int>("--eval-every", v); }},
      {"--seed", [&](auto& v) { a.seed = number<uint64_t>("--seed", v); }},
      {"--optimizer", [&](auto& v) { o.kind = v; }},
      {"--lr", [&](auto& v) { o.lr = number<float>("--lr", v); }},
      {"--momentum", [&](auto& v) { o.momentum = number<float>("--momentum", v); }},
      {"--weight-decay", [&](auto& v) { o.weightDecay = number<float>("--weight-decay", v); }},
      {"--warmup", [&](auto& v) { o.warmupSteps = number<int64_t>("--warmup", v); }},
      {"--decay", [&](auto& v) { o.decay = v; }},
      {"--min-lr-ratio", [&](auto& v) { o.minLrRatio = number<float>("--min-lr-ratio", v); }},
      {"--bucket-mb", [&](auto& v) { a.bucketMb = number<double>("--bucket-mb", v); }},
      {"--max-in-flight", [&](auto& v) { a.maxInFlight = number<int>("--max-in-flight", v); }},
      {"--spin-us", [&](auto& v) { a.spinUs = number<int>("--spin-us", v); }},
      {"--gemm-yield",
       [&](auto& v) {
         if (v != "auto" && v != "on" && v != "off") usage("--gemm-yield takes auto, on or off");
         a.gemmYield = v;
       }},
      {"--comm-nice", [&](auto& v) { a.commNice = number<int>("--comm-nice", v); }},
      {"--timeout-s", [&](auto& v) { a.timeoutS = number<int>("--timeout-s", v); }},
      {"--ckpt-dir", [&](auto& v) { a.ckptDir = v; }},
      {"--ckpt-every", [&](auto& v) { a.ckptEvery = number<int64_t>("--ckpt-every", v); }},
      {"--mtbf", [&](auto& v) { a.mtbf = number<double>("--mtbf", v); }},
      {"--ckpt-keep", [&](auto& v) { a.ckptKeep = number<int>("--ckpt-keep", v); }},
      {"--fail-at-step", [&](auto& v) { a.failAtStep = list<int64_t>("--fail-at-step", v); }},
      {"--fail-rank", [&](auto& v) { a.failRank = list<int>("--fail-rank", v); }},
      {"--fail-random", [&](auto& v) { a.failRandomSeed = number<uint64_t>("--fail-random", v); }},
      {"--fail-count", [&](auto& v) { a.failCount = number<int>("--fail-count", v); }},
      {"--on-failure", [&](auto& v) { a.onFailure = v; }},
      {"--out", [&](auto& v) { a.out = v; }},
      {"--grow-wait-s", [&](auto& v) { a.growWaitS = number<double>("--grow-wait-s", v); }},
      {"--join-after-file", [&](auto& v) { a.joinAfterFile = v; }},
      {"--hold-for-join-at-step",
       [&](auto& v) { a.holdForJoinAtStep = number<int64_t>("--hold-for-join-at-step", v); }},
      {"--fail-after-bucket",
       [&](auto& v) { a.failAfterBucket = number<int>("--fail-after-bucket", v); }},
      {"--save-final", [&](auto& v) { a.saveFinal = v; }},
      {"--dump-init", [&](auto& v) { a.dumpInit = v; }},
      {"--trace-steps", [&](auto& v) { a.traceSteps = number<int>("--trace-steps", v); }},
      {"--threads", [&](auto& v) { a.threads = number<int>("--threads", v); }},
  };
  std::map<std::string, std::function<void()>> switches = {
      {"--ckpt-blocking", [&] { a.ckptBlocking = true; }},
      {"--grow-wait", [&] { a.growWait = true; }},
      {"--whole-layers", [&] { a.wholeLayers = true; }},
      {"--step-per-bucket", [&] { a.stepPerBucket = true; }},
      {"--comm-rt", [&] { a.commRealtime = true; }},
      {"--bind-compute", [&] { a.freeCompute = false; }},
      {"--free-compute", [&] { a.freeCompute = true; }},
      {"--gpu", [&] { a.gpu = true; }},
      {"--no-resume", [&] { a.resume = false; }},
      {"--no-deterministic", [&] { a.deterministic = false; }},
      {"--no-comm-warmup", [&] { a.commWarmup = false; }},
      {"--quiet", [&] { a.quiet = true; }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (auto eq = flag.find('='); eq != std::string::npos && flag.rfind("--", 0) == 0)
      value = flag.substr(eq + 1), flag = flag.substr(0, eq);
    if (auto s = switches.find(flag); s != switches.end()) {
      s->second();
    } else if (auto w = withValue.find(flag); w != withValue.end()) {
      if (value.empty()) {
        if (i + 1 >= argc) usage(flag + " needs a value");
        value = argv[++i];
      }
      w->second(value);
    } else {
      usage("unknown flag '" + flag + "'");
    }
  }
  if (a.model != "mlp" && a.model != "transformer") usage("--model must be mlp or transformer");
  if (a.layers < 0) a.layers = a.model == "mlp" ? 3 : 2;
  if (a.hidden < 1 || a.batch < 1 || a.steps < 1 || a.bucketMb <= 0 || a.dim < 1 || a.heads < 1 ||
      a.context < 2)
    usage("--hidden, --dim, --heads, --context, --batch, --steps and --bucket-mb must be positive");
  if (a.dim % a.heads != 0) usage("--dim must be a multiple of --heads");
  if (a.failAtStep.size() != a.failRank.size())
    usage("--fail-at-step and --fail-rank need as many entries each");
  if (a.onFailure != "exit" && a.onFailure != "shrink" && a.onFailure != "grow")
    usage("--on-failure must be exit, shrink or grow");
  if (a.growWait && a.onFailure != "grow") usage("--grow-wait needs --on-failure grow");
  if (a.growWaitS >= 0 && !a.growWait) usage("--grow-wait-s needs --grow-wait");
  if (a.growWaitS < 0) a.growWaitS = a.timeoutS;
  if (a.ckptDir.empty()) a.ckptDir = a.out + "/ckpt";
  o.totalSteps = a.steps;
  return a;
}

}  // namespace trainer
