#include "engine/engine.hpp"

#include "algorithms/schedule_rules.hpp"
#include "engine/wire_header.hpp"
#include "errors.hpp"
#include "kernels/copy.hpp"
#include "kernels/reduce.hpp"
#include "log.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace chorus {

using detail::OpState;
using detail::StepProgress;
using detail::WireHeader;

namespace {

constexpr size_t kStreamAlign = rules::kStreamAlign;  // rule 5: every message starts aligned
static_assert(sizeof(WireHeader) == rules::kCallHeaderBytes);  // rule 5: the call's fingerprint
// Polls between two clock reads while pausing (a read costs as much as a poll, ~20 ns).
constexpr int kPollsPerClockRead = 8;
// Ops of this many bytes or more begin their wait with a hand-over of the core where ranks
// outnumber cores (Engine::waitFor). Below it the yield cost more than it saved at np 4: 8 B
// to 4 KiB all-reduces took 10 -> 12.5 us, and 1 MiB on memAlloc buffers lost 3 runs of 3.
constexpr size_t kHandOverFromBytes = size_t{4} << 20;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
const std::byte kZeros[kStreamAlign] = {};

size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

// An Expose's message: where the range lives, as the transport describes it to the peer.
struct ExposeRecord {
  uint32_t blobBytes;
  uint32_t reserved;
  uint64_t bytes;  // of the range, checked against the reader's step
  std::byte blob[PeerMemory::kMaxBlob];
};
static_assert(sizeof(ExposeRecord) == rules::kExposeRecordBytes);  // rule 5: the replay prices it
static_assert(sizeof(ExposeRecord) <= sizeof(StepProgress::record));

}  // namespace

std::string OpState::describe() const {
  char text[180];
  if (barrier) return "barrier #" + std::to_string(sequence);
  const bool reduces = collective == Collective::AllReduce ||
                       collective == Collective::ReduceScatter ||
                       collective == Collective::Reduce || collective == Collective::ReduceScatterV;
  const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce ||
                      collective == Collective::Gather || collective == Collective::Scatter;
  char rootText[24] = "";
  if (rooted) std::snprintf(rootText, sizeof rootText, ", root %d", root);
  std::snprintf(text, sizeof(text), "%s #%llu (%zu x %s%s%s, %s%s)", toString(collective),
                static_cast<unsigned long long>(sequence), count, toString(type),
                reduces ? " " : "", reduces ? toString(op) : "", algorithm, rootText);
  return text;
}

Engine::Engine(Transport& transport, EngineConfig config)
    : transport_(transport),
      config_(std::move(config)),
      sendQueue_(config_.nranks),
      recvQueue_(config_.nranks),
      headerSentTo_(config_.nranks, 0),
      headerFrom_(config_.nranks, 0) {
  taken_.assign(config_.nranks, 1);
  lastProgress_ = lastPeerCheck_ = Clock::now();
  if (!config_.tracePrefix.empty())
    trace_ = std::make_unique<StepTrace>(config_.tracePrefix, config_.rank);
}

Engine::~Engine() = default;

void Engine::restartTrace() {
  if (!trace_) return;
  trace_.reset();  // closes the file and frees its name for the new one
  trace_ = std::make_unique<StepTrace>(config_.tracePrefix, config_.rank);
}

bool Engine::refuseAfterFailure(OpState& op) {
  if (!failed()) return false;
  op.done = true;
  op.error = failure_;
  op.message = "rank " + std::to_string(config_.rank) + ": " + op.describe() +
               " not started: the communicator failed earlier: " + failureCause_;
  return true;
}

void Engine::submit(std::shared_ptr<OpState> op) {
  if (op->viaMailbox) return submitMailbox(std::move(op));
  const Schedule& schedule = *op->schedule;
  op->progress.assign(schedule.steps.size(), {});
  op->stepsLeft = schedule.steps.size();
  if (refuseAfterFailure(*op)) return;
  if (op->stepsLeft == 0) {
    op->done = true;
    return;
  }
  bool exposesScratch = false;
  for (const Step& step : schedule.steps)
    exposesScratch |=
        step.kind == StepKind::Expose && step.src.buffer == Buffer::Scratch && step.src.count > 0;
  lendScratch(*op, exposesScratch);
  if (trace_) trace_->submitted(*op);
  if (inFlight_.empty()) progressUnstamped_ = true;
  ++submitted_;
  for (int i = 0; i < static_cast<int>(schedule.steps.size()); ++i) {
    const Step& step = schedule.steps[i];
    StepRef ref{op.get(), i};
    if (rules::isLocal(step)) {
      localSteps_.push_back(ref);
      continue;
    }
    // The op's first message each way to each peer carries the fingerprint.
    auto& mark = isOutgoing(step.kind) ? headerSentTo_ : headerFrom_;
    if (rules::isMessage(step) && mark[step.peer] != submitted_) {
      mark[step.peer] = submitted_;
      op->progress[i].withHeader = true;
    }
    auto& queue = isOutgoing(step.kind) ? sendQueue_[step.peer] : recvQueue_[step.peer];
    if (sendQueue_[step.peer].empty() && recvQueue_[step.peer].empty())
      busyPeers_.push_back(step.peer);
    queue.push_back(ref);
  }
  inFlight_.push_back(std::move(op));
}

