// Failures travel through the store, so that the other ranks can say why: a rank that
// fails leaves "failed/<rank>"; a rank stuck at its deadline leaves "stuck/<rank>" and
// reads what the peers it waits for are doing.
#include "comm/comm_impl.hpp"
#include "comm/rank_list.hpp"
#include "settings/settings.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <thread>

namespace chorus::detail {
namespace {

std::optional<std::string> tryGet(Store& store, const std::string& key, Clock::duration wait) {
  try {
    return storeText(store.get(key, Clock::now() + wait));
  } catch (const Error&) {
    return std::nullopt;
  }
}

constexpr auto kQuickLook = std::chrono::milliseconds(20);
// How long to wait for a failed peer's report: on a loaded host the store's answer alone
// can take longer than a quick look, and then the peer would be named instead of its cause.
constexpr auto kReportLook = std::chrono::milliseconds(300);
constexpr size_t kMostPeers = 8;

// What the link to `peer` says when its host stopped answering `rank`.
std::string cutOffLine(int peer, int rank, const PeerSilence& silent) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f",
                std::chrono::duration<double>(silent.since).count());
  return "rank " + std::to_string(peer) +
         " cannot be reached: " + std::to_string(silent.unanswered) +
         " resends or probes in a row from rank " + std::to_string(rank) +
         " went unanswered, the last answer came " + seconds +
         " s ago (its host is down or cut off from this rank's)";
}

// A rank's "stuck/<rank>" report, as reportWaiting writes it: what it waits in, then one
// line (newline separated) for each awaited peer whose host does not answer it.
struct WaitReport {
  std::vector<int> awaited, cutOff;
  std::string state;
  std::vector<std::string> cutOffLines;  // cutOffLines[i] is about cutOff[i]
};

WaitReport parseWaitReport(const std::string& report) {
  const size_t first = report.find(';');
  const size_t second = first == std::string::npos ? first : report.find(';', first + 1);
  if (second == std::string::npos) return {{}, {}, report, {}};
  WaitReport parsed{rankList(report.substr(0, first)),
                    rankList(report.substr(first + 1, second - first - 1)),
                    "",
                    {}};
  std::vector<std::string> parts;
  for (size_t from = second + 1;;) {
    const size_t end = report.find('\n', from);
    parts.push_back(report.substr(from, end == std::string::npos ? end : end - from));
    if (end == std::string::npos) break;
    from = end + 1;
  }
  parsed.state = parts.front();
  parsed.cutOffLines.assign(parts.begin() + 1, parts.end());
  parsed.cutOffLines.resize(parsed.cutOff.size());
  return parsed;
}

}  // namespace

void CommImpl::reportFailure(const std::string& cause, const std::vector<int>& failedRanks) {
  const std::string report = "rank " + std::to_string(rank_) + ": " + cause;
  // For the launcher first (chorus-run sets CHORUS_REPORT_DIR and prints these when the
  // job fails): the store may be gone with the rank that hosts it.
  if (const char* dir = settings::cstr("CHORUS_REPORT_DIR"); dir && *dir && !reportedToLauncher_) {
    reportedToLauncher_ = true;  // the first failure of this process is the one to show
    const std::string path = std::string(dir) + "/rank-" + std::to_string(launchRank_) + ".txt";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      const std::string line = report + "\n";
      [[maybe_unused]] ssize_t n = ::write(fd, line.data(), line.size());
      ::close(fd);
    }
  }
  // The ranks first (comma separated), so that whoever reads the report finds them.
  const std::string ranks = joinRanks(failedRanks);
  const Deadline by = Clock::now() + kReportBy;
  store_->setBy("failed-ranks/" + std::to_string(rank_), std::as_bytes(std::span(ranks)), by);
  store_->setBy("failed/" + std::to_string(rank_), std::as_bytes(std::span(report)), by);
}

FailureReport CommImpl::reportedFailure(int peer) {
  FailureReport report;
  report.cause = tryGet(*store_, "failed/" + std::to_string(peer), kReportLook).value_or("");
  if (report.cause.empty()) return report;
  const std::string list =
      tryGet(*store_, "failed-ranks/" + std::to_string(peer), kQuickLook).value_or("");
  for (const std::string& item : settings::splitList(list)) {
    const int r = std::atoi(item.c_str());
    if (r >= 0 && r < nranks_) report.failedRanks.push_back(r);
  }
  return report;
}

