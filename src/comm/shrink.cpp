// Shrinking a communicator to the ranks not excluded, and the survivors' agreement on who
// those are. When two ranks die at once, their deaths reach the survivors apart: one may
// call shrink({3}) while another calls shrink({3, 4}). Creating communicators of different
// member lists under one key prefix would hang every survivor until the timeout, so the
// survivors first agree, through the store, on the union of their lists and of the deaths
// the store has seen among the members; a disagreement that remains is an error at once.
// Keys, under the new communicator's prefix (every survivor took part in the same
// derivations of this communicator, so the prefix agrees):
//   exclude/arrived        counter: proposals so far; proposal k is "exclude/<k>"
//   exclude/<k>            "<job rank>:<excluded job ranks, comma-separated>"
//   exclude/agreed/<job>   the excluded job ranks that survivor settled on
#include "comm/comm_impl.hpp"
#include "comm/rank_list.hpp"
#include "errors.hpp"
#include "log.hpp"
#include "settings/settings.hpp"

#include <algorithm>
#include <set>
#include <thread>

namespace chorus::detail {
std::shared_ptr<CommImpl> CommImpl::shrink(std::span<const int> exclude) {
  std::vector<bool> out(nranks_, false);
  for (int r : exclude) {
    if (r < 0 || r >= nranks_)
      throwInvalid("shrink: rank " + std::to_string(r) + " out of range [0, " +
                   std::to_string(nranks_) + ")");
    if (out[r]) throwInvalid("shrink: rank " + std::to_string(r) + " listed twice");
    out[r] = true;
  }
  if (out[rank_]) throwInvalid("shrink: this rank (" + std::to_string(rank_) + ") is excluded");
  if (externalStore_)
    throw Error(Result::InvalidUsage,
                "shrink: this communicator was created on the caller's store (createOnStore); "
                "create a new one on a new store instead");
  // Members by their store identity (job rank); this process's own.
  auto jobOf = [&](int r) { return parentRanks_.empty() ? r : parentRanks_[r]; };
  const int self = jobOf(rank_);
  std::set<int> proposal;
  for (int r = 0; r < nranks_; ++r)
    if (out[r]) proposal.insert(jobOf(r));
  // Every member has shrunk (or grown) this communicator as often: the prefix agrees.
  Parent parent{
      {}, hostedStore_, claim_, prefix_ + "s" + std::to_string(children_++) + "/", jobSize_};
  const std::set<int> excluded = agreeOnExcluded(parent.prefix, self, std::move(proposal));
  for (int r = 0; r < nranks_; ++r)
    if (!excluded.count(jobOf(r))) parent.ranks.push_back(jobOf(r));
  const int rank = static_cast<int>(std::find(parent.ranks.begin(), parent.ranks.end(), self) -
                                    parent.ranks.begin());
  logf(LogLevel::Info, "rank %d: shrinking %d ranks to %zu (now rank %d; excluded job ranks %s)",
       rank_, nranks_, parent.ranks.size(), rank, joinRanks(excluded).c_str());
  return create(rank, static_cast<int>(parent.ranks.size()), rendezvous_, false, options_, &parent);
}

std::set<int> CommImpl::agreeOnExcluded(const std::string& prefix, int self,
                                        std::set<int> excluded) {
  Store& store = *storeClient_;
  const Deadline deadline = Clock::now() + timeout_;
  std::set<int> members;
  for (int r = 0; r < nranks_; ++r) members.insert(parentRanks_.empty() ? r : parentRanks_[r]);
  store.set(prefix + "exclude/" + std::to_string(store.add(prefix + "exclude/arrived", 1)),
            storeBytes(std::to_string(self) + ":" + joinRanks(excluded)));
  // Read proposals and deaths until every member not excluded has proposed.
  std::set<int> proposed;
  int64_t read = 0;
  for (;;) {
    const int64_t arrived = store.add(prefix + "exclude/arrived", 0);
    for (; read < arrived; ++read) {
      const std::string text =
          storeText(store.get(prefix + "exclude/" + std::to_string(read + 1), deadline));
      const size_t colon = text.find(':');
      proposed.insert(std::stoi(text.substr(0, colon)));
      for (int r : rankList(text.substr(colon + 1))) excluded.insert(r);
    }
    for (int dead : storeClient_->deadRanks())
      if (members.count(dead)) excluded.insert(dead);
    std::set<int> waiting;
    for (int m : members)
      if (!excluded.count(m) && !proposed.count(m)) waiting.insert(m);
    if (waiting.empty()) break;
    if (Clock::now() > deadline)
      throw Error(Result::Timeout, "shrink: job ranks " + joinRanks(waiting) +
                                       " neither called shrink nor were reported dead within " +
                                       std::to_string(timeout_.count()) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (excluded.count(self)) {
    store.set(prefix + "exclude/agreed/" + std::to_string(self), storeBytes(joinRanks(excluded)));
    throwInvalid("shrink: another survivor excluded this rank (job rank " + std::to_string(self) +
                 "; excluded: " + joinRanks(excluded) + ")");
  }
  // Deaths seen by some survivors only after others settled could still split them: every
  // survivor checks the others' result (all of them proposed, so all will write one).
  store.set(prefix + "exclude/agreed/" + std::to_string(self), storeBytes(joinRanks(excluded)));
  for (int m : members) {
    if (excluded.count(m) || m == self) continue;
    const std::string theirs =
        storeText(store.get(prefix + "exclude/agreed/" + std::to_string(m), deadline));
    if (theirs != joinRanks(excluded))
      throwInvalid("shrink: the survivors disagree on whom to exclude: job rank " +
                   std::to_string(m) + " settled on {" + theirs + "}, this one (job rank " +
                   std::to_string(self) + ") on {" + joinRanks(excluded) +
                   "}; call shrink again with the union");
  }
  return excluded;
}

}  // namespace chorus::detail