void Engine::lendScratch(OpState& op, bool exposed) {
  size_t bytes = op.schedule->scratchCount * op.elementSize;
  if (bytes == 0) return;
  if (exposed) return lendSharedScratch(op, bytes);
  auto fits = std::find_if(scratchPool_.begin(), scratchPool_.end(),
                           [&](const auto& b) { return b.size() >= bytes; });
  if (fits != scratchPool_.end()) {
    op.scratchStorage = std::move(*fits);
    scratchPool_.erase(fits);
  } else {
    op.scratchStorage.resize(bytes);
  }
  op.scratch = op.scratchStorage.data();
}

// The smallest pooled buffer that fits, or a new one (the largest pooled one goes when
// the pool is full): a call's scratch is as large as its buffer, so keep few.
void Engine::lendSharedScratch(OpState& op, size_t bytes) {
  auto fits = sharedScratchPool_.end();
  for (auto it = sharedScratchPool_.begin(); it != sharedScratchPool_.end(); ++it)
    if (it->region.bytes - memory::kCanaryBytes >= bytes &&
        (fits == sharedScratchPool_.end() || it->region.bytes < fits->region.bytes))
      fits = it;
  SharedScratch lent;
  if (fits != sharedScratchPool_.end()) {
    lent = std::move(*fits);
    sharedScratchPool_.erase(fits);
  } else {
    auto* data = static_cast<std::byte*>(memAlloc(bytes));
    lent.data = std::shared_ptr<std::byte>(data, [](std::byte* p) { memFree(p); });
    std::optional<LocalRegion> region = memory::allocatedRegion(data, bytes);
    if (!region) throw Error(Result::InternalError, "engine: memAlloc'd scratch has no region");
    lent.region = *region;
  }
  op.sharedScratch = std::move(lent.data);
  op.scratchRegion = lent.region;
  op.scratch = op.sharedScratch.get();
}

void Engine::returnScratch(OpState& op) {
  if (op.sharedScratch) {
    constexpr size_t kPooled = 2;
    if (sharedScratchPool_.size() >= kPooled) {
      auto largest = std::max_element(
          sharedScratchPool_.begin(), sharedScratchPool_.end(),
          [](const auto& a, const auto& b) { return a.region.bytes < b.region.bytes; });
      sharedScratchPool_.erase(largest);
    }
    sharedScratchPool_.push_back({std::move(op.sharedScratch), *op.scratchRegion});
    op.scratchRegion.reset();
    op.scratch = nullptr;
    return;
  }
  if (op.scratchStorage.empty()) return;
  if (scratchPool_.size() < 4) scratchPool_.push_back(std::move(op.scratchStorage));
  op.scratchStorage = {};
  op.scratch = nullptr;
}

// Rule 7: whether step `index`'s `after` is complete, or a guard that does not bind here
// (the memory the step writes shares no byte with what its Send reads: out of place).
bool Engine::afterComplete(const OpState& op, int index) const {
  const Step& step = op.schedule->steps[index];
  if (step.after < 0) return false;
  if (op.progress[step.after].complete) return true;
  if (!step.guard) return false;
  const Range& read = op.schedule->steps[step.after].src;
  const auto a = reinterpret_cast<uintptr_t>(detail::resolve(op, read));
  const auto b = reinterpret_cast<uintptr_t>(detail::resolve(op, step.dst));
  const size_t readBytes = read.count * op.elementSize,
               writeBytes = step.dst.count * op.elementSize;
  const bool shared = a < b + writeBytes && b < a + readBytes;
  return !rules::guardBinds(step, shared);
}

size_t Engine::allowedElements(const OpState& op, int index) const {
  const int after = op.schedule->steps[index].after;
  if (after < 0) return rules::allowedElements(*op.schedule, index, 0, false);  // no `after`
  return rules::allowedElements(*op.schedule, index, op.progress[after].elements,
                                afterComplete(op, index));
}

// The call's fingerprint ahead of the data; false until all of it is out.
bool Engine::sendHeader(OpState& op, StepProgress& p, Channel& channel, bool& moved) {
  if (p.headerBytes == 0) {
    const WireHeader h = headerOf(op);
    std::memcpy(p.header.data(), &h, sizeof h);
  }
  while (p.headerBytes < sizeof(WireHeader)) {
    size_t taken =
        channel.trySend(p.header.data() + p.headerBytes, sizeof(WireHeader) - p.headerBytes);
    if (taken == 0) return false;
    p.headerBytes += static_cast<uint8_t>(taken);
    moved = true;
  }
  return true;
}

