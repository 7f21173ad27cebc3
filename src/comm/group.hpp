// Group calls (groupStart/groupEnd): the calls a thread makes inside a group are queued
// here and launched together at the outermost groupEnd.
#pragma once

#include "clock.hpp"
#include "engine/op_state.hpp"

#include <memory>
#include <vector>

namespace chorus::detail {

class CommImpl;

struct GroupState {
  struct Call {
    std::shared_ptr<CommImpl> comm;
    std::shared_ptr<OpState> op;
  };
  enum class Stage { Open, Launched, Dropped };
  std::vector<Call> calls;
  Stage stage = Stage::Open;
};

// The group open on this thread, or null.
std::shared_ptr<GroupState> openGroup();
// Closes every level of this thread's group without launching it: its calls fail with
// InvalidUsage (an exception left the group).
void dropGroup(const std::string& why);
// Drives every communicator of `group` until `only` (or, when null, every call of the
// group) is done (true) or `deadline` passes (false). Throws the first failure.
bool waitGroup(GroupState& group, OpState* only, Deadline deadline);
// One pass over every communicator of the group; true when `only` (or all) is done.
bool testGroup(GroupState& group, OpState* only);

}  // namespace chorus::detail
