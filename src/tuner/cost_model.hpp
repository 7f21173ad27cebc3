// The cost model: times a collective by replaying every rank's Schedule as discrete
// events over a LinkModel. The replay (replaySchedules) is the engine the simulator
// shares; predictMicros / rankAlgorithms / explainTable are what the tuner and
// `chorus-perf --explain` use.
//
// The replay itself, what it models and what it leaves out, is in sim/replay.hpp; the
// tuner's network is sim::LinkClassNetwork (one link class, or two with a layout).
// Cost: ring-like schedules have ~2p^2 steps (~200-300 ns a step: p = 64 ~3 ms, p = 1024
// ~1-2 s uncached); log-step schedules (rd, rhd) p = 1024 in ~5-8 ms. chorus-sim reaches
// larger p through the compressed replay (sim/simulate.hpp).
#pragma once

#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "sim/replay.hpp"
#include "tuner/link_model.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace chorus {

// Times the given schedules (schedules[r] is rank r's). elementSize turns element counts
// into bytes.
ReplayResult replaySchedules(std::span<const Schedule> schedules, size_t elementSize,
                             const LinkModel& link, size_t sliceBytes = kPipelineSliceBytes);

// Predicted microseconds of one call: builds every rank's schedule (root 0) and replays
// it. Results are cached per (algorithm, nranks, count, elementSize, link). Send and Recv
// are one message: the sender's and receiver's schedules replayed as a pair over `link`
// (overhead on each side, latency, the padded bytes and the call's header on the wire).
// +infinity when the schedules deadlock.
// With a layout, schedules are built for it (hierarchical algorithms need it); with a
// layout and `inter`, messages between nodes go over `inter` (latency, overhead, wire
// rate, and a port of their own: the NIC), messages within a node over `link`.
// `sliceBytes`: the engine's pipelining grain (the communicator's CHORUS_SLICE_BYTES).
double predictMicros(const Algorithm& algorithm, Collective collective, int nranks, size_t count,
                     size_t elementSize, const LinkModel& link, const Layout* layout = nullptr,
                     const LinkModel* inter = nullptr, size_t sliceBytes = kPipelineSliceBytes);

struct Prediction {
  const Algorithm* algorithm;
  double micros;
};

// Every registered copy-path algorithm of the collective (one-sided ones need registered
// buffers and are chosen apart), best (fastest) first; ties keep the registry's order.
std::vector<Prediction> rankAlgorithms(Collective collective, int nranks, size_t count,
                                       size_t elementSize, const LinkModel& link,
                                       const Layout* layout = nullptr,
                                       const LinkModel* inter = nullptr,
                                       size_t sliceBytes = kPipelineSliceBytes);

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
