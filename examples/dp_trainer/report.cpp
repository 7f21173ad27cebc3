#include "report.hpp"

#include <fstream>
#include <sstream>

namespace trainer {

namespace {
const char* const kHiddenDefinition =
    "of the time some all-reduce of the step ran on a rank (union of its buckets' spans), the "
    "part inside that rank's own backward pass";
}  // namespace

void JobLog::startFresh(double now) {
  jobStart_ = now;
  lost_.clear();
  std::ofstream(out_ + "/job.txt") << "job_start " << std::to_string(now) << "\n";
}

void JobLog::load() {
  std::ifstream in(out_ + "/job.txt");
  std::string word;
  while (in >> word) {
    if (word == "job_start") {
      in >> jobStart_;
    } else if (word == "restart") {
      LostWork l;
      in >> l.attempt >> l.furthestStep >> l.resumedFrom >> l.lostSeconds;
      lost_.push_back(l);
    }
  }
}

void JobLog::resumed(int attempt, int64_t step, double ckptTime, double now) {
  load();
  if (jobStart_ == 0) jobStart_ = ckptTime > 0 ? ckptTime : now;  // no log
  if (ckptTime == 0) ckptTime = jobStart_;                        // resumed from nothing
  LostWork l;
  l.attempt = attempt;
  l.resumedFrom = step;
  l.furthestStep = step;
  std::ifstream(out_ + "/progress.txt") >> l.furthestStep;
  l.lostSeconds = now - ckptTime;
  lost_.push_back(l);
  std::ofstream(out_ + "/job.txt", std::ios::app)
      << "restart " << l.attempt << ' ' << l.furthestStep << ' ' << l.resumedFrom << ' '
      << std::to_string(l.lostSeconds) << "\n";
}

void JobLog::progress(int64_t step, double now) {
  // Rewritten in place without fsync: a killed process's writes stay in the page cache.
  if (!progress_) progress_ = std::fopen((out_ + "/progress.txt").c_str(), "w");
  if (!progress_) return;
  std::rewind(progress_);
  std::fprintf(progress_, "%lld %.3f\n", static_cast<long long>(step), now);
  std::fflush(progress_);
}

std::string RunReport::json() const {
  std::ostringstream o;
  o.precision(6);
  o << "{\n  \"ranks\": " << nranks << ",\n  \"attempt\": " << attempt
    << ",\n  \"steps\": " << steps << ",\n  \"start_step\": " << startStep
    << ",\n  \"steps_run\": " << stepsRun << ",\n  \"global_batch\": " << globalBatch
    << ",\n  \"parameters\": " << parameters << ",\n  \"flops_per_sample\": " << flopsPerSample
    << ",\n  \"seconds\": " << seconds << ",\n  \"samples_per_second\": " << samplesPerSecond
    << ",\n  \"step_seconds\": {\"total\": " << stepSeconds << ", \"compute\": " << computeSeconds
    << ", \"exposed_comm\": " << exposedCommSeconds
    << ", \"exposed_comm_waiting_for_slowest_backward\": " << waitSlowestSeconds
    << ", \"exposed_comm_transfer\": " << exposedTransferSeconds
    << ", \"exposed_comm_after_last_backward\": " << exposedAfterLastSeconds
    << ", \"checkpoint_pause\": " << checkpointPauseSeconds
    << "},\n  \"allreduce_seconds_per_step\": " << allReduceSeconds
    << ",\n  \"allreduce_hidden_fraction\": " << hiddenFraction
    << ",\n  \"allreduce_hidden_fraction_definition\": \"" << kHiddenDefinition << "\""
    << ",\n  \"allreduce_hidden_fraction_one_minus_exposed\": " << hiddenFractionByExposed
    << ",\n  \"allreduce_envelope_seconds_per_step\": " << envelopeSeconds
    << ",\n  \"allreduce_hidden_fraction_ddp_definition\": " << hiddenFractionDdp
    << ",\n  \"allreduce_start_delay_seconds_per_step\": " << startDelaySeconds
    << ",\n  \"allreduce_algorithm\": \"" << algorithm << "\",\n  \"bucket_floats\": [";
  for (size_t i = 0; i < bucketFloats.size(); ++i) o << (i ? ", " : "") << bucketFloats[i];
  o << "],\n  \"library_spin_us\": \"" << librarySpin
    << "\",\n  \"comm_thread_nice_relative\": " << commNice
    << ",\n  \"gemm_yield\": " << (gemmYield ? "true" : "false")
    << ",\n  \"comm_warmup_seconds\": " << commWarmupSeconds
    << ",\n  \"checkpoints\": {\"count\": " << checkpoints
    << ", \"pause_seconds\": " << pausePerCheckpoint
    << ", \"write_seconds\": " << writePerCheckpoint << ", \"policy\": \"" << checkpointPolicy
    << "\", \"every_steps\": " << checkpointEvery << ", \"young_daly\": ";
  if (youngDaly.computed)
    o << "{\"after_step\": " << youngDaly.afterStep
      << ", \"mtbf_seconds\": " << youngDaly.mtbfSeconds
      << ", \"mtbf_from_failures\": " << (youngDaly.mtbfFromFailures ? "true" : "false")
      << ", \"pause_seconds\": " << youngDaly.pauseSeconds
      << ", \"write_seconds\": " << youngDaly.writeSeconds
      << ", \"step_seconds\": " << youngDaly.stepSeconds
      << ", \"interval_seconds\": " << youngDaly.intervalSeconds << "}";
  else
    o << "null";
  o << "},\n  \"gemm_backend\": \"" << gemmBackend << "\",\n  \"peak_gemm_flops\": " << peakFlops
    << ",\n  \"achieved_flops\": " << achievedFlops << ",\n  \"mfu\": " << mfu
    << ",\n  \"elapsed_seconds\": " << elapsedSeconds
    << ",\n  \"useful_seconds\": " << usefulSeconds
    << ",\n  \"effective_training_time\": " << effectiveTrainingTime << ",\n  \"failures\": [";
  for (size_t i = 0; i < lost.size(); ++i)
    o << (i ? ", " : "") << "{\"restart\": " << lost[i].attempt
      << ", \"furthest_step\": " << lost[i].furthestStep
      << ", \"resumed_from\": " << lost[i].resumedFrom
      << ", \"lost_steps\": " << lost[i].furthestStep - lost[i].resumedFrom
      << ", \"lost_seconds\": " << lost[i].lostSeconds << "}";
  o << "],\n  \"shrinks\": [";
  for (size_t i = 0; i < shrinks.size(); ++i) {
    o << (i ? ", " : "") << "{\"step\": " << shrinks[i].step << ", \"dead\": [";
    for (size_t k = 0; k < shrinks[i].dead.size(); ++k) o << (k ? ", " : "") << shrinks[i].dead[k];
    o << "], \"detect_seconds\": " << shrinks[i].detectSeconds
      << ", \"shrink_seconds\": " << shrinks[i].shrinkSeconds
      << ", \"ranks_after\": " << shrinks[i].ranksAfter << "}";
  }
  o << "],\n  \"grows\": [";
  for (size_t i = 0; i < grows.size(); ++i)
    o << (i ? ", " : "") << "{\"step\": " << grows[i].step
      << ", \"ranks_after\": " << grows[i].ranksAfter << ", \"grow_seconds\": " << grows[i].seconds
      << "}";
  o << "],\n  \"final_loss\": " << finalLoss << ",\n  \"held_out_" << heldOutMetric
    << "\": " << heldOut << "\n}\n";
  return o.str();
}

void RunReport::printTable(FILE* out) const {
  std::fprintf(
      out,
      "chorus-train: %d ranks, steps %lld..%lld, global batch %lld, %.0f parameters\n"
      "  samples/s           %10.1f\n"
      "  step time (ms)      %10.3f = compute %.3f + exposed comm %.3f + checkpoint pause %.3f\n"
      "  all-reduce (ms)     %10.3f per step (%s)\n"
      "    hidden behind backward %5.1f%%  (%s)\n"
      "    1 - exposed/all-reduce %5.1f%%  (the exposed time is the training thread's waits)\n"
      "  as DDP counts it    %10.3f per step, %.1f%% hidden (first bucket ready to last done)\n"
      "  exposed comm (ms)   %10.3f = waiting for a slower rank's backward %.3f (before every "
      "rank had the bucket)\n"
      "                                 + all-reduce %.3f (of which after the last backward "
      "ended %.3f)\n"
      "  checkpoints         %10d  pause %.3f ms, write %.3f ms each; %s\n"
      "  MFU                 %9.1f%%  (%.2f GFLOP/s of %.2f measured peak GEMM)\n"
      "  effective training  %9.1f%%  (useful %.2f s of %.2f s elapsed)\n",
      nranks, static_cast<long long>(startStep), static_cast<long long>(steps),
      static_cast<long long>(globalBatch), parameters, samplesPerSecond, stepSeconds * 1e3,
      computeSeconds * 1e3, exposedCommSeconds * 1e3, checkpointPauseSeconds * 1e3,
      allReduceSeconds * 1e3, algorithm.c_str(), hiddenFraction * 100, kHiddenDefinition,
      hiddenFractionByExposed * 100, envelopeSeconds * 1e3, hiddenFractionDdp * 100,
      exposedCommSeconds * 1e3, waitSlowestSeconds * 1e3, exposedTransferSeconds * 1e3,
      exposedAfterLastSeconds * 1e3, checkpoints, pausePerCheckpoint * 1e3,
      writePerCheckpoint * 1e3, checkpointPolicy.c_str(), mfu * 100, achievedFlops / 1e9,
      peakFlops / 1e9, effectiveTrainingTime * 100, usefulSeconds, elapsedSeconds);
  for (const LostWork& l : lost)
    std::fprintf(
        out,
        "  failure -> restart %d: reached step %lld, resumed from %lld, lost %lld steps, %.2f s\n",
        l.attempt, static_cast<long long>(l.furthestStep), static_cast<long long>(l.resumedFrom),
        static_cast<long long>(l.furthestStep - l.resumedFrom), l.lostSeconds);
  for (const Shrink& s : shrinks)
    std::fprintf(
        out,
        "  failure at step %lld -> shrank to %d ranks in %.3f s (error %.3f s after the kill)\n",
        static_cast<long long>(s.step), s.ranksAfter, s.shrinkSeconds, s.detectSeconds);
  for (const Grow& g : grows)
    std::fprintf(out, "  grew back to %d ranks at step %lld in %.3f s\n", g.ranksAfter,
                 static_cast<long long>(g.step), g.seconds);
  if (heldOutMetric == "accuracy")
    std::fprintf(out, "  final loss %.4f, held-out accuracy %.2f%%\n", finalLoss, heldOut * 100);
  else
    std::fprintf(out, "  final loss %.4f, held-out %s %.3f\n", finalLoss, heldOutMetric.c_str(),
                 heldOut);
}

}  // namespace trainer
