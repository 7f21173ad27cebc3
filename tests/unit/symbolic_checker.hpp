// Executes every rank's Schedule symbolically (no transport, no data) on element ranges:
// each buffer is a set of intervals, each interval holding one description of what its
// elements contain (the ranks whose inputs are folded in, which input element, whether
// finalized). Intervals split only where a step's range cuts them, so the work follows
// the number of steps, not the element count, and p = 1024 with every rank holding a
// non-empty chunk is as cheap as count 0.
//
// The executor follows the rules the engine runs (algorithms/schedule_rules.hpp, the same
// functions), not a friendlier model: steps to or from one peer run in issue order, sends
// and receives in separate queues; a step waits for its `after` element by element when
// both cover the same number of elements and for its completion otherwise; an empty step
// moves nothing and matches nothing but still waits for its `after`. It is adversarial
// where the engine is free to choose: sends are put off as long as anything else can run
// and move in installments (down to one element), so a step that overwrites data before it
// is sent, or reads data before it is produced, shows up as a wrong result; optionally one
// rank (`late`) sends only when nothing else can move, so data meant for it is delayed
// while its peers' data reaches it.
//
// One-sided steps: an Expose opens a window on the exposed range; the matching PeerRead or
// PeerReduce reads the owner's memory as it is when the reader gets to it (so reading data
// before it is produced shows up as a wrong result). Exposes and reads run as early as
// allowed, and the window stays open until the owner receives a message the reader
// sent after finishing the read: writing into an open window, or finishing with one open,
// is an error ("overwritten while a peer may still read it"). A PeerWrite writes into the
// owner's window as early as allowed (the late rank's: as late), in installments; the owner reading
// a window that its peer's matching step writes, while it is open, is an error too.
#pragma once

#include "algorithms/algorithms.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace chorus {
class Layout;
}

namespace chorus::symbolic {

// Case::installments for a send that moves one element at a time.
inline constexpr size_t kElementWise = SIZE_MAX;

struct Case {
  int nranks = 1;
  size_t count = 0;
  int root = 0;
  bool inPlace = false;
  // A send moves at most ceil(elements / installments) elements per round; kElementWise
  // (below): one element at a time.
  size_t installments = 1;
  int late = -1;
  const Layout* layout = nullptr;
  // Runs the engine's one-pass fold (schedule_rules.hpp rule 6): a PeerReduce's pass also
  // folds the following steps of its chain that have caught up with it and whose sources
  // are at hand, reading those sources then. Off: every step folds on its own pass (as
  // the engine does where the peer's memory is read, not mapped: verbs).
  bool fuseFolds = false;
};

// Runs `algorithm` on every rank and checks the outputs against what the collective must
// produce: each output element holds each required contribution exactly once, finalized
// exactly once (reductions), or the right source element (gathers, broadcast, all-to-all);
// every receive matched a send of the same length from the same peer, in order; every
// step ran and no message is left over. Returns "" or what went wrong, with the case.
std::string prove(const Algorithm& algorithm, const Case& c);

// The same for point-to-point: rank r sends `count` elements to (r + shift) % nranks and
// receives from (r - shift) % nranks, the receive issued first when `receiveFirst`.
std::string provePointToPoint(int nranks, size_t count, int shift, bool receiveFirst,
                              size_t installments);

// The number of steps all ranks' schedules have (the checker's work is about that).
size_t totalSteps(const Algorithm& algorithm, int nranks, size_t count, int root = 0,
                  const Layout* layout = nullptr);

}  // namespace chorus::symbolic
