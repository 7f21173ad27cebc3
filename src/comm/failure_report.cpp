// Failures travel through the store, so that the other ranks can say why: a rank that
// fails leaves "failed/<rank>"; a rank stuck at its deadline leaves "stuck/<rank>" and
// reads what the peers it waits for are doing.
#include "comm/comm_impl.hpp"

#include <algorithm>

namespace chorus::detail {
namespace {

std::string text(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::optional<std::string> tryGet(Store& store, const std::string& key, Clock::duration wait) {
  try {
    return text(store.get(key, Clock::now() + wait));
  } catch (const Error&) {
    return std::nullopt;
  }
}

constexpr auto kQuickLook = std::chrono::milliseconds(20);
constexpr size_t kMostPeers = 8;

}  // namespace

void CommImpl::reportFailure(const std::string& cause) {
  const std::string report = "rank " + std::to_string(rank_) + ": " + cause;
  store_->set("failed/" + std::to_string(rank_), std::as_bytes(std::span(report)));
}

std::string CommImpl::reportedFailure(int peer) {
  return tryGet(*store_, "failed/" + std::to_string(peer), kQuickLook).value_or("");
}

std::string CommImpl::diagnoseStall(const std::string& mine, const std::vector<int>& peers) {
  const std::string report = "rank " + std::to_string(rank_) + " is in " + mine;
  store_->set("stuck/" + std::to_string(rank_), std::as_bytes(std::span(report)));
  // Peers stuck too reach their deadline at about the same time: wait a little for them.
  const auto until =
      Clock::now() + std::min<Clock::duration>(std::chrono::seconds(2), timeout_ / 4);
  std::vector<int> asked(peers.begin(), peers.begin() + std::min(peers.size(), kMostPeers));
  std::vector<std::string> answers(asked.size());
  for (bool first = true; first || Clock::now() < until; first = false) {
    bool missing = false;
    for (size_t i = 0; i < asked.size(); ++i) {
      if (!answers[i].empty()) continue;
      const std::string r = std::to_string(asked[i]);
      if (auto failed = tryGet(*store_, "failed/" + r, kQuickLook))
        answers[i] = *failed;
      else if (auto stuck = tryGet(*store_, "stuck/" + r, kQuickLook))
        answers[i] = *stuck;
      missing |= answers[i].empty();
    }
    if (!missing) break;
  }
  std::string summary;
  for (size_t i = 0; i < asked.size(); ++i)
    summary += ". " + (answers[i].empty()
                           ? "rank " + std::to_string(asked[i]) +
                                 " is not waiting in any collective (it may not have made this "
                                 "call yet)"
                           : answers[i]);
  return summary;
}

}  // namespace chorus::detail
