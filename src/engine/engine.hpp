// The progress engine: executes the schedules of every collective in flight over one
// transport. Steps to or from the same peer run in issue order (each channel is a byte
// stream); everything else overlaps, element by element where a step feeds the next.
// Waiting spins briefly, then sleeps in the transport; every wait has a deadline.
#pragma once

#include "engine/loopback_channel.hpp"
#include "engine/op_state.hpp"
#include "engine/slice.hpp"
#include "engine/spin_budget.hpp"
#include "engine/step_trace.hpp"
#include "engine/yield_policy.hpp"
#include "errors.hpp"
#include "transports/transport.hpp"

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace chorus {

// A failure's message and the ranks known to have caused it (Error::failedRanks).
struct FailureReport {
  std::string cause;
  std::vector<int> failedRanks;
};

struct EngineConfig {
  int rank = 0;
  int nranks = 1;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // longest wait without progress
  std::chrono::microseconds spin{20};                          // busy-poll before sleeping
  // The most of `spin` that polls without system calls (a pause between polls; the
  // SpinBudget learns how much pays); the rest polls with sched_yield. Zero when ranks
  // outnumber cores.
  std::chrono::microseconds pauseSpin{0};
  bool yieldWhileSpinning = false;  // more ranks than cores (the comm spins longer then)
  // A yield that takes a tick ends the yielding for a while (YieldPolicy); false: always yield.
  bool adaptiveYield = true;
  size_t sliceBytes = kPipelineSliceBytes;  // most bytes one step moves per pass
  // Ops whose bytes x ranks reach this copy peers' ranges of at least
  // kernels::kStreamingCopyFromBytes into the output with streaming stores.
  size_t streamFromBytes = size_t{64} << 20;
  // Called every ~100 ms while ops wait, polled or not; throws PeerError for a dead peer.
  std::function<void()> checkPeers;
  // Called once when the engine fails, with the cause and the failed ranks (e.g. to tell
  // the other ranks).
  std::function<void(const std::string& cause, const std::vector<int>& failedRanks)> onFailure;
  // What `rank` reported when it failed (empty cause if nothing) and the ranks it named as
  // failed, to say why a peer died.
  std::function<FailureReport(int rank)> lastWords;
  // At a stall: given what this rank waits in and the peers it waits for, returns what
  // those peers are doing (appended to the timeout's message). `unreachable`: a peer this
  // rank already names as one whose host does not answer (-1: none), not to be named again.
  std::function<std::string(const std::string& self, const std::vector<int>& peers,
                            int unreachable)>
      diagnose;
  // After half the timeout without progress: says what this rank waits in and for whom,
  // so that a peer diagnosing its own stall meanwhile can follow the chain through this
  // rank; called with ("", {}) when progress resumes, and again when the probes find an
  // awaited peer's host silent (Transport::silence), for the report to say so.
  std::function<void(const std::string& self, const std::vector<int>& peers)> waiting;
  // CHORUS_TRACE_STEPS: where the per-step trace goes (engine/step_trace.hpp); empty: off.
  std::string tracePrefix;
};

class Engine {
 public:
  Engine(Transport& transport, EngineConfig config);
  ~Engine();

  // Queues the op's steps behind everything issued before. The op must stay alive until
  // it is done (the communicator keeps it).
  void submit(std::shared_ptr<detail::OpState> op);
  // Drives progress until `op` is done (true) or `deadline` passes (false). Throws Error
  // when the op failed; a failure fails every op in flight and every later one.
  bool waitFor(detail::OpState& op, Deadline deadline);
  // One non-blocking pass; true if anything moved. While ops are in flight it also checks,
  // every ~100 ms, that the peers live and that the stall deadline has not passed, so a
  // program that only polls (asyncError, Work::test) sees a dead peer as one that waits.
  bool poll() { return poll(true); }
  // Finishes what is in flight (a communicator being destroyed must not strand its
  // peers); gives up at the deadline or on failure. Never throws.
  void drain(Deadline deadline);
  void abort(const std::string& why);  // thread-safe
  bool failed() const { return failure_ != Result::Success; }
  // One progress pass, then Success (idle), InProgress (ops in flight) or the failure.
  Result state();
  // Starts the CHORUS_TRACE_STEPS file anew, so it holds the user's calls and not the
  // tuning probe's before them (whose sequence numbers the communicator restarts); between
  // calls only, none in flight.
  void restartTrace();
  // Forgets what the YieldPolicy learnt (YieldPolicy::forget); between waits only.
  void resetYieldPolicy() { yieldPolicy_.forget(); }
  std::string failureCause() const { return failureCause_; }
  const std::vector<int>& failedRanks() const { return failedRanks_; }

 private:
  struct StepRef {
    detail::OpState* op;
    int step;
  };
  // `checkStrays`: also look for a peer that made another call while a mailbox op waits
  // for it (checkStrayCall); poll() asks for that on the polls that read the clock.
  bool progressPass(bool checkStrays);
  void submitMailbox(std::shared_ptr<detail::OpState> op);  // mailbox_allreduce.cpp
  // A call submitted after the communicator failed: completes it at once with the failure.
  bool refuseAfterFailure(detail::OpState& op);
  bool advanceMailbox(bool checkStrays);  // the oldest mailbox op; true if anything moved
  bool checkStrayCall(detail::OpState& op, int peer, std::byte* slot, size_t bytes);
  // One step's progress; with a trace on (one branch when off), through advanceTraced.
  bool advance(StepRef ref) {
    if (trace_) [[unlikely]]
      return advanceTraced(ref);
    return advanceStep(ref);
  }
  bool advanceStep(StepRef ref);
  bool advanceTraced(StepRef ref);
  bool advanceSend(detail::OpState& op, int index);
  bool advanceRecv(detail::OpState& op, int index);
  bool advanceLocal(detail::OpState& op, int index);  // Copy and Reduce
  // A large message over a channel with a rendezvous (rendezvous.cpp): true when the
  // rendezvous handles the step now (the caller returns `moved`), false when its data
  // goes through the stream.
  DirectTransfer* rendezvousFor(detail::StepProgress& p, Channel& channel, size_t bytes);
  bool sendRendezvous(detail::OpState& op, int index, Channel& channel, bool& moved);
  void sendHeaderWithOffer(detail::OpState& op, int index, Channel& channel, bool& moved);
  bool recvRendezvous(detail::OpState& op, int index, Channel& channel, bool& moved);
  void recvClearToSend(detail::OpState& op, int index, Channel& channel, bool& moved);
  std::optional<detail::RendezvousOffer> takeOffer(detail::OpState& op, int index, Channel& channel,
                                                   bool& moved);
  bool advanceExpose(detail::OpState& op, int index);
  bool advancePeerRead(detail::OpState& op, int index);  // PeerRead and PeerReduce
  bool advancePeerWrite(detail::OpState& op, int index);
  // The peer's Expose record for one-sided step `index`, into its progress's `record`.
  bool takeExposeRecord(detail::OpState& op, int index, Channel& channel, bool& moved);
  size_t oneSidedLimit(const detail::OpState& op, int index, size_t count) const;
  bool streamsResult(const detail::OpState& op, size_t count) const;
  // Schedule rule 6: the steps after PeerReduce `index` that fold into the same pass over
  // elements [from, ...): their sources go to foldSources_; returns the chain's last step.
  int gatherFoldChain(detail::OpState& op, int index, size_t from);
  PeerMemory& peerMemory();
  bool sendHeader(detail::OpState& op, detail::StepProgress& p, Channel& channel, bool& moved);
  bool receiveHeader(detail::OpState& op, detail::StepProgress& p, Channel& channel, int peer,
                     bool& moved);
  bool afterComplete(const detail::OpState& op, int index) const;
  size_t allowedElements(const detail::OpState& op, int index) const;
  void completeStep(detail::OpState& op, int index);
  void failAll(Result code, const std::string& cause, std::vector<int> failedRanks = {});
  // poll(); without `withClock` it skips the clock and what hangs on it (peer checks, the
  // stall deadline) and the stray-call check of a waiting mailbox op (a peer's channel
  // read per idle poll, half of such a poll): waitFor's pauses read the clock every few
  // polls only, and its polls before a yield or a sleep always do. An idle poll
  // that read the clock (and checked the stall deadline with it) stores the time in
  // `*idleNow`, so that the caller need not read it again.
  bool poll(bool withClock, Clock::time_point* idleNow = nullptr);
  // How often deaths are checked for while calls are in flight (checkPeers).
  static constexpr auto kPeerCheckEvery = std::chrono::milliseconds(100);
  // failure_diagnosis.cpp: why the engine cannot go on.
  FailureReport rootCause(const PeerError& seen);
  FailureReport reportedBy(int rank);
  void checkPeers(Clock::time_point now);
  void checkDeaths();  // the store's reports, then the transport's; throws PeerError
  void checkStall(Clock::time_point now);
  void noteWaiting(bool waiting);
  void noteSilence(Clock::time_point now);  // reports again when a probed peer falls silent
  std::optional<StepRef> earliestWait() const;
  std::string waitingFor() const;
  std::vector<int> awaitedPeers() const;
  // `exposed`: the schedule exposes its scratch to peers, so it comes from memAlloc.
  void lendScratch(detail::OpState& op, bool exposed);
  void lendSharedScratch(detail::OpState& op, size_t bytes);
  void returnScratch(detail::OpState& op);

  Channel& channelTo(int peer) {
    return peer == config_.rank ? loopback_ : transport_.channel(peer);
  }

  Transport& transport_;
  LoopbackChannel loopback_;
  EngineConfig config_;
  SpinBudget spinBudget_{config_.pauseSpin};
  YieldPolicy yieldPolicy_{config_.adaptiveYield};
  std::vector<std::deque<StepRef>> sendQueue_, recvQueue_;  // per peer, issue order
  std::vector<StepRef> localSteps_;
  std::deque<detail::OpState*> mailboxOps_;  // issue order; only the first one moves
  uint32_t mailboxCount_ = 0;                // mailbox ops submitted (their message numbers)
  std::vector<std::byte> gathered_;          // every rank's message of the first mailbox op
  std::vector<char> taken_;                  // per rank: its message is in gathered_
  int takenLeft_ = 0;
  uint64_t submitted_ = 0;                           // ops submitted (stamps below)
  std::vector<uint64_t> headerSentTo_, headerFrom_;  // per peer: last op that marked a header
  std::vector<int> busyPeers_;                       // peers with queued steps
  std::deque<std::shared_ptr<detail::OpState>> inFlight_;
  std::vector<std::vector<std::byte>> scratchPool_;
  struct SharedScratch {
    std::shared_ptr<std::byte> data;  // memAlloc'd; freed with the last holder
    LocalRegion region;
  };
  // Kept between calls, so that peers map each buffer once (ShmPeerMemory's mappings).
  std::vector<SharedScratch> sharedScratchPool_;
  std::vector<std::byte> bounce_;         // a slice read from a peer that cannot be mapped
  std::vector<const void*> foldSources_;  // one multi-source fold's sources (rule 6)
  // Progress since lastProgress_ was last set: the time is taken at the next clock read
  // (the next idle poll), so a poll that moves reads no clock. lastProgress_ can only come
  // out later than the progress: the stall deadline never comes early.
  Clock::time_point lastProgress_;
  bool progressUnstamped_ = false;
  void stampProgress(Clock::time_point now) {
    if (!progressUnstamped_) return;
    lastProgress_ = now;
    progressUnstamped_ = false;
  }
  Clock::time_point lastPeerCheck_;
  bool waitingNoted_ = false;     // config_.waiting told the others we wait
  std::vector<int> probed_;       // peers the transport probes meanwhile (noteWaiting)
  std::vector<int> silentNoted_;  // probed peers whose silence the last report included
  Clock::time_point lastSilenceCheck_{};
  Result failure_ = Result::Success;
  std::string failureCause_;
  std::vector<int> failedRanks_;  // ascending, no repeats
  std::atomic<bool> abortRequested_{false};
  std::mutex abortMutex_;  // abort() may come from another thread
  std::string abortReason_;
  std::unique_ptr<StepTrace> trace_;  // null unless EngineConfig::tracePrefix is set
};

}  // namespace chorus
