// Growing a communicator back: replacement processes join() through the store and the
// members grow() to admit them. The store keys, shared by the whole job (outside every
// communicator's prefix):
//   grow/arrivals          counter: join() calls so far; the n-th newcomer is arrival n
//   grow/arrival/<n>       "<identity>,<launch rank>" of arrival n (set by the newcomer)
//   grow/admitted          counter: arrivals taken by a grow() so far
//   grow/generation        counter: grows so far; generation g names the new communicator
//   grow/plan/<g>          "<identity>:<launch rank>,..." the members of generation g in rank
//                          order, or "error:<why>" when the grow failed
//   grow/ticket/<n>        the generation that admitted arrival n
//   join/epoch/<rank>      counter: the newest epoch of launch rank <rank> that joined
// The members learn g through their own communicator's prefix ("grow/<child>"), where the
// member of rank 0, which takes the arrivals and writes the plan, leaves it.
//
// A replacement's store identity is epoch x launch size + launch rank: the store gives an
// identity to one process only, so two replacements of the same epoch cannot both join,
// and a process of an older epoch (one thought dead that comes back) is refused by the
// epoch counter. Its death is then reported under that identity.
#include "comm/comm_impl.hpp"
#include "errors.hpp"
#include "log.hpp"
#include "settings/settings.hpp"

#include <algorithm>
#include <climits>

namespace chorus::detail {
namespace {

struct Member {
  int identity;
  int launchRank;
};

std::vector<Member> parsePlan(const std::string& plan) {
  if (plan.starts_with("error:")) throw Error(Result::RemoteError, plan.substr(6));
  std::vector<Member> members;
  for (const std::string& item : settings::splitList(plan)) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) throw Error(Result::InternalError, "grow: bad plan " + plan);
    members.push_back({std::stoi(item.substr(0, colon)), std::stoi(item.substr(colon + 1))});
  }
  return members;
}

std::string seconds(std::chrono::milliseconds t) {
  return std::to_string(std::chrono::duration<double>(t).count()).substr(0, 5) + " s";
}

}  // namespace

int CommImpl::pendingJoins() {
  if (!storeClient_) return 0;
  return static_cast<int>(storeClient_->add("grow/arrivals", 0) -
                          storeClient_->add("grow/admitted", 0));
}

std::shared_ptr<CommImpl> CommImpl::grow(int newcomers) {
  if (newcomers < 1) throwInvalid("grow: newcomers must be >= 1, got " + std::to_string(newcomers));
  if (!storeClient_)
    throw Error(Result::InvalidUsage,
                "grow: this communicator was created on the caller's store (createOnStore); "
                "create a new one instead");
  Store& job = *storeClient_;
  const Deadline deadline = Clock::now() + timeout_;
  const std::string mine = "grow/" + std::to_string(children_++);
  std::string plan;
  if (rank_ == 0) {
    // Members first, by identity; then the arrivals this grow takes, in arrival order.
    std::vector<Member> members;
    for (int r = 0; r < nranks_; ++r) {
      const int id = parentRanks_.empty() ? r : parentRanks_[r];
      members.push_back({id, id % jobSize_});
    }
    const int64_t generation = job.add("grow/generation", 1);
    const int64_t first = job.add("grow/admitted", newcomers) - newcomers;
    std::vector<int64_t> arrivals;
    try {
      for (int64_t n = first + 1; n <= first + newcomers; ++n) {
        std::string arrival;
        try {
          arrival = storeText(job.get("grow/arrival/" + std::to_string(n), deadline));
        } catch (const Error& e) {
          if (e.code() != Result::Timeout) throw;
          throw Error(Result::Timeout,
                      "grow: waited " + seconds(timeout_) + " (CHORUS_TIMEOUT) for newcomer " +
                          std::to_string(n - first) + " of " + std::to_string(newcomers) +
                          "; none called join (Communicator::joinFromEnv, chorus-run --respawn)");
        }
        const size_t comma = arrival.find(',');
        const Member m{std::stoi(arrival.substr(0, comma)), std::stoi(arrival.substr(comma + 1))};
        for (const Member& other : members)
          if (other.launchRank == m.launchRank)
            throw Error(Result::InvalidUsage,
                        "grow: a newcomer claims launch rank " + std::to_string(m.launchRank) +
                            ", which a member of this communicator still holds (a stale process "
                            "of that rank may not join twice)");
        members.push_back(m);
        arrivals.push_back(n);
      }
      std::stable_sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
        return a.launchRank < b.launchRank;
      });
      for (const Member& m : members)
        plan += (plan.empty() ? "" : ",") + std::to_string(m.identity) + ":" +
                std::to_string(m.launchRank);
    } catch (const Error& e) {
      plan = "error:rank 0 of the growing communicator failed: " + std::string(e.what());
      job.set("grow/plan/" + std::to_string(generation), storeBytes(plan));
      for (int64_t n = first + 1; n <= first + newcomers; ++n)
        job.set("grow/ticket/" + std::to_string(n), storeBytes(std::to_string(generation)));
      store_->set(mine, storeBytes(std::to_string(generation)));
      throw;
    }
    job.set("grow/plan/" + std::to_string(generation), storeBytes(plan));
    for (int64_t n : arrivals)
      job.set("grow/ticket/" + std::to_string(n), storeBytes(std::to_string(generation)));
    store_->set(mine, storeBytes(std::to_string(generation)));
    plan = std::to_string(generation);
  } else {
    plan = storeText(store_->get(mine, deadline));
  }
  const std::string generation = plan;
  const std::vector<Member> members =
      parsePlan(storeText(job.get("grow/plan/" + generation, deadline)));
  const int self = parentRanks_.empty() ? rank_ : parentRanks_[rank_];
  Parent parent{{}, hostedStore_, claim_, "grow" + generation + "/", jobSize_};
  int rank = -1;
  for (const Member& m : members) {
    if (m.identity == self) rank = static_cast<int>(parent.ranks.size());
    parent.ranks.push_back(m.identity);
  }
  logf(LogLevel::Info, "rank %d: growing %d ranks to %zu (generation %s, now rank %d)", rank_,
       nranks_, members.size(), generation.c_str(), rank);
  return create(rank, static_cast<int>(members.size()), rendezvous_, false, options_, &parent);
}