// Takes the peer's fingerprint and checks it; false until all of it is in. Throws
// Error(InvalidUsage) naming the peer and its call when the calls differ.
bool Engine::receiveHeader(OpState& op, StepProgress& p, Channel& channel, int peer, bool& moved) {
  while (p.headerBytes < sizeof(WireHeader)) {
    std::span<const std::byte> incoming = channel.peek();
    if (incoming.empty()) return false;
    size_t used = std::min(incoming.size(), sizeof(WireHeader) - p.headerBytes);
    std::memcpy(p.header.data() + p.headerBytes, incoming.data(), used);
    channel.consume(used);
    p.headerBytes += static_cast<uint8_t>(used);
    moved = true;
  }
  if (p.withHeader) {
    p.withHeader = false;  // checked once
    WireHeader theirs;
    std::memcpy(&theirs, p.header.data(), sizeof theirs);
    if (auto wrong = mismatch(op, theirs, peer)) throw Error(Result::InvalidUsage, *wrong);
  }
  return true;
}

bool Engine::advanceSend(OpState& op, int index) {
  const Step& step = op.schedule->steps[index];
  auto& p = op.progress[index];
  const size_t dataBytes = step.src.count * op.elementSize;
  const size_t wireBytes = roundUp(dataBytes, kStreamAlign);
  size_t allowedElems = allowedElements(op, index);
  size_t limit = allowedElems == step.src.count ? wireBytes : allowedElems * op.elementSize;
  limit = std::min(limit, p.bytes + config_.sliceBytes);
  Channel& channel = channelTo(step.peer);
  const std::byte* data = resolve(op, step.src);
  bool moved = false;
  if (p.withHeader && p.headerBytes == 0) sendHeaderWithOffer(op, index, channel, moved);
  if (p.withHeader && !sendHeader(op, p, channel, moved)) return moved;
  if (sendRendezvous(op, index, channel, moved)) return moved;
  while (p.bytes < limit) {
    size_t taken;
    if (p.bytes < dataBytes) {
      taken = channel.trySend(data + p.bytes, std::min(limit, dataBytes) - p.bytes);
    } else {
      taken = channel.trySend(kZeros, limit - p.bytes);
    }
    if (taken == 0) break;
    p.bytes += taken;
    moved = true;
  }
  p.elements = std::min(p.bytes, dataBytes) / op.elementSize;
  if (p.bytes == wireBytes) completeStep(op, index);
  return moved;
}

bool Engine::advanceRecv(OpState& op, int index) {
  const Step& step = op.schedule->steps[index];
  auto& p = op.progress[index];
  const size_t dataBytes = step.dst.count * op.elementSize;
  const size_t wireBytes = roundUp(dataBytes, kStreamAlign);
  const size_t allowedBytes = allowedElements(op, index) * op.elementSize;
  const size_t limit = std::min(wireBytes, p.bytes + config_.sliceBytes);
  const bool reducing = step.kind == StepKind::RecvReduce;
  const bool divide = reducing && step.finalize && op.op == RedOp::Avg && config_.nranks > 1;
  Channel& channel = channelTo(step.peer);
  std::byte* dst = resolve(op, step.dst);
  const std::byte* local = reducing ? resolve(op, step.src) : nullptr;
  bool moved = false;
  recvClearToSend(op, index, channel, moved);  // before the fingerprint: a head start
  if ((p.withHeader || (p.headerBytes > 0 && p.headerBytes < sizeof(WireHeader))) &&
      !receiveHeader(op, p, channel, step.peer, moved))
    return moved;
  if (recvRendezvous(op, index, channel, moved)) return moved;
  while (p.bytes < limit) {
    std::span<const std::byte> incoming = channel.peek();
    if (incoming.empty()) break;
    size_t used;
    if (p.bytes < dataBytes) {
      size_t want = std::min({incoming.size(), std::min(limit, dataBytes) - p.bytes,
                              allowedBytes - std::min(allowedBytes, p.bytes)});
      if (want == 0) break;
      if (reducing) {
        size_t elems = want / op.elementSize;
        if (elems == 0) break;
        used = elems * op.elementSize;
        kernels::reduce(op.type, op.op, dst + p.bytes, local + p.bytes, incoming.data(), elems);
        if (divide) kernels::divide(op.type, dst + p.bytes, dst + p.bytes, elems, config_.nranks);
      } else {
        used = want;
        std::memcpy(dst + p.bytes, incoming.data(), used);
      }
    } else {
      used = std::min(incoming.size(), wireBytes - p.bytes);  // padding
    }
    channel.consume(used);
    p.bytes += used;
    moved = true;
  }
  p.elements = std::min(p.bytes, dataBytes) / op.elementSize;
  if (p.bytes == wireBytes) completeStep(op, index);
  return moved;
}