// What the link to `peer` says where its host stopped answering; empty otherwise, and
// where the connection cannot tell (its own error will).
std::optional<PeerSilence> CommImpl::silentHost(int peer) {
  try {
    if (std::optional<PeerSilence> silent = transport_->silence(peer); silent && silent->cutOff())
      return silent;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

void CommImpl::reportWaiting(const std::string& mine, const std::vector<int>& peers) {
  // "stuck/<rank>" = "<awaited ranks>;<those whose host does not answer>;<what it is in>"
  // (ranks comma separated), so that others can follow the chain of waits to the rank at its
  // end, and name a rank cut off from them as such; empty: waiting no more.
  std::string report;
  if (!mine.empty()) {
    std::vector<int> cutOff;
    std::string lines;
    for (int p : peers) {
      const std::optional<PeerSilence> silent = silentHost(p);
      if (!silent) continue;
      cutOff.push_back(p);
      lines += "\n" + cutOffLine(p, rank_, *silent);
    }
    report = joinRanks(peers) + ";" + joinRanks(cutOff) + ";rank " + std::to_string(rank_) +
             " is in " + mine + lines;
  }
  const std::string key = "stuck/" + std::to_string(rank_);
  const Deadline by = Clock::now() + kReportBy;
  store_->setBy(key, std::as_bytes(std::span(report)), by);
  // Read back: a store that takes writes without answering them (torch's TCPStore sends no
  // reply to a set) may be cut off from this rank, and then the others' reports cannot be
  // read either; throws, so that this rank probes every peer and says nothing is known.
  store_->get(key, by);
}

std::string CommImpl::diagnoseStall(const std::string& mine, const std::vector<int>& peers,
                                    int unreachable) {
  // The store's host may be the one cut off: then only the links can say anything.
  std::string storeSilent;
  try {
    reportWaiting(mine, peers);
  } catch (const Error& e) {
    storeSilent = e.what();
  }
  // Ranks stuck too reach their deadline later by as much as their last progress came after
  // ours (a fault that stops a pipeline stops its ranks a few steps apart): wait for them,
  // or a rank still counting down would be named as one that is not waiting at all.
  const auto until =
      Clock::now() + std::min<Clock::duration>(std::chrono::seconds(5), timeout_ / 2);
  std::vector<bool> seen(nranks_, false), cutOff(nranks_, false);
  seen[rank_] = true;
  if (unreachable >= 0 && unreachable < nranks_) cutOff[unreachable] = true;  // named already
  std::deque<int> queue(peers.begin(), peers.begin() + std::min(peers.size(), kMostPeers));
  std::string summary;
  for (size_t asked = 0; !queue.empty() && asked < 2 * kMostPeers; ++asked) {
    const int peer = queue.front();
    queue.pop_front();
    if (peer < 0 || peer >= nranks_ || seen[peer]) continue;
    seen[peer] = true;
    const std::string r = std::to_string(peer);
    std::optional<std::string> failed, stuck;
    while (storeSilent.empty()) {
      failed = tryGet(*store_, "failed/" + r, kQuickLook);
      if (!failed) stuck = tryGet(*store_, "stuck/" + r, kQuickLook);
      if (stuck && stuck->empty()) {  // it waited, then moved on: look again shortly
        stuck.reset();
        std::this_thread::sleep_for(kQuickLook);
      }
      // A rank whose host is known to be silent will not report later: one look is enough.
      if (failed || stuck || cutOff[peer] || Clock::now() >= until) break;
    }
    if (failed) {
      summary += ". " + *failed;
    } else if (stuck) {
      const WaitReport report = parseWaitReport(*stuck);
      summary += ". " + report.state;
      for (size_t i = 0; i < report.cutOff.size(); ++i) {  // each rank named once
        const int p = report.cutOff[i];
        if (p < 0 || p >= nranks_ || cutOff[p]) continue;
        cutOff[p] = true;
        if (!report.cutOffLines[i].empty()) summary += ". " + report.cutOffLines[i];
      }
      for (int p : report.awaited) queue.push_back(p);  // follow what it waits for
    } else if (cutOff[peer]) {
      // Named already: by this rank's own error, or by the report of a rank that waits on it.
    } else if (const std::optional<PeerSilence> silent = silentHost(peer)) {
      // Its report could not reach the store either, most likely: say what the link says.
      summary += ". " + cutOffLine(peer, rank_, *silent);
      cutOff[peer] = true;
    } else if (storeSilent.empty()) {
      summary += ". rank " + r +
                 " is not waiting in any collective (stopped, busy elsewhere, or not making "
                 "this call)";
    } else {
      summary += ". rank " + r + ": nothing known (no report could be read)";
    }
  }
  if (!storeSilent.empty()) {
    // No report to follow: the links to every other rank say what they can (the engine
    // probes every peer once its own report could not reach the store).
    for (int peer = 0; peer < nranks_; ++peer) {
      if (peer == rank_ || cutOff[peer]) continue;
      if (const std::optional<PeerSilence> silent = silentHost(peer))
        summary += ". " + cutOffLine(peer, rank_, *silent);
    }
    summary += ". No rank's report could be read: " + storeSilent;
  }
  return summary;
}

}  // namespace chorus::detail
