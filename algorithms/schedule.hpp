// A Schedule is what an algorithm produces: the steps one rank runs for one collective.
// It names buffers and element ranges, never pointers, sockets or devices, so the same
// schedule is executed by the engine, checked symbolically by the tests and timed by the
// simulator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace chorus {

enum class Collective : uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  Send,
  Recv,
  AllToAll,
  Gather,
  Scatter,
  AllGatherV,
  ReduceScatterV
};
const char* toString(Collective collective);  // "allReduce", ...

enum class Buffer : uint8_t { Input, Output, Scratch };

struct Range {
  Buffer buffer = Buffer::Input;
  size_t offset = 0;  // elements
  size_t count = 0;   // elements
};

enum class StepKind : uint8_t {
  Send,        // stream src to peer
  Recv,        // stream from peer into dst
  RecvReduce,  // dst = src OP (stream from peer), element by element
  Copy,        // dst = src, locally
  Reduce,      // dst = dst OP src, locally
  // One-sided (needs buffers the transport can expose, transport.hpp's PeerMemory). Each
  // Expose is matched, in order, by one PeerRead, PeerReduce or PeerWrite of the peer,
  // like a Send by a Recv; its message says where the range is, not what it holds.
  Expose,      // src is ready: peer may read it (or write it: PeerWrite) from now until
               // this rank receives any later message from that peer (the peer's next
               // message says it is done); this rank neither writes it meanwhile nor,
               // where the peer writes it, reads it
  PeerRead,    // dst = the range the peer exposed, read in place
  PeerReduce,  // dst = src OP the range the peer exposed, read in place
  PeerWrite,   // the range the peer exposed = src, written in place (dst unused)
};

// Which queue of the peer's a step is in (the engine runs each queue in issue order).
inline bool isOutgoing(StepKind k) { return k == StepKind::Send || k == StepKind::Expose; }
inline bool isLocal(StepKind k) { return k == StepKind::Copy || k == StepKind::Reduce; }
inline bool isIncoming(StepKind k) { return !isOutgoing(k) && !isLocal(k); }
// One-sided steps carry a message even when their range is empty (then a pure signal).
inline bool isOneSided(StepKind k) {
  return k == StepKind::Expose || k == StepKind::PeerRead || k == StepKind::PeerReduce ||
         k == StepKind::PeerWrite;
}

struct Step {
  StepKind kind = StepKind::Copy;
  int peer = -1;
  Range src;
  Range dst;
  // The step that must have handled an element before this step touches it: the one
  // that produces this step's input, or one still reading the memory this step writes
  // (in-place). When both cover the same number of elements the engine pipelines them
  // element by element; otherwise it waits for `after` to finish.
  int after = -1;
  // Last reduction of these elements: Avg divides by nranks here.
  bool finalize = false;
  // `after` is a Send that this step waits for only so as not to overwrite what the send
  // still reads (in place); where the memory this step writes shares no byte with the
  // send's source (out of place) the wait does not bind (schedule_rules.hpp rule 7).
  bool guard = false;
};

struct Schedule {
  std::vector<Step> steps;
  size_t scratchCount = 0;  // elements of Scratch the schedule needs
};

// What an algorithm is asked to build. `count` is per collective as in NCCL: all-reduce,
// broadcast, reduce, send, recv: elements of the buffer; all-gather: elements each rank
// contributes; reduce-scatter: elements each rank receives; all-to-all: elements each
// rank sends to each rank (one block; input and output hold nranks blocks); gather:
// elements each rank sends to the root; scatter: elements each rank receives. The
// v-collectives take `counts` (one per rank; empty: `count` for every rank): all-gather-v:
// rank r contributes counts[r] and the output holds all, packed in rank order;
// reduce-scatter-v: the input holds all, packed, and rank r receives block r.
class Layout;

struct CollectiveArgs {
  Collective collective = Collective::AllReduce;
  int rank = 0;
  int nranks = 1;
  size_t count = 0;
  int root = 0;                    // broadcast, reduce; the peer for send and recv
  const Layout* layout = nullptr;  // which ranks share a node (hierarchical algorithms)
  std::span<const size_t> counts;  // the v-collectives' per-rank counts
};

// The v-collectives' count of `rank` and where its block starts (packed in rank order).
inline size_t countOf(const CollectiveArgs& a, int rank) {
  return a.counts.empty() ? a.count : a.counts[static_cast<size_t>(rank)];
}
inline size_t offsetOf(const CollectiveArgs& a, int rank) {
  size_t offset = 0;
  for (int r = 0; r < rank; ++r) offset += countOf(a, r);
  return offset;
}

// Element range [begin, begin+size) of part `index` when `count` elements are split into
// `parts` nearly equal parts (the first count % parts parts get one more).
struct Part {
  size_t begin;
  size_t size;
};
inline Part partOf(size_t count, int parts, int index) {
  size_t base = count / parts, extra = count % parts, i = static_cast<size_t>(index);
  return {i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

inline int wrapRank(int rank, int nranks) { return ((rank % nranks) + nranks) % nranks; }

}  // namespace chorus