bool Engine::advanceLocal(OpState& op, int index) {
  const Step& step = op.schedule->steps[index];
  auto& p = op.progress[index];
  const size_t ready = allowedElements(op, index);
  if (step.dst.count == 0) {  // an empty part (count < nranks)
    completeStep(op, index);
    return true;
  }
  if (p.elements == step.dst.count) {  // folded by a chain's pass (rule 6)
    completeStep(op, index);
    return true;
  }
  if (ready <= p.elements) return false;
  const size_t from = p.elements, n = ready - from, es = op.elementSize;
  const std::byte* src = resolve(op, step.src) + from * es;
  std::byte* dst = resolve(op, step.dst) + from * es;
  if (step.kind == StepKind::Reduce) {
    kernels::reduce(op.type, op.op, dst, dst, src, n);
  } else if (src != dst) {
    // Into scratch lent from peer-mappable memory (the staged path's copy of its input):
    // only peers read it, after their own copies, and on a call this large the slots of
    // all ranks do not stay in the shared cache until then, so streaming stores save
    // reading each destination line first (perf/README.md, staged copy-in).
    if (step.dst.buffer == Buffer::Scratch && op.scratchRegion &&
        op.count * es * config_.nranks >= config_.streamFromBytes)
      kernels::copyStreaming(dst, src, n * es);
    else
      std::memcpy(dst, src, n * es);
  }
  if (step.finalize && op.op == RedOp::Avg && config_.nranks > 1)
    kernels::divide(op.type, dst, dst, n, config_.nranks);
  p.elements = ready;
  p.bytes = ready * es;
  if (ready == step.dst.count) completeStep(op, index);
  return true;
}

PeerMemory& Engine::peerMemory() {
  PeerMemory* memory = transport_.peerMemory();
  if (!memory)
    throw Error(Result::InvalidUsage, std::string("transport ") + transport_.name() +
                                          " has no one-sided access to peers' memory");
  return *memory;
}

// Sends the record that makes step.src readable by the peer, once `after` is complete
// (rules::allowedElements, rule 4: the whole range is written before a peer reads any).
bool Engine::advanceExpose(OpState& op, int index) {
  const Step& step = op.schedule->steps[index];
  auto& p = op.progress[index];
  if (allowedElements(op, index) < step.src.count) return false;
  Channel& channel = channelTo(step.peer);
  bool moved = false;
  if (p.withHeader && !sendHeader(op, p, channel, moved)) return moved;
  if (p.bytes == 0) {
    ExposeRecord record{};
    record.bytes = step.src.count * op.elementSize;
    if (step.src.count > 0) {
      const auto& region = step.src.buffer == Buffer::Input    ? op.inputRegion
                           : step.src.buffer == Buffer::Output ? op.outputRegion
                                                               : op.scratchRegion;
      if (!region)
        throw Error(Result::InvalidUsage, op.describe() +
                                              ": a one-sided step exposes a buffer "
                                              "that is not registered");
      // Peers will read this memory: it must still be the shared memfd that they map.
      if (region->fd >= 0 && !memory::canaryIntact(region->base, region->bytes, region->serial))
        throw Error(Result::SystemError,
                    op.describe() + ": this rank's memAlloc memory (serial " +
                        std::to_string(region->serial) +
                        ") lost its canary (its mapping was replaced or the memory cut short), "
                        "so peers would not read what this rank wrote there");
      std::vector<std::byte> blob =
          peerMemory().describe(*region, resolve(op, step.src), record.bytes);
      record.blobBytes = static_cast<uint32_t>(blob.size());
      std::memcpy(record.blob, blob.data(), blob.size());
    }
    std::memcpy(p.record.data(), &record, sizeof record);
  }
  while (p.bytes < sizeof(ExposeRecord)) {
    size_t taken = channel.trySend(p.record.data() + p.bytes, sizeof(ExposeRecord) - p.bytes);
    if (taken == 0) return moved;
    p.bytes += taken;
    moved = true;
  }
  p.elements = step.src.count;
  completeStep(op, index);
  return true;
}

