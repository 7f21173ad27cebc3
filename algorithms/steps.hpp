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
inline int recv(Schedule& s, int peer, Range dst, int after = -1) {
  s.steps.push_back({StepKind::Recv, peer, {}, dst, after, false});
  return static_cast<int>(s.steps.size()) - 1;
}
inline int recvReduce(Schedule& s, int peer, Range local, Range dst, bool finalize,
                      int after = -1) {
  s.steps.push_back({StepKind::RecvReduce, peer, local, dst, after, finalize});
  return static_cast<int>(s.steps.size()) - 1;
}
inline int copy(Schedule& s, Range src, Range dst, bool finalize = false, int after = -1) {
  s.steps.push_back({StepKind::Copy, -1, src, dst, after, finalize});
  return static_cast<int>(s.steps.size()) - 1;
}

inline int reduce(Schedule& s, Range src, Range dst, bool finalize, int after) {
  s.steps.push_back({StepKind::Reduce, -1, src, dst, after, finalize});
  return static_cast<int>(s.steps.size()) - 1;
}

}  // namespace chorus::steps
