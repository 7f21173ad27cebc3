// The replay engine the tuner and chorus-sim share: times a collective by replaying every
// rank's Schedule as discrete events over a NetworkModel (sim/network.hpp).
//
// What the replay models (and what it leaves out):
// - A message leaves the sender in its wireUs (the network model's figure) and its last
//   byte is usable at the receiver latencyUs later. Each rank has the network's egress
//   ports; the sends on one port take it one after the other. Each rank's ingress port
//   (one per egress port class) drains arrivals in order, which delays when bytes are
//   through, never the sender. Buffering is unbounded: a send never waits for its receive.
//   Where the sender's CPU moves the bytes (MessageCost::onCpu: shm's copy into the FIFO)
//   the send holds the rank's CPU instead of a port, one after the other with its other work.
//   A message's overhead at each end is the network's figure: over a link with a bounded
//   channel (LinkModel::channelBytes, shm's FIFO) one o per channel-full, a hand-over each.
//   A sender's consecutive messages on one port (or its CPU) start at least the network's
//   gap apart (MessageCost::gapUs, LogGP's g): the port is held max(o + wire, g). Where the
//   sender holds a core for its o (MessageCost::sendOverheadOnCpu) the sender's o is its own
//   figure and also takes its CPU, one after the other with its other work.
// - Steps to the same peer in the same direction run in order (the engine's queues); the
//   k-th send from a to b is the k-th receive at b from a. Empty steps cost nothing but
//   complete only once their `after` has (the rules of algorithms/schedule_rules.hpp, asked
//   as the engine asks them). A message's wire bytes are the engine's: padded to 8 bytes,
//   and the call's 32-byte header on the first message of each peer queue.
// - RecvReduce and Reduce cost B / reduce rate, Copy B / copy rate, all on the rank's one
//   CPU, serially (again a budget). A send to oneself is a copy. Where the sender's CPU
//   moves the bytes into the receiver's memory (MessageCost::onCpu: shm's FIFO) a Recv also
//   copies them out, B / copy rate (a RecvReduce folds from there: its reduce is the pass).
// - One-sided: an Expose costs its record's overhead at the sender and at the reader
//   (PeerRead, PeerReduce: o, then B / copy or reduce rate), empty ranges included.
// - A transport that moves bytes with the CPU (the network's transportBytesPerUs > 0: TCP)
//   costs each message's wire bytes / that rate on the sender's CPU (from when its port
//   starts sending) and again in the receive step on the receiver's CPU: a rank that sends
//   and receives at once, or reduces meanwhile, does them one after the other. 0 (the
//   tuner's links, GPU fabrics): no such cost.
// - A pool of host cores (NetworkModel::poolCores: C cores shared by all R ranks, C < R):
//   every CPU charge above (a CPU step's cost, the sender's transport copy and held o) runs
//   once it holds one of the C cores, at a whole core: the network's o, g, reduce, copy and
//   transport figures (a rank's at the call's share) at C / R of their time. The cores go
//   first come first served in event order, each charge to the core that frees latest by
//   its start (else the first to free). So a rank runs at a whole core while fewer than C
//   are busy, and all R busy at once take as long as at the call's share (with
//   CorePool::overheadAtCallShare o and g stay as given: only the byte work speeds up; the
//   cores are still taken for them). Without a pool
//   each rank's CPU is its own and the figures are charged as given.
// - `after` with equal element counts pipelines element by element. The approximation:
//   the dependent starts once its producer has started and finishes no earlier than
//   producer's finish + its own cost of one slice (kPipelineSliceBytes), the last slice
//   it cannot overlap. Unequal counts wait for the producer to finish.
// - A busy egress port or CPU keeps a line of waiting steps, best earliest start first,
//   and hands itself to them as it frees (list scheduling, first come first served).
// - Events at one time run wakes first, then by a key that every symmetry map keeps (a
//   step's place in its rank's schedule; a send's receive's place in the receiver's), and
//   never before the time being handled: the order in which an ingress port takes
//   messages starting together is then the same in full and compressed replays.
//
// Compression: when shifting every rank by g maps both the schedules and the network onto
// themselves, rank r + m g does exactly what rank r does, at the same times. Then only
// ranks 0..g-1 are replayed: a message to rank b is a message to b's class (b mod g), a
// receive from rank q is matched with the send of q mod g shifted by q - q mod g. The
// events are the same; simulate() (sim/simulate.hpp) checks the symmetry, and the `sim`
// tests check full and compressed replays agree exactly. The same holds when the map is
// r -> r xor m g (recursive doubling's partners; Symmetry::Xor): rank q's sends to r are
// then q mod g's sends to r xor (q - q mod g). And when turning every node's local index
// (rank n G + l -> n G + (l + k) mod G, k a multiple of u; Symmetry::Rotate) maps them
// onto themselves, only the ranks n G + l with l < u are replayed: q = n G + l's sends to
// r are those of q0 = n G + l mod u to r turned back by l - l mod u. Recursive halving-
// doubling between nodes whose count is not a power of two (hier_rhd at 12,500 nodes: a
// fold, so no node is like another) is the same on every local index of a node.
// A pool of host cores is shared by every rank, so the ranks of a class do not run alike
// once they wait for the same cores (which one gets a core first depends on the others):
// the networks with one declare no map, and replay() refuses compression with a pool (it
// returns a deadlock, as for a malformed map).
// Cost: O(S log S) time and O(S) memory for S replayed steps (x C with a pool).
#pragma once

#include "algorithms/schedule.hpp"
#include "engine/slice.hpp"
#include "sim/network.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace chorus {

struct ReplayResult {
  double micros = 0;      // when the last rank finishes its last step
  int lastRank = -1;      // that rank (-1 when nothing ran); with compression, its class
  bool deadlock = false;  // some step could never start (micros is then +infinity)
  size_t steps = 0;       // steps of all ranks (with compression: the ones represented)
  size_t replayed = 0;    // steps actually replayed
};

namespace sim {

// One replayed step's times (replay's `timeline`, when asked for): `start` is when it took
// its resource (the rank's CPU or egress port; a step without one, e.g. a receive that only
// waits for the bytes, when it could start), `finish` when it was done. With compression
// only the replayed ranks' steps (rank: the real rank of each).
struct StepTime {
  int rank = 0;
  int step = 0;  // its index in the rank's schedule
  StepKind kind = StepKind::Copy;
  int peer = -1;
  size_t bytes = 0;
  int after = -1;
  double start = 0, finish = 0;
};

// Times schedules[r] (rank r's, r < schedules.size()) on `net`. nranks 0: one schedule per
// rank. nranks > schedules.size(): compressed replay, schedules.size() must divide nranks
// and the caller vouches for the symmetry (`symmetry` says which map).
// With Symmetry::Rotate, schedules[s] is rank (s / u) G + s % u's (G = perNode ranks a
// node, u = schedules.size() x G / nranks of them replayed a node).
// `timeline`, when given, receives every replayed step's times in the call replay() reports
// (the last one timed: with a shaper's bucket, a call in steady state).
ReplayResult replay(std::span<const Schedule> schedules, size_t elementSize, NetworkModel& net,
                    int nranks = 0, size_t sliceBytes = kPipelineSliceBytes,
                    Symmetry symmetry = Symmetry::Shift, int perNode = 0,
                    std::vector<StepTime>* timeline = nullptr);

}  // namespace sim
}  // namespace chorus