// Takes the peer's Expose record, then reads (PeerRead) or folds (PeerReduce) its range
// in place, one slice per pass so that a chain of PeerReduce steps over the same
// destination moves together and the destination stays in cache between them.
bool Engine::advancePeerRead(OpState& op, int index) {
  const Step& step = op.schedule->steps[index];
  auto& p = op.progress[index];
  Channel& channel = channelTo(step.peer);
  bool moved = false;
  const size_t es = op.elementSize, count = step.dst.count;
  if (!takeExposeRecord(op, index, channel, moved)) return moved;
  ExposeRecord record;
  std::memcpy(&record, p.record.data(), sizeof record);
  if (count == 0 || p.elements == count) {  // empty, or folded by a chain's pass (rule 6)
    if (p.peerData) peerMemory().checkMapped(step.peer, std::span(record.blob, record.blobBytes));
    completeStep(op, index);
    return true;
  }
  const size_t limit = oneSidedLimit(op, index, count);
  if (limit <= p.elements) return moved;
  const size_t from = p.elements, n = limit - from;
  std::byte* dst = resolve(op, step.dst) + from * es;
  const std::byte* remote = p.peerData ? p.peerData + from * es : nullptr;
  const std::span blob(record.blob, record.blobBytes);
  if (!remote) {
    size_t done;
    if (step.kind == StepKind::PeerReduce) {  // folded from where it lands (no copy there)
      if (bounce_.size() < n * es) bounce_.resize(n * es);
      done = peerMemory().readLanded(step.peer, blob, from * es, bounce_.data(), n * es, &remote);
    } else {
      done = peerMemory().read(step.peer, blob, from * es, dst, n * es);
      remote = dst;
    }
    if (done == 0) {
      p.readElements = n;  // in flight: ask for the same range until it is done
      return moved;
    }
    p.readElements = 0;
  }
  int last = index;  // the last step this pass handles: a fold chain's (rule 6)
  if (step.kind == StepKind::PeerReduce) {
    foldSources_.assign({resolve(op, step.src) + from * es, remote});
    if (p.peerData) last = gatherFoldChain(op, index, from);
    kernels::reduceMany(op.type, op.op, dst, foldSources_, n);
  } else if (remote != dst) {
    // Into the user's result (read by no later step of this rank): streaming stores skip
    // reading each destination line first. Scratch stays cached for the step that folds it,
    // and so do the results of ops whose buffers all fit the last-level cache together.
    if (step.dst.buffer == Buffer::Output && streamsResult(op, count))
      kernels::copyStreaming(dst, remote, n * es);
    else
      std::memcpy(dst, remote, n * es);
  }
  if (op.schedule->steps[last].finalize && op.op == RedOp::Avg && config_.nranks > 1)
    kernels::divide(op.type, dst, dst, n, config_.nranks);
  // The chain's other steps complete on their own next pass (their queues pop them).
  for (int i = index + 1; i <= last; ++i) {
    op.progress[i].elements = limit;
    op.progress[i].bytes = limit * es;
  }
  p.elements = limit;
  p.bytes = limit * es;
  if (limit == count) {
    // Read through a mapping: it must still be the peer's memory now that the reads are
    // done (one load), or what they folded may be a replaced mapping's zeroes.
    if (p.peerData) peerMemory().checkMapped(step.peer, blob);
    completeStep(op, index);
  }
  return true;
}

// The peer's Expose record for one-sided step `index` (PeerRead, PeerReduce, PeerWrite),
// behind the call's header where it is the op's first message from the peer, taken off
// the channel once and kept in the step's progress; on taking it, the peer's range is
// mapped (readable, or writable for a PeerWrite) where the transport can. False while
// the record has not all arrived.
bool Engine::takeExposeRecord(OpState& op, int index, Channel& channel, bool& moved) {
  const Step& step = op.schedule->steps[index];
  auto& p = op.progress[index];
  if (p.recordTaken) return true;
  if ((p.withHeader || (p.headerBytes > 0 && p.headerBytes < sizeof(WireHeader))) &&
      !receiveHeader(op, p, channel, step.peer, moved))
    return false;

  while (p.recordBytes < sizeof(ExposeRecord)) {
    std::span<const std::byte> incoming = channel.peek();
    if (incoming.empty()) return false;
    size_t used = std::min(incoming.size(), sizeof(ExposeRecord) - p.recordBytes);
    std::memcpy(p.record.data() + p.recordBytes, incoming.data(), used);
    channel.consume(used);
    p.recordBytes += static_cast<uint8_t>(used);
    moved = true;
  }
  ExposeRecord record;
  std::memcpy(&record, p.record.data(), sizeof record);
  const bool writes = step.kind == StepKind::PeerWrite;
  const size_t bytes = rules::elementsOf(step) * op.elementSize;
  if (record.bytes != bytes || record.blobBytes > PeerMemory::kMaxBlob)
    throw Error(Result::InvalidUsage, op.describe() + ": rank " + std::to_string(step.peer) +
                                          " exposed " + std::to_string(record.bytes) +
                                          " bytes where this rank " +
                                          (writes ? "writes " : "reads ") + std::to_string(bytes) +
                                          " (the ranks run different schedules)");
  p.recordTaken = true;
  if (bytes > 0) {
    const std::span blob(record.blob, record.blobBytes);
    p.peerData =
        writes ? peerMemory().mapWritable(step.peer, blob) : peerMemory().map(step.peer, blob);
  }
  return true;
}

// Whether a one-sided step copying `count` elements into a rank's result uses streaming
// stores (kernels/copy.hpp: a large step of a large op).
bool Engine::streamsResult(const OpState& op, size_t count) const {
  return count * op.elementSize >= kernels::kStreamingCopyFromBytes &&
         op.count * op.elementSize * config_.nranks >= config_.streamFromBytes;
}

// Where one-sided step `index` (`count` elements) moves to in this pass: one slice on, as
// far as its `after` allows; a read or write still in flight asks for the same range again.
size_t Engine::oneSidedLimit(const OpState& op, int index, size_t count) const {
  const StepProgress& p = op.progress[index];
  if (p.readElements > 0) return p.elements + p.readElements;
  const size_t slice = std::max<size_t>(1, config_.sliceBytes / op.elementSize);
  return std::min({count, p.elements + slice, allowedElements(op, index)});
}

