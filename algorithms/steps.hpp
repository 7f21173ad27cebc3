// Short constructors for schedule steps, so each algorithm reads like its description.
#pragma once

#include "algorithms/schedule.hpp"

namespace chorus::steps {

inline Range in(size_t offset, size_t count) { return {Buffer::Input, offset, count}; }
inline Range out(size_t offset, size_t count) { return {Buffer::Output, offset, count}; }
inline Range scratch(size_t offset, size_t count) { return {Buffer::Scratch, offset, count}; }

// Appends a step and returns its index (for `after`).
inline int send(Schedule& s, int peer, Range src, int after = -1) {
  s.steps.push_back({StepKind::Send, peer, src, {}, after, false});
  return static_cast<int>(s.steps.size()) - 1;
}
inline int recv(Schedule& s, int peer, Range dst) {
  s.steps.push_back({StepKind::Recv, peer, {}, dst, -1, false});
  return static_cast<int>(s.steps.size()) - 1;
}
inline int recvReduce(Schedule& s, int peer, Range local, Range dst, bool finalize) {
  s.steps.push_back({StepKind::RecvReduce, peer, local, dst, -1, finalize});
  return static_cast<int>(s.steps.size()) - 1;
}
inline int copy(Schedule& s, Range src, Range dst, bool finalize = false) {
  s.steps.push_back({StepKind::Copy, -1, src, dst, -1, finalize});
  return static_cast<int>(s.steps.size()) - 1;
}

}  // namespace chorus::steps
