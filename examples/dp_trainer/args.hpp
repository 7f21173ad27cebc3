// chorus-train's command line.
#pragma once

#include "optimizer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace trainer {

struct Args {
  std::string model = "mlp";
  std::string data;                       // default: the digits python3-sklearn ships
  int hidden = 1024, layers = -1;         // layers: MLP hidden layers (3) or transformer blocks (2)
  int dim = 64, heads = 4, context = 64;  // transformer
  int batch = 64;                         // per rank
  int64_t steps = 200;
  OptimizerConfig optimizer;
  uint64_t seed = 1;
  double testFraction = 0.2;
  double bucketMb = 1.0;
  int evalEvery = 50;
  std::string out = "chorus-train-out";
  std::string ckptDir;    // default <out>/ckpt
  int64_t ckptEvery = 0;  // 0: Young-Daly when an MTBF is known, else none
  double mtbf = 0;        // seconds
  int ckptKeep = 3;
  bool ckptBlocking = false;
  bool resume = true;
  std::vector<int64_t> failAtStep;  // the i-th one on restart i (CHORUS_RESTART_COUNT)
  std::vector<int> failRank;
  std::string onFailure = "exit";  // or "shrink": survivors carry on without the dead rank,
                                   // or "grow": and admit its replacement
  bool growWait = false;           // grow: wait for the replacement before going on
  double growWaitS = -1;           // at most this long (default --timeout-s), then carry on
  std::string joinAfterFile;       // test hook: a newcomer joins once this file exists
  int64_t holdForJoinAtStep = -1;  // test hook: at this step, wait for a pending join
  int failAfterBucket = -1;        // test hook: the failure strikes once this bucket of the
                                   // step is averaged and stepped (default: mid-backward)
  bool gpu = false;                // MLP GEMMs through cuBLAS (built with CHORUS_TRAINER_CUBLAS)
  bool wholeLayers = false;        // MLP: one gradient group per layer (no row blocks)
  bool stepPerBucket = false;      // optimizer on each bucket as soon as it is averaged
  int maxInFlight = 1;             // bucket all-reduces running at once
  bool commRealtime = false;       // the communication thread at SCHED_FIFO 1
  int commNice = -10;              // the communication thread's nice, relative to the training
                                   // thread's (0: the same)
  std::string gemmYield = "auto";  // sched_yield after each GEMM: on, off, auto (where one
                                   // host's ranks outnumber its cores)
  bool commWarmup = true;          // every bucket's all-reduce once before the first step
  bool freeCompute = false;        // the training thread not bound to the library's core
  int spinUs = 0;                  // CHORUS_SPIN_US for the communicator unless set (-1: the
                                   // library's default)
  uint64_t failRandomSeed = 0;
  int failCount = 0;
  std::string saveFinal;
  std::string dumpInit;  // the initial parameters, raw float32 (for the PyTorch reference)
  int threads = 1;
  int timeoutS = 120;
  int traceSteps = 30;
  bool deterministic = true;
  bool quiet = false;
};

// Exits with a usage message on a bad flag.
Args parseArgs(int argc, char** argv);

}  // namespace trainer