std::shared_ptr<CommImpl> CommImpl::join(const Rendezvous& rendezvous, int jobRank, int jobSize,
                                         int epoch, const Options& options) {
  if (jobSize < 1 || jobRank < 0 || jobRank >= jobSize)
    throwInvalid("join: launch rank " + std::to_string(jobRank) + " out of range [0, " +
                 std::to_string(jobSize) + ")");
  if (epoch < 1 || epoch > (INT_MAX - jobRank) / jobSize)
    throwInvalid("join: epoch " + std::to_string(epoch) + " out of range (>= 1)");
  const std::chrono::milliseconds timeout = timeoutFor(options);
  const Deadline deadline = Clock::now() + timeout;
  const int identity = epoch * jobSize + jobRank;
  const std::string who =
      "join: launch rank " + std::to_string(jobRank) + ", epoch " + std::to_string(epoch);
  std::shared_ptr<TcpStoreClient> claim;
  try {
    claim =
        std::make_shared<TcpStoreClient>(rendezvous.store, rendezvous.secret, identity, deadline);
  } catch (const Error& e) {
    throw Error(e.code(), who + ": " + e.what());
  }
  const std::string epochKey = "join/epoch/" + std::to_string(jobRank);
  const int64_t newest = claim->add(epochKey, 0);
  if (epoch <= newest)
    throw Error(Result::InvalidUsage, who + " is stale: epoch " + std::to_string(newest) +
                                          " of that rank has joined already");
  claim->add(epochKey, epoch - newest);
  const int64_t arrival = claim->add("grow/arrivals", 1);
  const std::string me = std::to_string(identity) + "," + std::to_string(jobRank);
  claim->set("grow/arrival/" + std::to_string(arrival), storeBytes(me));
  std::string generation;
  try {
    generation = storeText(claim->get("grow/ticket/" + std::to_string(arrival), deadline));
  } catch (const Error& e) {
    if (e.code() != Result::Timeout) throw;
    throw Error(Result::Timeout, who + ": no communicator admitted it within " + seconds(timeout) +
                                     " (CHORUS_TIMEOUT): its members must call grow()");
  }
  const std::vector<Member> members =
      parsePlan(storeText(claim->get("grow/plan/" + generation, deadline)));
  Parent parent{{}, nullptr, claim, "grow" + generation + "/", jobSize};
  int rank = -1;
  for (const Member& m : members) {
    if (m.identity == identity) rank = static_cast<int>(parent.ranks.size());
    parent.ranks.push_back(m.identity);
  }
  if (rank < 0) throw Error(Result::InternalError, who + ": admitted but not in the plan");
  logf(LogLevel::Info, "launch rank %d (epoch %d) joins generation %s as rank %d of %zu", jobRank,
       epoch, generation.c_str(), rank, members.size());
  return create(rank, static_cast<int>(members.size()), rendezvous, false, options, &parent);
}

}  // namespace chorus::detail
