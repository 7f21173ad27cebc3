// Launching calls, and NCCL's group semantics on top of Chorus Works.
//
// NCCL's calls are queued here (their arguments resolved: pre-multiplied sums scaled,
// gather/scatter cut into sends and receives) and replayed at the outermost ncclGroupEnd
// inside a Chorus group (chorus::Group), which launches them together: send/recv pairs to
// any set of peers cannot deadlock, and calls on several communicators of one thread
// (ncclCommInitAll) progress together.
#include "nccl/nccl_comm.hpp"

#include <chrono>
#include <map>
#include <memory>

namespace chorus::nccl {
namespace {

struct QueuedCall {
  ncclComm_t comm;
  const char* what;
  Launch launch;
};

struct GroupState {
  int depth = 0;
  std::vector<QueuedCall> calls;
  std::vector<std::function<ncclResult_t()>> inits;
  std::vector<ncclComm_t*> created;
};
thread_local GroupState group;

// Submits one call; its InFlight goes to `out`.
ncclResult_t launchOne(ncclComm_t comm, const char* what, const Launch& launch,
                       std::vector<InFlight>& out) {
  InFlight f;
  f.comm = comm;
  ncclResult_t r = guarded(comm, what, [&] {
    comm->ready();
    launch(f);
  });
  out.push_back(std::move(f));
  return r;
}

// Blocking communicators: drive to the end. Non-blocking ones: one look, the rest is
// left pending for ncclCommGetAsyncError. ncclInProgress if anything is left.
ncclResult_t finish(std::vector<InFlight>& calls, const char* what) {
  std::vector<InFlight> blocking;
  ncclResult_t result = ncclSuccess;
  for (auto& f : calls) {
    if (f.comm->blocking) {
      blocking.push_back(std::move(f));
      continue;
    }
    bool done = true;
    ncclResult_t r = guarded(f.comm, what, [&] {
      for (auto& w : f.works) done = w.test() && done;
    });
    if (r != ncclSuccess) return r;
    if (!done) {
      f.comm->pending.push_back(std::move(f));
      result = ncclInProgress;
    }
  }
  if (blocking.empty()) return result;
  ncclResult_t r = guarded(blocking.front().comm, what, [&] { complete(blocking); });
  return r != ncclSuccess ? r : result;
}

}  // namespace

bool inGroup() { return group.depth > 0; }

void complete(std::vector<InFlight>& calls) {
  bool oneComm = true;
  for (auto& f : calls) oneComm = oneComm && f.comm == calls.front().comm;
  if (oneComm) {  // a wait drives every op of its communicator, so in order is enough
    for (auto& f : calls)
      for (auto& w : f.works) w.wait();
    return;
  }
  // Several communicators: round-robin. Every test() polls its engine, which fails a
  // stalled op at the communicator's timeout, so this loop cannot spin forever.
  std::vector<Work*> left;
  for (auto& f : calls)
    for (auto& w : f.works) left.push_back(&w);
  int idle = 0;
  while (!left.empty()) {
    bool finished = false;
    for (size_t i = 0; i < left.size();) {
      if (left[i]->test()) {
        left.erase(left.begin() + static_cast<std::ptrdiff_t>(i));
        finished = true;
      } else {
        ++i;
      }
    }
    idle = finished ? 0 : idle + 1;
    if (idle > 64)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    else if (idle > 0)
      std::this_thread::yield();
  }
}

ncclResult_t enqueue(ncclComm_t comm, const char* what, Launch launch) {
  if (group.depth > 0) {
    group.calls.push_back({comm, what, std::move(launch)});
    return ncclSuccess;
  }
  std::vector<InFlight> calls;
  if (ncclResult_t r = launchOne(comm, what, launch, calls); r != ncclSuccess) return r;
  return finish(calls, what);
}

void enqueueInit(ncclComm_t* out, std::function<ncclResult_t()> init) {
  group.inits.push_back(std::move(init));
  group.created.push_back(out);
}

void formClique(ncclComm_t* comms, size_t count) {
  auto clique = std::make_shared<Clique>();
  clique->members = count;
  for (size_t i = 0; i < count; ++i) comms[i]->clique = clique;
}

}  // namespace chorus::nccl

using namespace chorus::nccl;

NCCL_API(ncclResult_t, ncclGroupStart, void) {
  ++group.depth;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd, void) {
  if (group.depth == 0)
    return setError(nullptr, ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart to end");
  if (--group.depth > 0) return ncclSuccess;
  auto calls = std::move(group.calls);
  auto inits = std::move(group.inits);
  auto created = std::move(group.created);
  group = GroupState{};
  if (!calls.empty() && !inits.empty())
    return setError(nullptr, ncclInvalidUsage,
                    "ncclGroupEnd: communicator creation and collectives in one group (NCCL "
                    "allows either, not both); nothing of the group was run");
  if (!inits.empty()) {
    // Each creation waits for its peers: run them side by side.
    std::vector<ncclResult_t> results(inits.size(), ncclSuccess);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < inits.size(); ++i)
      threads.emplace_back([&, i] { results[i] = inits[i](); });
    for (auto& t : threads) t.join();
    for (ncclResult_t r : results)
      if (r != ncclSuccess) return r;
    if (created.size() > 1) {  // ranks of one clique in this process
      std::vector<ncclComm_t> comms;
      for (ncclComm_t* c : created) comms.push_back(*c);
      formClique(comms.data(), comms.size());
    }
    return ncclSuccess;
  }
  if (calls.empty()) return ncclSuccess;
  // Inside a call on each of the group's communicators until the group is done: an abort
  // from another thread (a watchdog's) waits for this wait to leave before freeing one.
  std::vector<std::unique_ptr<CallScope>> scopes;
  for (auto& c : calls) {
    bool seen = false;
    for (auto& d : calls) {
      if (&d == &c) break;
      seen = seen || d.comm == c.comm;
    }
    if (!seen) scopes.push_back(std::make_unique<CallScope>(c.comm));
  }
  // Chorus's own group: at its end each communicator launches the group's collectives in
  // issue order, then its sends and receives, and one Work covers them all.
  std::vector<InFlight> launched;
  InFlight whole;
  {
    chorus::Group chorusGroup;
    for (auto& c : calls) {
      if (ncclResult_t r = launchOne(c.comm, c.what, c.launch, launched); r != ncclSuccess)
        return r;  // the Group drops every queued call unstarted
    }
    ncclResult_t r = guarded(calls.front().comm, "ncclGroupEnd",
                             [&] { whole.works.push_back(chorusGroup.end()); });
    if (r != ncclSuccess) return r;
  }
  for (auto& f : launched)
    for (auto& s : f.scratch) whole.scratch.push_back(std::move(s));
  whole.comm = calls.front().comm;
  for (auto& c : calls)
    if (!c.comm->blocking) whole.comm = c.comm;  // a non-blocking one keeps it pending
  std::vector<InFlight> one;
  one.push_back(std::move(whole));
  return finish(one, "ncclGroupEnd");
}

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  if (group.depth == 0)
    return setError(nullptr, ncclInvalidUsage, "ncclGroupSimulateEnd: no ncclGroupStart to end");
  if (--group.depth > 0) return ncclSuccess;
  group = GroupState{};
  if (simInfo && simInfo->size >= sizeof(ncclSimInfo_t)) simInfo->estimatedTime = NCCL_UNDEF_FLOAT;
  return setError(nullptr, ncclInvalidUsage,
                  "ncclGroupSimulateEnd: Chorus gives no time estimate for a group (its cost "
                  "model is not exposed through this call); the group's calls were dropped, "
                  "not run");
}
