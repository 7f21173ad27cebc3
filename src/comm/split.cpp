// Communicator::split (ncclCommSplit): the ranks that pass one color form a new
// communicator on the parent's store.
#include "comm/comm_impl.hpp"
#include "errors.hpp"
#include "log.hpp"

#include <algorithm>

namespace chorus::detail {

std::shared_ptr<CommImpl> CommImpl::split(int color, int key) {
  if (color < 0 && color != NoColor)
    throwInvalid("split: color " + std::to_string(color) + " is negative (NoColor is " +
                 std::to_string(NoColor) + ")");
  if (groupDepth() > 0) throw Error(Result::InvalidUsage, "split: not allowed inside a group");
  if (externalStore_)
    throw Error(Result::InvalidUsage,
                "split: this communicator was created on the caller's store (createOnStore); "
                "create a new one on a new store instead");
  // Every rank learns every (color, key) over this communicator's own connections.
  const uint64_t round = splits_++;
  const int64_t mine[2] = {color, key};
  std::vector<int64_t> all(2 * static_cast<size_t>(nranks_));
  submit({Collective::AllGather, mine, all.data(), 2, DataType::Int64, RedOp::Sum, 0}).wait();
  if (color == NoColor) return nullptr;

  std::vector<int> members;  // in this communicator's numbering, by key then rank
  for (int r = 0; r < nranks_; ++r)
    if (all[2 * r] == color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  const int rank =
      static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  // Children name their store keys after the parent's, the split and the color, so that
  // every color's ranks meet only each other and later splits never collide.
  Parent parent{{},
                hostedStore_,
                prefix_ + "split" + std::to_string(round) + "/" + std::to_string(color) + "/"};
  for (int r : members)  // the store knows processes by their first communicator's ranks
    parent.ranks.push_back(parentRanks_.empty() ? r : parentRanks_[r]);
  logf(LogLevel::Info, "rank %d: split color %d key %d: rank %d of %zu", rank_, color, key, rank,
       members.size());
  return create(rank, static_cast<int>(members.size()), rendezvous_, false, options_, &parent);
}

}  // namespace chorus::detail
