// Finding out why the engine cannot go on: deaths the store and the transport know of, the
// stall's diagnosis at the deadline (what this rank waits on first, the peers it probes
// from half the deadline), and the root cause behind a channel error.
#include "engine/engine.hpp"
#include "errors.hpp"

#include <algorithm>
#include <thread>

namespace chorus {

// The store's death reports first: a peer whose process is gone may simply have finished
// and left (a clean exit), while the rank the store saw die is the cause (soak seed
// 1796500001, trial 552: a survivor blamed a rank that had completed every call).
void Engine::checkDeaths() {
  if (config_.checkPeers) config_.checkPeers();
  transport_.checkPeers();
}

// Deaths the store or the transport know of for certain: fails everything, naming the rank.
void Engine::checkPeers(Clock::time_point now) {
  if (now - lastPeerCheck_ < kPeerCheckEvery) return;
  lastPeerCheck_ = now;
  try {
    checkDeaths();
  } catch (const PeerError& dead) {
    std::string cause = dead.what();
    if (std::string words = reportedBy(dead.peer()).cause; !words.empty())
      cause += "; it had failed first: " + words;
    failAll(dead.code(), cause, dead.failedRanks());
  }
}

// The earliest step of the oldest call still waiting on a peer: every later step waits on
// it, or on a peer that does (a rank of a hierarchical all-reduce also has the next
// phase's receive from its node neighbour queued, which only follows this one).
std::optional<Engine::StepRef> Engine::earliestWait() const {
  std::optional<StepRef> first;
  auto earlier = [](StepRef a, StepRef b) {
    return a.op->sequence != b.op->sequence ? a.op->sequence < b.op->sequence : a.step < b.step;
  };
  for (int peer : busyPeers_)
    for (const auto* queue : {&recvQueue_[peer], &sendQueue_[peer]})
      if (!queue->empty() && (!first || earlier(queue->front(), *first))) first = queue->front();
  return first;
}

std::string Engine::waitingFor() const {
  if (!mailboxOps_.empty())
    for (int peer = 0; peer < config_.nranks; ++peer)
      if (!taken_[peer]) return "waiting for rank " + std::to_string(peer) + "'s small message";
  const std::optional<StepRef> first = earliestWait();
  if (!first) return "waiting";
  const Step& step = first->op->schedule->steps[static_cast<size_t>(first->step)];
  const std::string peer = std::to_string(step.peer);
  return isOutgoing(step.kind) ? "waiting for rank " + peer + " to take data"
                               : "waiting for data from rank " + peer;
}

// The peers this rank waits for, the one it waits for first (earliestWait) at the front:
// the diagnosis follows them in this order.
std::vector<int> Engine::awaitedPeers() const {
  std::vector<int> peers;
  if (!mailboxOps_.empty())
    for (int peer = 0; peer < config_.nranks; ++peer)
      if (!taken_[peer]) peers.push_back(peer);
  for (int peer : busyPeers_)
    if (!recvQueue_[peer].empty() && std::find(peers.begin(), peers.end(), peer) == peers.end())
      peers.push_back(peer);
  if (peers.empty())
    for (int peer : busyPeers_) peers.push_back(peer);
  std::sort(peers.begin(), peers.end());
  if (const std::optional<StepRef> first = earliestWait(); first && mailboxOps_.empty()) {
    const int peer = first->op->schedule->steps[static_cast<size_t>(first->step)].peer;
    auto it = std::find(peers.begin(), peers.end(), peer);
    if (it != peers.end()) std::rotate(peers.begin(), it, it + 1);
  }
  return peers;
}

void Engine::checkStall(Clock::time_point now) {
  stampProgress(now);
  if (inFlight_.empty() || now - lastProgress_ < config_.timeout) return;
  auto seconds = std::chrono::duration<double>(config_.timeout).count();
  std::string cause = "no progress for " + std::to_string(seconds).substr(0, 6) +
                      " s (CHORUS_TIMEOUT), " + waitingFor();
  if (config_.diagnose) {
    try {
      const std::string self = inFlight_.front()->describe() + ", " + waitingFor();
      cause += config_.diagnose(self, awaitedPeers(), -1);
    } catch (const std::exception& e) {
      cause += " (no diagnosis: " + std::string(e.what()) + ")";
    }
  }
  failAll(Result::Timeout, cause);
}

// Half way to the deadline: tells the others what this rank waits for, and has the
// transport ask the awaited peers' hosts for an answer, so that the diagnosis at the
// deadline can tell one that is down or cut off (Transport::probe, silence).
void Engine::noteWaiting(bool waiting) {
  waitingNoted_ = waiting;
  silentNoted_.clear();
  const bool stalled = waiting && !inFlight_.empty();
  try {
    for (int peer : probed_) transport_.probe(peer, false);
    probed_.clear();
    if (stalled) {
      probed_ = awaitedPeers();
      for (int peer : probed_) transport_.probe(peer, true);
    }
  } catch (const std::exception&) {  // best effort: the connection may be gone
  }
  if (!config_.waiting) return;
  // A store this rank cannot reach hints at a cut: then every peer is probed, so that the
  // diagnosis can name the ones across it even where this rank waits first on one beside it
  // (whose report it cannot read). The probing starts before the report is written: a write
  // to a silent store fails only after kReportBy, and a probe needs most of the half
  // timeout left to find a host silent (PeerSilence::kUnansweredInARow unanswered, one a second).
  std::vector<int> unawaited;
  if (stalled)
    for (int peer = 0; peer < config_.nranks; ++peer) {
      if (peer == config_.rank || std::find(probed_.begin(), probed_.end(), peer) != probed_.end())
        continue;
      try {
        transport_.probe(peer, true);
        unawaited.push_back(peer);
      } catch (const std::exception&) {
      }
    }
  bool reported = true;
  try {
    if (stalled)
      config_.waiting(inFlight_.front()->describe() + ", " + waitingFor(), awaitedPeers());
    else
      config_.waiting("", {});
  } catch (const std::exception&) {  // best effort: the store may be gone
    reported = false;
  }
  if (reported) {  // the store answers: the awaited peers' probes are enough
    for (int peer : unawaited) try {
        transport_.probe(peer, false);
      } catch (const std::exception&) {
      }
  } else {
    probed_.insert(probed_.end(), unawaited.begin(), unawaited.end());
  }
}

// While probing: once an awaited peer's host stops answering, the report says so, for a
// rank that follows the chain of waits through this one (and cannot probe that peer, or
// reach it at all) to name it as cut off rather than as not waiting.
void Engine::noteSilence(Clock::time_point now) {
  if (probed_.empty() || now - lastSilenceCheck_ < kPeerCheckEvery) return;
  lastSilenceCheck_ = now;
  bool fellSilent = false;
  for (int peer : probed_) {
    if (std::find(silentNoted_.begin(), silentNoted_.end(), peer) != silentNoted_.end()) continue;
    try {
      if (const std::optional<PeerSilence> silent = transport_.silence(peer);
          silent && silent->cutOff()) {
        silentNoted_.push_back(peer);
        fellSilent = true;
      }
    } catch (const std::exception&) {  // the connection may be gone: its error will tell
    }
  }
  if (!fellSilent || !config_.waiting || inFlight_.empty()) return;
  try {
    config_.waiting(inFlight_.front()->describe() + ", " + waitingFor(), awaitedPeers());
  } catch (const std::exception&) {  // best effort: the store may be gone
  }
}

FailureReport Engine::reportedBy(int rank) {
  if (!config_.lastWords || rank < 0) return {};
  try {
    return config_.lastWords(rank);
  } catch (const std::exception&) {
    return {};
  }
}

// A channel error names the peer at its other end, which may only be reacting to a fault
// elsewhere (it failed first and left; a timeout of ours met its own). Before that peer is
// named: a death the store or the transport knows of comes first; then what the peer
// reported when it failed; then the chain of waits from it (the stall diagnosis), after
// which the store may know of a death it had not heard of yet.
// The failed ranks follow the cause: the dead ones, or the ones the peer that failed first
// named, or the peer itself when nothing else is known (it closed the connection).
FailureReport Engine::rootCause(const PeerError& seen) {
  const int peer = seen.peer();
  auto knownDeath = [&]() -> FailureReport {
    try {
      checkDeaths();
    } catch (const PeerError& dead) {
      std::string cause = dead.what();
      if (dead.peer() != peer) cause += "; then: " + std::string(seen.what());
      if (std::string words = reportedBy(dead.peer()).cause; !words.empty())
        cause += "; it had failed first: " + words;
      return {cause, dead.failedRanks()};
    } catch (const std::exception&) {
    }
    return {};
  };
  // A killed peer's store connection closes with its channels: give the notice a moment.
  for (int look = 0; look < 10; ++look) {
    if (FailureReport death = knownDeath(); !death.cause.empty()) return death;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (FailureReport words = reportedBy(peer); !words.cause.empty())
    return {std::string(seen.what()) + "; rank " + std::to_string(peer) +
                " had failed first: " + words.cause,
            words.failedRanks};
  if (!config_.diagnose || peer < 0 || inFlight_.empty()) return {seen.what(), seen.failedRanks()};
  std::string chain;
  try {
    const std::string self = inFlight_.front()->describe() +
                             ", which lost its connection to rank " + std::to_string(peer);
    chain = config_.diagnose(self, {peer}, seen.unreachable() ? peer : -1);
  } catch (const std::exception& e) {
    chain = " (no diagnosis: " + std::string(e.what()) + ")";
  }
  if (FailureReport death = knownDeath(); !death.cause.empty()) return death;
  return {seen.what() + chain, seen.failedRanks()};
}

}  // namespace chorus