// Writes this rank's range into the range the peer exposed, behind `after` slice by slice
// (peer_push: the part just folded, still in cache); completes once all of it is there
// (then the rank's next message to the peer tells it so).
bool Engine::advancePeerWrite(OpState& op, int index) {
  const Step& step = op.schedule->steps[index];
  auto& p = op.progress[index];
  Channel& channel = channelTo(step.peer);
  bool moved = false;
  if (!takeExposeRecord(op, index, channel, moved)) return moved;
  ExposeRecord record;
  std::memcpy(&record, p.record.data(), sizeof record);
  const size_t es = op.elementSize, count = step.src.count;
  const std::span blob(record.blob, record.blobBytes);
  if (count == 0) {
    completeStep(op, index);
    return true;
  }
  const size_t limit = oneSidedLimit(op, index, count);
  if (limit <= p.elements) return moved;
  const size_t from = p.elements, n = limit - from;
  const std::byte* src = resolve(op, step.src) + from * es;
  if (p.peerData) {
    // The peer's result, read by no later step of this call: streaming stores skip reading
    // each destination line first, as a PeerRead into the output does (and they end with
    // a fence, so the bytes are visible before the message that says they are there).
    std::byte* dst = const_cast<std::byte*>(p.peerData) + from * es;
    if (streamsResult(op, count))
      kernels::copyStreaming(dst, src, n * es);
    else
      std::memcpy(dst, src, n * es);
  } else if (peerMemory().write(step.peer, blob, from * es, src, n * es) == 0) {
    p.readElements = n;  // in flight: post the same range until it is done
    return moved;
  }
  p.readElements = 0;
  p.elements = limit;
  p.bytes = limit * es;
  if (limit == count) {
    // Written through a mapping: it must still be the peer's memory, or the peer would
    // never see what was written.
    if (p.peerData) peerMemory().checkMapped(step.peer, blob);
    completeStep(op, index);
  }
  return true;
}

// Rule 6 (schedule_rules.hpp): the steps that fold into PeerReduce `index`'s pass are the
// next ones of its chain, as long as each has exactly `index`'s progress (`from`: it has
// caught up with the step before it and no further) and its source is at hand: a local
// range, or a peer's range this rank has taken the Expose record of and mapped (such a
// step heads its queue, so the engine would run it next anyway). `index`'s own pass has
// not moved its elements yet, so a member's advancePeerRead here moves none either.
int Engine::gatherFoldChain(OpState& op, int index, size_t from) {
  const std::vector<bool>& folds = *op.foldsIntoPrevious;
  const size_t es = op.elementSize;
  int last = index;
  for (size_t i = static_cast<size_t>(index) + 1; i < folds.size(); ++i) {
    if (!folds[i]) break;
    const Step& next = op.schedule->steps[i];
    const StepProgress& q = op.progress[i];
    if (q.complete || q.elements != from) break;
    if (next.kind == StepKind::Reduce) {
      foldSources_.push_back(resolve(op, next.src) + from * es);
    } else {
      // A step that heads its queue but has not run yet takes its peer's record now (it
      // moves no data: it has caught up), so a chain folds from its first slice on.
      const std::deque<StepRef>& queue = recvQueue_[static_cast<size_t>(next.peer)];
      if (!q.recordTaken && !queue.empty() && queue.front().op == &op &&
          queue.front().step == static_cast<int>(i))
        advancePeerRead(op, static_cast<int>(i));
      if (!q.recordTaken || !q.peerData || q.readElements > 0) break;
      foldSources_.push_back(q.peerData + from * es);
    }
    last = static_cast<int>(i);
  }
  return last;
}

void Engine::completeStep(OpState& op, int index) {
  op.progress[index].complete = true;
  if (--op.stepsLeft == 0) {
    op.done = true;
    returnScratch(op);
  }
}

// The start of the step's first pass that moves anything is its start, the pass that
// completes it its end (a fold chain's members complete on their own next pass, as in the engine).
bool Engine::advanceTraced(StepRef ref) {
  const bool unstarted = trace_->unstarted(*ref.op, ref.step);
  const double before = unstarted ? StepTrace::now() : 0;
  const bool moved = advanceStep(ref);
  if (moved && unstarted) trace_->started(*ref.op, ref.step, before);
  if (ref.op->progress[ref.step].complete) trace_->completed(*ref.op, ref.step);
  return moved;
}

bool Engine::advanceStep(StepRef ref) {
  const Step& step = ref.op->schedule->steps[ref.step];
  // An empty step moves no data but still keeps its place in the order.
  if (rules::elementsOf(step) == 0 &&
      !rules::emptyStepMayComplete(step, afterComplete(*ref.op, ref.step)))
    return false;
  switch (step.kind) {
    case StepKind::Send:
      return advanceSend(*ref.op, ref.step);
    case StepKind::Recv:
    case StepKind::RecvReduce:
      return advanceRecv(*ref.op, ref.step);
    case StepKind::Copy:
    case StepKind::Reduce:
      return advanceLocal(*ref.op, ref.step);
    case StepKind::Expose:
      return advanceExpose(*ref.op, ref.step);
    case StepKind::PeerRead:
    case StepKind::PeerReduce:
      return advancePeerRead(*ref.op, ref.step);
    case StepKind::PeerWrite:
      return advancePeerWrite(*ref.op, ref.step);
  }
  return false;
}

