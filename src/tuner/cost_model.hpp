// The cost model: times a collective by replaying every rank's Schedule as discrete
// events over a LinkModel. The replay (replaySchedules) is the engine the simulator
// shares; predictMicros / rankAlgorithms / explainTable are what the tuner and
// `chorus-perf --explain` use.
//
// What the replay models (and what it leaves out):
// - A message of B bytes leaves the sender in B / bytesPerUs and its last byte is usable
//   at the receiver latencyUs later. Each rank has one egress port of bytesPerUs: its
//   sends to all peers take it one after the other. Each rank's ingress port drains
//   arrivals at bytesPerUs in order, which delays when bytes are through, never the
//   sender. Buffering is unbounded: a send never waits for its receive to be posted.
// - Steps to the same peer in the same direction run in order (the engine's queues); the
//   k-th send from a to b is the k-th receive at b from a. Empty steps cost nothing.
// - RecvReduce and Reduce cost B / reduceBytesPerUs, Copy B / copyBytesPerUs, all on the
//   rank's one CPU, serially (again a budget). A send to oneself is a copy.
// - `after` with equal element counts pipelines element by element. The approximation:
//   the dependent starts once its producer has started and finishes no earlier than
//   producer's finish + its own cost of one slice (kPipelineSliceBytes), the last slice
//   it cannot overlap. Unequal counts wait for the producer to finish.
// - A busy egress port or CPU keeps a line of waiting steps, best earliest start first,
//   and hands itself to them as it frees (list scheduling, first come first served).
// Cost: O(S log S) time and O(S) memory for S steps over all ranks; ring-like schedules
// have S ~ 2p^2 (~200-300 ns a step: p = 64 ~3 ms, p = 1024 ~1-2 s uncached; log-step
// schedules (rd, rhd) p = 1024 in ~5-8 ms; p = 16k ring is out of reach without the
// rank symmetry of the schedule, which is not exploited yet).
#pragma once

#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "tuner/link_model.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace chorus {

inline constexpr size_t kPipelineSliceBytes = 256 << 10;

struct ReplayResult {
  double micros = 0;      // when the last rank finishes its last step
  int lastRank = -1;      // that rank (-1 when nothing ran)
  bool deadlock = false;  // some step could never start (micros is then +infinity)
  size_t steps = 0;       // steps replayed, over all ranks
};

// Times the given schedules (schedules[r] is rank r's). elementSize turns element counts
// into bytes.
ReplayResult replaySchedules(std::span<const Schedule> schedules, size_t elementSize,
                             const LinkModel& link, size_t sliceBytes = kPipelineSliceBytes);

// Predicted microseconds of one call: builds every rank's schedule (root 0) and replays
// it. Results are cached per (algorithm, nranks, count, elementSize, link). Send and Recv
// are one message: latency + bytes / bandwidth. +infinity when the schedules deadlock.
// With a layout, schedules are built for it (hierarchical algorithms need it); with a
// layout and `inter`, messages between nodes go over `inter` (latency, overhead, wire
// rate, and a port of their own: the NIC), messages within a node over `link`.
double predictMicros(const Algorithm& algorithm, Collective collective, int nranks, size_t count,
                     size_t elementSize, const LinkModel& link, const Layout* layout = nullptr,
                     const LinkModel* inter = nullptr);

struct Prediction {
  const Algorithm* algorithm;
  double micros;
};

// Every registered algorithm of the collective, best (fastest) first; ties keep the
// registry's order.
std::vector<Prediction> rankAlgorithms(Collective collective, int nranks, size_t count,
                                       size_t elementSize, const LinkModel& link,
                                       const Layout* layout = nullptr,
                                       const LinkModel* inter = nullptr);

// 8 B, 32 B, ... 64 MiB.
std::vector<size_t> defaultExplainSizes();

// A crossover table: one row per size (bytes = count x elementSize, count as the
// collective takes it), one column per algorithm, predicted microseconds, the best
// marked with '*', then the best algorithm's name.
std::string explainTable(Collective collective, int nranks, const LinkModel& link,
                         std::span<const size_t> bytes, size_t elementSize = 4);
std::string explainTable(Collective collective, int nranks, const LinkModel& link);

// One line for CHORUS_DEBUG=INFO: "allReduce 4 ranks 1048576 B: ring 812.3 us (best predicted),
// twoshot 901.0 us, oneshot 1520.9 us".
std::string explainChoice(Collective collective, int nranks, size_t count, size_t elementSize,
                          const LinkModel& link);

}  // namespace chorus
