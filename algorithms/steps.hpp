// Short constructors for schedule steps, so each algorithm reads like its description.
#pragma once

#include "algorithms/schedule.hpp"

#include <algorithm>

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

// One-sided steps (schedule.hpp): `given` is ready for `peer` to read in place; an empty
// range makes it a signal ("done with what you exposed", "wait until I am done").
inline int expose(Schedule& s, int peer, Range given, int after = -1) {
  s.steps.push_back({StepKind::Expose, peer, given, {}, after, false});
  return static_cast<int>(s.steps.size()) - 1;
}
inline int peerRead(Schedule& s, int peer, Range dst, int after = -1) {
  s.steps.push_back({StepKind::PeerRead, peer, {}, dst, after, false});
  return static_cast<int>(s.steps.size()) - 1;
}
inline int peerReduce(Schedule& s, int peer, Range local, Range dst, bool finalize,
                      int after = -1) {
  s.steps.push_back({StepKind::PeerReduce, peer, local, dst, after, finalize});
  return static_cast<int>(s.steps.size()) - 1;
}

inline int peerWrite(Schedule& s, int peer, Range src, int after = -1) {
  s.steps.push_back({StepKind::PeerWrite, peer, src, {}, after, false});
  return static_cast<int>(s.steps.size()) - 1;
}

// Rank parts cut into rounds (peer_staged, peer_push): every part of `count` elements over
// `nranks` into the same number of chunks of at most `chunkElements` (at least one round),
// so that round j of every rank's part is one step of each peer's.
struct Rounds {
  size_t count;
  int nranks;
  size_t rounds;
  Rounds(size_t count, int nranks, size_t chunkElements)
      : count(count),
        nranks(nranks),
        rounds(std::max<size_t>(
            1, (partOf(count, nranks, 0).size + chunkElements - 1) / chunkElements)) {}
  size_t largestChunk() const { return (partOf(count, nranks, 0).size + rounds - 1) / rounds; }
  // Round j's chunk of the part of rank `index` (wrapped).
  Part chunkOf(int index, size_t j) const {
    const Part p = partOf(count, nranks, wrapRank(index, nranks));
    const Part q = partOf(p.size, static_cast<int>(rounds), static_cast<int>(j));
    return Part{p.begin + q.begin, q.size};
  }
};

// What every reducing algorithm does first: no steps for count 0, and on one rank the
// result is the input, copied and finalized. True when that is the whole schedule.
inline bool emptyOrSingleRank(Schedule& s, int nranks, size_t count) {
  if (count == 0) return true;
  if (nranks > 1) return false;
  copy(s, in(0, count), out(0, count), /*finalize=*/true);
  return true;
}

// Marks step `index`'s wait on its `after` (a Send) as a guard (schedule.hpp, rule 7):
// needed only where the step writes what the send reads (in place).
inline int guarded(Schedule& s, int index) {
  s.steps[static_cast<size_t>(index)].guard = true;
  return index;
}

// A rank that sits out (non-power-of-two fold): hands `given` to its partner and takes
// `result` back; the receive waits for the send only in place, where they share memory.
inline void handOver(Schedule& s, int partner, Range given, Range result) {
  int sent = send(s, partner, given);
  guarded(s, recv(s, partner, result, sent));
}

}  // namespace chorus::steps