bool Engine::progressPass(bool checkStrays) {
  bool moved = false;
  for (size_t i = 0; i < localSteps_.size();) {
    StepRef ref = localSteps_[i];
    moved |= advance(ref);
    if (ref.op->progress[ref.step].complete) {
      localSteps_[i] = localSteps_.back();
      localSteps_.pop_back();
    } else {
      ++i;
    }
  }
  while (!mailboxOps_.empty()) {
    const bool progressed = advanceMailbox(checkStrays);
    moved |= progressed;
    if (!progressed) break;
  }
  for (size_t i = 0; i < busyPeers_.size();) {
    int peer = busyPeers_[i];
    for (auto* queue : {&recvQueue_[peer], &sendQueue_[peer]}) {
      while (!queue->empty()) {
        StepRef head = queue->front();
        const StepProgress& progress = head.op->progress[head.step];
        // (A write that ran behind a fold may have completed before it became the head.)
        if (!progress.complete) moved |= advance(head);
        if (progress.complete) {
          queue->pop_front();
          continue;
        }
        // Rule 1's exception: the write right behind a fold that has taken its record (so
        // the write's record is next on the channel) runs too, behind its `after`.
        if (queue->size() > 1 && progress.recordTaken) {
          const StepRef next = (*queue)[1];
          if (next.op == head.op && !next.op->progress[next.step].complete &&
              rules::writesBehindFold(next.op->schedule->steps[next.step].kind,
                                      head.op->schedule->steps[head.step].kind))
            moved |= advance(next);
        }
        break;
      }
    }
    if (sendQueue_[peer].empty() && recvQueue_[peer].empty()) {
      busyPeers_[i] = busyPeers_.back();
      busyPeers_.pop_back();
    } else {
      ++i;
    }
  }
  while (!inFlight_.empty() && inFlight_.front()->done) inFlight_.pop_front();
  return moved;
}

bool Engine::poll(bool withClock, Clock::time_point* idleNow) {
  if (failed()) return false;
  if (abortRequested_.load(std::memory_order_acquire)) {
    std::string why;
    {
      std::lock_guard lock(abortMutex_);
      why = abortReason_;
    }
    failAll(Result::RemoteError, why);
    return false;
  }
  try {
    bool moved = progressPass(withClock);
    if (moved) {
      progressUnstamped_ = true;
      if (waitingNoted_) noteWaiting(false);
    } else if (withClock && !inFlight_.empty()) {
      const auto now = Clock::now();
      stampProgress(now);
      checkPeers(now);
      if (!waitingNoted_ && now - lastProgress_ >= config_.timeout / 2)
        noteWaiting(true);
      else if (waitingNoted_)
        noteSilence(now);
      checkStall(now);
      if (idleNow) *idleNow = now;
    }
    return moved;
  } catch (const PeerError& e) {
    FailureReport root = rootCause(e);
    failAll(e.code(), root.cause, std::move(root.failedRanks));
  } catch (const Error& e) {
    failAll(e.code(), e.what(), e.failedRanks());
  } catch (const std::exception& e) {
    failAll(Result::InternalError, e.what());
  }
  return false;
}

void Engine::failAll(Result code, const std::string& cause, std::vector<int> failedRanks) {
  if (failed()) return;
  failure_ = code;
  std::sort(failedRanks.begin(), failedRanks.end());
  failedRanks.erase(std::unique(failedRanks.begin(), failedRanks.end()), failedRanks.end());
  failedRanks_ = std::move(failedRanks);
  if (trace_) trace_->abandonAll();  // before the ops (the trace's keys) may go
  // What asyncError()'s reader gets: the collective and sequence number that failed too.
  failureCause_ = inFlight_.empty() ? cause : inFlight_.front()->describe() + ": " + cause;
  logf(LogLevel::Warn, "rank %d: %s", config_.rank, cause.c_str());
  if (config_.onFailure) {
    try {
      config_.onFailure(failureCause_, failedRanks_);
    } catch (const std::exception&) {  // best effort: the store may be gone too
    }
  }
  for (auto& op : inFlight_) {
    if (op->done) continue;
    op->done = true;
    op->error = code;
    op->failedRanks = failedRanks_;
    op->message =
        "rank " + std::to_string(config_.rank) + ": " + op->describe() + " failed: " + cause;
  }
  inFlight_.clear();
  for (auto& q : sendQueue_) q.clear();
  for (auto& q : recvQueue_) q.clear();
  localSteps_.clear();
  mailboxOps_.clear();
  busyPeers_.clear();
}

void Engine::drain(Deadline deadline) {
  try {
    while (!inFlight_.empty() && !failed()) {
      auto last = inFlight_.back();
      if (!waitFor(*last, deadline)) return;
    }
  } catch (const std::exception&) {
  }
}

Result Engine::state() {
  poll();
  if (failed()) return failure_;
  return inFlight_.empty() ? Result::Success : Result::InProgress;
}

