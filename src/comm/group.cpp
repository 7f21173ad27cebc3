// Group calls: queue per thread, launch together, wait over every communicator involved.
#include "comm/group.hpp"

#include "comm/comm_impl.hpp"

#include <algorithm>
#include <thread>

namespace chorus {
namespace detail {
namespace {

thread_local int depth = 0;
thread_local std::shared_ptr<GroupState> current;

bool isPointToPoint(const OpState& op) {
  return op.collective == Collective::Send || op.collective == Collective::Recv;
}

// The distinct communicators of a group, in order of first call.
std::vector<CommImpl*> commsOf(const GroupState& group) {
  std::vector<CommImpl*> comms;
  for (const auto& call : group.calls)
    if (std::find(comms.begin(), comms.end(), call.comm.get()) == comms.end())
      comms.push_back(call.comm.get());
  return comms;
}

void requireLaunched(const GroupState& group) {
  if (group.stage == GroupState::Stage::Open)
    throw Error(Result::InvalidUsage,
                "wait or test on a call inside a group: its calls start at groupEnd()");
}

// Done when every target is; throws the first failure among them.
bool targetsDone(const GroupState& group, OpState* only) {
  bool all = true;
  for (const auto& call : group.calls) {
    OpState& op = *call.op;
    if (only && &op != only) continue;
    if (op.done && op.error != Result::Success) throw Error(op.error, op.message);
    all &= op.done;
  }
  return all;
}

}  // namespace

std::shared_ptr<GroupState> openGroup() { return depth > 0 ? current : nullptr; }

void dropGroup(const std::string& why) {
  if (depth == 0) return;
  for (auto& call : current->calls) {
    call.op->done = true;
    call.op->error = Result::InvalidUsage;
    call.op->message = "rank " + std::to_string(call.comm->rank()) + ": " + call.op->describe() +
                       " never started: " + why;
  }
  current->stage = GroupState::Stage::Dropped;
  current.reset();
  depth = 0;
}

bool testGroup(GroupState& group, OpState* only) {
  requireLaunched(group);
  if (targetsDone(group, only)) return true;
  for (CommImpl* comm : commsOf(group)) comm->engine().poll();
  return targetsDone(group, only);
}

bool waitGroup(GroupState& group, OpState* only, Deadline deadline) {
  requireLaunched(group);
  const std::vector<CommImpl*> comms = commsOf(group);
  if (comms.size() == 1) {
    // One engine drives all its ops whichever one it waits for: wait for each in turn.
    for (const auto& call : group.calls)
      if ((!only || call.op.get() == only) && !comms[0]->engine().waitFor(*call.op, deadline))
        return false;
    return true;
  }
  // Several engines (ranks of this process, or several communicators): poll them all in
  // turn; each poll keeps its own stall deadline and peer checks, so this cannot hang.
  constexpr auto kSpin = std::chrono::microseconds(50);
  auto idleSince = Clock::now();
  while (!targetsDone(group, only)) {
    bool moved = false;
    for (CommImpl* comm : comms) moved |= comm->engine().poll();
    const auto now = Clock::now();
    if (moved) {
      idleSince = now;
      continue;
    }
    if (now >= deadline) return targetsDone(group, only);
    if (now - idleSince < kSpin)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}

}  // namespace detail

void groupStart() {
  if (detail::depth++ == 0) detail::current = std::make_shared<detail::GroupState>();
}

int groupDepth() { return detail::depth; }

Work groupEnd() {
  using detail::GroupState;
  if (detail::depth == 0) throw Error(Result::InvalidUsage, "groupEnd() without groupStart()");
  std::shared_ptr<GroupState> group = detail::current;
  if (--detail::depth > 0) return Work(nullptr, nullptr, group);
  detail::current.reset();
  // Collectives first, then sends and receives, each in issue order per communicator: the
  // ranks then only need to agree on each of the two orders, as in NCCL.
  std::stable_partition(group->calls.begin(), group->calls.end(),
                        [](const GroupState::Call& c) { return !detail::isPointToPoint(*c.op); });
  group->stage = GroupState::Stage::Launched;
  for (auto& call : group->calls) call.comm->launch(call.op);
  return Work(nullptr, nullptr, group);
}

Group::Group() { groupStart(); }

Group::~Group() {
  if (open_) detail::dropGroup("the Group was destroyed without end()");
}

Work Group::end() {
  if (!open_) throw Error(Result::InvalidUsage, "Group::end() called twice");
  open_ = false;
  return groupEnd();
}

Work group(const std::function<void()>& calls) {
  groupStart();
  try {
    calls();
  } catch (const std::exception& e) {
    detail::dropGroup(std::string("an exception left the group: ") + e.what());
    throw;
  } catch (...) {
    detail::dropGroup("an exception left the group");
    throw;
  }
  return groupEnd();
}

}  // namespace chorus
