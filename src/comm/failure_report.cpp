// Failures travel through the store, so that the other ranks can say why: a rank that
// fails leaves "failed/<rank>"; a rank stuck at its deadline leaves "stuck/<rank>" and
// reads what the peers it waits for are doing.
#include "comm/comm_impl.hpp"
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
// Resends (200 ms apart at first, doubling) or probes (1 s apart) in a row that went
// unanswered, after which a silent host is named as such: one lost segment is resent once.
constexpr int kUnansweredInARow = 3;

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
  std::string ranks;
  for (int r : failedRanks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
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

void CommImpl::reportWaiting(const std::string& mine, const std::vector<int>& peers) {
  // "stuck/<rank>" = "<awaited ranks, comma separated>;<what it is in>", so that others
  // can follow the chain of waits to the rank at its end; empty: waiting no more.
  std::string report;
  if (!mine.empty()) {
    for (int p : peers) report += (report.empty() ? "" : ",") + std::to_string(p);
    report += ";rank " + std::to_string(rank_) + " is in " + mine;
  }
  store_->setBy("stuck/" + std::to_string(rank_), std::as_bytes(std::span(report)),
                Clock::now() + kReportBy);
}

std::string CommImpl::diagnoseStall(const std::string& mine, const std::vector<int>& peers) {
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
  std::vector<bool> seen(nranks_, false);
  seen[rank_] = true;
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
      if (failed || stuck || Clock::now() >= until) break;
    }
    if (failed) {
      summary += ". " + *failed;
    } else if (stuck) {
      const size_t semi = stuck->find(';');
      summary += ". " + stuck->substr(semi == std::string::npos ? 0 : semi + 1);
      const std::string list = semi == std::string::npos ? "" : stuck->substr(0, semi);
      for (const std::string& item : settings::splitList(list))  // follow what it waits for
        queue.push_back(std::atoi(item.c_str()));
    } else if (const std::optional<PeerSilence> silent = transport_->silence(peer);
               silent && silent->unanswered >= kUnansweredInARow) {
      // Its report could not reach the store either, most likely: say what the link says.
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.1f",
                    std::chrono::duration<double>(silent->since).count());
      summary += ". rank " + r + " cannot be reached: " + std::to_string(silent->unanswered) +
                 " resends or probes in a row from rank " + std::to_string(rank_) +
                 " went unanswered, the last answer came " + seconds +
                 " s ago (its host is down or cut off from this rank's)";
    } else if (storeSilent.empty()) {
      summary += ". rank " + r +
                 " is not waiting in any collective (stopped, busy elsewhere, or not making "
                 "this call)";
    } else {
      summary += ". rank " + r + ": nothing known (no report could be read)";
    }
  }
  if (!storeSilent.empty()) summary += ". No rank's report could be read: " + storeSilent;
  return summary;
}

}  // namespace chorus::detail