void Engine::abort(const std::string& why) {
  {
    std::lock_guard lock(abortMutex_);
    if (abortRequested_.load(std::memory_order_relaxed)) return;  // the first reason stands
    abortReason_ = why;
  }
  abortRequested_.store(true, std::memory_order_release);
}

bool Engine::waitFor(OpState& op, Deadline deadline) {
  // Where ranks outnumber cores, a large op's wait begins by handing the core over once, so
  // that a rank sharing it enters its call and exposes its buffers before this one computes
  // for a millisecond or more: the one-sided schedules' first folds need every rank's
  // exposures, and the ranks on the other cores could wait idle for that rank until this
  // one's share was done (np 4 on 2 cores, 16 MiB memAlloc all-reduce: 5% faster, 26 of 30
  // alternating runs; perf/README.md, "A hand-over at the start of a large call"). Not where
  // a yield was learnt to cost a tick (YieldPolicy: a thread that computes shares the core).
  if (config_.yieldWhileSpinning && op.count * op.elementSize >= kHandOverFromBytes &&
      yieldPolicy_.yielding()) {
    poll();
    if (!op.done) sched_yield();
  }
  // A spell of polling begins at the call and after each poll that moved. Its start is
  // taken at its first clock read, kPollsPerClockRead idle polls in, so that an answer
  // within those polls (np 2, 8 B on a quiet machine) costs no clock read at all.
  constexpr Clock::time_point kUnread{};
  Clock::time_point spinStart = kUnread;
  bool idle = false;  // this spell of polling has found nothing to do at least once
  // ... and is still within the spin budget (none when ranks outnumber cores: yield at once)
  bool pausing = spinBudget_.budget() > SpinBudget::Duration::zero();
  int pollsSinceClock = 0;  // while pausing, the clock is read every kPollsPerClockRead polls
  // This spell's yielding phase: not reached yet, yielding, or over (it sleeps when idle).
  enum class Yield { NotYet, On, Off } yield = Yield::NotYet;
  auto endYielding = [&] {
    if (yield == Yield::On) yieldPolicy_.yieldsWereShort();
    yield = Yield::Off;
  };
  auto restart = [&] {
    if (!idle) return;  // no idle poll since the spell began: it goes on (no clock read)
    endYielding();
    yield = Yield::NotYet;
    if (spinStart == kUnread) {
      spinBudget_.answered(SpinBudget::Duration::zero());  // within a few polls
    } else {
      spinBudget_.answered(Clock::now() - spinStart);
      spinStart = kUnread;
    }
    idle = false;
    pausing = spinBudget_.budget() > SpinBudget::Duration::zero();
    pollsSinceClock = 0;
  };
  while (!op.done) {
    const bool withClock = !pausing || ++pollsSinceClock >= kPollsPerClockRead;
    Clock::time_point now = kUnread;  // set by an idle poll that read the clock
    if (poll(withClock, &now)) {
      restart();
      continue;
    }
    if (op.done) break;
    idle = true;
    if (!withClock) {
      cpuRelax();
      continue;
    }
    pollsSinceClock = 0;
    if (now == kUnread) {  // poll had nothing in flight to stamp: read it here
      now = Clock::now();
      checkStall(now);
      if (op.done) break;
    }
    if (spinStart == kUnread) spinStart = now;
    if (now >= deadline) return false;
    if (pausing && now - spinStart < spinBudget_.budget()) {
      // A core of our own and a peer that answered quickly before: a system call per poll
      // would cost more than the answer takes.
      cpuRelax();
      continue;
    }
    if (pausing) {
      spinBudget_.expired();
      pausing = false;
    }
    if (yield == Yield::NotYet && now - spinStart < config_.spin)
      yield = yieldPolicy_.startYielding() ? Yield::On : Yield::Off;
    if (yield == Yield::On && now - spinStart < config_.spin) {
      // Poll by handing the core over: with other processes on the cores, a peer that has
      // not answered is probably waiting for one (np=2, 8 B all-reduce on a loaded
      // machine: 7.7 us median yielding at once, 13.6 us after 1 us of pause, 20 us after
      // 5 us, 120-240 us pausing throughout); with nothing else to run sched_yield
      // returns at once. A yield that took a tick went to a thread that computes: the
      // policy ends the yielding (src/engine/yield_policy.hpp).
      sched_yield();
      if (!yieldPolicy_.yielded(Clock::now() - now)) yield = Yield::Off;
      continue;
    }
    endYielding();
    uint64_t token = transport_.prepareWait();
    if (poll() || op.done) {
      restart();
      continue;
    }
    try {
      Deadline until = std::min({deadline, now + kPeerCheckEvery, lastProgress_ + config_.timeout});
      transport_.wait(token, until);
    } catch (const PeerError& e) {
      FailureReport root = rootCause(e);
      failAll(e.code(), root.cause, std::move(root.failedRanks));
    } catch (const Error& e) {
      failAll(e.code(), e.what(), e.failedRanks());
    }
    restart();
  }
  if (op.error != Result::Success) throw Error(op.error, op.message, op.failedRanks);
  return true;
}

}  // namespace chorus
