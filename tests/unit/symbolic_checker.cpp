#include "symbolic_checker.hpp"

#include "algorithms/layout.hpp"
#include "algorithms/schedule_rules.hpp"
#include "symbolic_contents.hpp"

#include <algorithm>
#include <map>

namespace chorus::symbolic {
namespace {

using rules::elementsOf;
using rules::isLocal;

// What one send has streamed so far; positions count from the message's start.
struct Message {
  size_t total = 0;
  size_t available = 0;
  Pieces pieces;
  size_t cursor = 0, cursorAt = 0;  // first piece not fully received, and where it starts
  // An Expose's message: the owner's range to read in place, and its window (-1: a signal).
  bool exposed = false;
  Range range;
  int window = -1;
  std::vector<int> acks;  // windows of the receiver the sender finished reading before it
  bool acksApplied = false;
  bool taken = false;  // its step has all of it (or, one-sided, is done with the range)
};

// An exposed range that `reader` may still read, or write (`written`: its PeerWrite took it).
struct Window {
  int id, reader, step;
  const Contents* buffer;
  size_t begin, count;
  bool written = false;
};

// Messages on one link in order; those before `head` are taken.
struct Inbox {
  std::vector<Message> messages;
  size_t head = 0;  // the first message not taken
  // Message k is taken: the head moves past the taken ones (a write beside a fold takes
  // the message after the fold's before the fold is done with its own).
  void take(size_t k) {
    Pieces().swap(messages[k].pieces);
    messages[k].taken = true;
    while (head < messages.size() && messages[head].taken) ++head;
  }
  bool empty() const { return head == messages.size(); }
  Message& front() { return messages[head]; }
  Message& back() { return messages.back(); }
};

struct RankRun {
  Schedule schedule;
  std::vector<size_t> progress;  // elements handled per step
  std::vector<char> done, queued;
  size_t stepsLeft = 0;
  // Rule 1 (rules::QueueOrder): the step each one waits for to complete, the fold a write
  // runs beside (writesBehindFold), the next step in its queue, and which of the link's
  // messages it takes; -1: none.
  std::vector<int> prevInQueue, besideFold, nextInQueue, messageIndex;
  std::vector<char> recordTaken;                 // one-sided steps: the Expose message is theirs
  std::vector<int> dependentsBegin, dependents;  // steps whose `after` is i: [begin[i], begin[i+1])
  std::vector<int> recvPeers;                    // sorted
  std::vector<int> recvHead;  // per recvPeers entry, the first receive not done (-1: none)
  std::vector<Inbox> inbox;   // per recvPeers entry
  // Per recvPeers entry, the steps that take its messages, in order (rule 1).
  std::vector<std::vector<int>> messageSteps;
  // In-place runs alias input and output as NCCL does: both live in `store`.
  Contents store, outStore, scratch;
  size_t inputBase = 0, outputBase = 0, inputCount = 0, outputCount = 0;
  bool separateOutput = false;
  std::vector<bool> foldsIntoPrevious;         // rules::foldsIntoPrevious (fused folds)
  std::vector<Window> windows;                 // open, exposed by this rank
  std::map<int, std::vector<int>> readsToAck;  // per owner: windows read, not yet said so
};

class Run {
 public:
  using Build = std::function<Schedule(int rank)>;
  using Expect = std::function<void(int rank, Pieces& want)>;  // empty: no requirement

  // One rank's buffers: element counts, and where input and output start in the shared
  // store when in place (NCCL's in-place layouts).
  struct Shape {
    size_t inputCount = 0, outputCount = 0, inputBase = 0, outputBase = 0;
  };
  using ShapeOf = std::function<Shape(int rank)>;

  // stride: input elements per rank in the rank-major numbering of Content.
  Run(int nranks, int64_t stride, const ShapeOf& shapeOf, bool inPlace, size_t installments,
      int late, const Build& build, bool fuseFolds = false)
      : nranks_(nranks),
        stride_(stride),
        installments_(installments),
        late_(late),
        fuseFolds_(fuseFolds),
        ranks_(nranks) {
    rules::QueueOrder queues(nranks);
    for (int r = 0; r < nranks && error_.empty(); ++r) {
      RankRun& s = ranks_[r];
      s.schedule = build(r);
      const size_t n = s.schedule.steps.size();
      s.progress.assign(n, 0);
      s.done.assign(n, 0);
      s.queued.assign(n, 0);
      s.stepsLeft = n;
      s.prevInQueue.assign(n, -1);
      s.besideFold.assign(n, -1);
      s.nextInQueue.assign(n, -1);
      s.messageIndex.assign(n, -1);
      s.recordTaken.assign(n, 0);
      const Shape shape = shapeOf(r);
      const size_t inputCount = shape.inputCount, outputCount = shape.outputCount;
      s.inputCount = inputCount;
      s.outputCount = outputCount;
      s.separateOutput = !inPlace;
      s.inputBase = inPlace ? shape.inputBase : 0;
      s.outputBase = inPlace ? shape.outputBase : 0;
      size_t storeSize =
          std::max(s.inputBase + inputCount, inPlace ? s.outputBase + outputCount : 0);
      s.store = Contents(storeSize);
      if (inputCount > 0) s.store.write(s.inputBase, {{inputCount, single(r, 0, stride_)}});
      if (!inPlace) s.outStore = Contents(outputCount);
      s.scratch = Contents(s.schedule.scratchCount);
      if (fuseFolds_) s.foldsIntoPrevious = rules::foldsIntoPrevious(s.schedule);
      std::vector<int> dependentCount(n + 1, 0);
      for (int i = 0; i < static_cast<int>(n); ++i) {
        const Step& step = s.schedule.steps[i];
        if (!validate(r, i)) return;
        if (step.after >= 0) ++dependentCount[step.after];
        if (isLocal(step)) continue;
        const rules::QueueOrder::Place place = queues.link(step, i);
        s.prevInQueue[i] = place.previous;
        s.besideFold[i] = place.beside;
        s.messageIndex[i] = place.message;
        const int before = place.beside >= 0 ? place.beside : place.previous;
        if (before >= 0) s.nextInQueue[before] = i;
        if (isIncoming(step.kind)) s.recvPeers.push_back(step.peer);
      }
      queues.clear();
      s.dependentsBegin.assign(n + 1, 0);
      for (size_t i = 0; i < n; ++i)
        s.dependentsBegin[i + 1] = s.dependentsBegin[i] + dependentCount[i];
      s.dependents.assign(s.dependentsBegin[n], 0);
      std::vector<int> fill(s.dependentsBegin.begin(), s.dependentsBegin.end() - 1);
      for (int i = 0; i < static_cast<int>(n); ++i)
        if (int a = s.schedule.steps[i].after; a >= 0) s.dependents[fill[a]++] = i;
      std::sort(s.recvPeers.begin(), s.recvPeers.end());
      s.recvPeers.erase(std::unique(s.recvPeers.begin(), s.recvPeers.end()), s.recvPeers.end());
      s.recvHead.assign(s.recvPeers.size(), -1);
      s.inbox.resize(s.recvPeers.size());
      s.messageSteps.resize(s.recvPeers.size());
      for (int i = 0; i < static_cast<int>(n); ++i) {
        const Step& step = s.schedule.steps[i];
        if (!isIncoming(step.kind)) continue;
        if (s.prevInQueue[i] < 0 && s.besideFold[i] < 0) s.recvHead[link(s, step.peer)] = i;
        if (rules::isMessage(step)) s.messageSteps[link(s, step.peer)].push_back(i);
      }
    }
  }

  // Runs until nothing can move; returns "" or what went wrong.
  std::string run() {
    if (!error_.empty()) return error_;
    for (int r = 0; r < nranks_; ++r)
      for (int i = 0; i < static_cast<int>(ranks_[r].schedule.steps.size()); ++i)
        if (ranks_[r].prevInQueue[i] < 0) notify(r, i);  // the rest wait for their turn
    for (;;) {
      while (!localWork_.empty() && error_.empty()) {
        auto [r, i] = localWork_.back();
        localWork_.pop_back();
        ranks_[r].queued[i] = 0;
        advance(r, i);
      }
      if (!error_.empty()) return error_;
      // Sends move one installment per round, the late rank's only when nothing else can.
      auto& sends = !sendWork_.empty() ? sendWork_ : lateSendWork_;
      if (sends.empty()) break;
      round_.swap(sends);
      for (auto [r, i] : round_) {
        ranks_[r].queued[i] = 0;
        advance(r, i);
      }
      round_.clear();
      if (!error_.empty()) return error_;
    }
    for (int r = 0; r < nranks_; ++r) {
      const RankRun& s = ranks_[r];
      if (s.stepsLeft > 0) {
        int i = static_cast<int>(std::find(s.done.begin(), s.done.end(), 0) - s.done.begin());
        return "rank " + std::to_string(r) + " stuck at step " + std::to_string(i) + " (" +
               describeStep(s.schedule.steps[i]) + ")";
      }
      for (const Window& w : s.windows)
        return "rank " + std::to_string(r) + " finishes while rank " + std::to_string(w.reader) +
               " may still " + (w.written ? "write" : "read") + " what its step " +
               std::to_string(w.step) + " exposed";
      for (size_t l = 0; l < s.inbox.size(); ++l)
        if (!s.inbox[l].empty())
          return "a message from rank " + std::to_string(s.recvPeers[l]) + " to rank " +
                 std::to_string(r) + " is never received";
    }
    return "";
  }

  // Compares each rank's output with `expect`; "" or the first difference.
  std::string verify(const Expect& expect) {
    Pieces got, want;
    for (int r = 0; r < nranks_; ++r) {
      const RankRun& s = ranks_[r];
      want.clear();
      expect(r, want);
      if (want.empty()) continue;
      size_t wanted = 0;
      for (const Piece& p : want) wanted += p.length;
      if (wanted != s.outputCount)
        return "expected " + std::to_string(wanted) + " output elements, the buffer has " +
               std::to_string(s.outputCount);
      (s.separateOutput ? s.outStore : s.store).read(s.outputBase, s.outputCount, got);
      size_t i = 0, j = 0, usedA = 0, usedB = 0, at = 0;
      while (i < got.size() && j < want.size()) {
        const size_t n = std::min(got[i].length - usedA, want[j].length - usedB);
        const Content& g = got[i].content;
        if (!(g == want[j].content))
          return "rank " + std::to_string(r) + " output elements [" + std::to_string(at) + ", " +
                 std::to_string(at + n) + "): got " + describe(g, stride_) + "; want " +
                 describe(want[j].content, stride_);
        at += n;
        if ((usedA += n) == got[i].length) ++i, usedA = 0;
        if ((usedB += n) == want[j].length) ++j, usedB = 0;
      }
    }
    return "";
  }

 private:
  static std::string describeStep(const Step& s) {
    static const char* kinds[] = {"send",   "recv",     "recvReduce", "copy",     "reduce",
                                  "expose", "peerRead", "peerReduce", "peerWrite"};
    std::string text = kinds[static_cast<int>(s.kind)];
    if (!isLocal(s)) text += " peer " + std::to_string(s.peer);
    return text + ", " + std::to_string(elementsOf(s)) + " elements";
  }

  size_t link(const RankRun& s, int peer) const {
    return static_cast<size_t>(std::lower_bound(s.recvPeers.begin(), s.recvPeers.end(), peer) -
                               s.recvPeers.begin());
  }

  std::pair<Contents*, size_t> resolve(RankRun& s, Buffer b) {
    switch (b) {
      case Buffer::Input:
        return {&s.store, s.inputBase};
      case Buffer::Output:
        return {s.separateOutput ? &s.outStore : &s.store, s.outputBase};
      case Buffer::Scratch:
        break;
    }
    return {&s.scratch, 0};
  }

  size_t sizeOf(const RankRun& s, Buffer b) const {
    return b == Buffer::Input    ? s.inputCount
           : b == Buffer::Output ? s.outputCount
                                 : s.schedule.scratchCount;
  }

  bool fail(int r, int i, const std::string& what) {
    if (error_.empty())
      error_ = "rank " + std::to_string(r) + " step " + std::to_string(i) + ": " + what;
    return false;
  }

  // The checks that need no execution, once per step.
  bool validate(int r, int i) {
    RankRun& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    if (step.after < -1 || step.after >= i) return fail(r, i, "waits for a later step");
    if (!isLocal(step) && (step.peer < 0 || step.peer >= nranks_ || step.peer == r))
      return fail(r, i, "bad peer " + std::to_string(step.peer));
    const bool reads = step.kind != StepKind::Recv && step.kind != StepKind::PeerRead;
    const bool writes = !isOutgoing(step.kind) && step.kind != StepKind::PeerWrite;
    for (auto [uses, range] : {std::pair{reads, &step.src}, std::pair{writes, &step.dst}})
      if (uses && range->offset + range->count > sizeOf(s, range->buffer))
        return fail(r, i, "range out of bounds");
    if (writes && step.dst.buffer == Buffer::Input) return fail(r, i, "writes its input");
    if (step.guard &&
        (step.after < 0 || s.schedule.steps[step.after].kind != StepKind::Send || !writes))
      return fail(r, i, "a guard that is not a writing step's wait on a send (rule 7)");
    if (reads && writes) {
      if (step.src.count != step.dst.count)
        return fail(r, i, "source and destination differ in size");
      auto [a, aBase] = resolve(s, step.src.buffer);
      auto [b, bBase] = resolve(s, step.dst.buffer);
      const size_t x = aBase + step.src.offset, y = bBase + step.dst.offset, n = step.src.count;
      if (a == b && x != y && x < y + n && y < x + n)
        return fail(r, i, "source and destination overlap");
    }
    return true;
  }

  void notify(int r, int i) {
    RankRun& s = ranks_[r];
    if (s.done[i] || s.queued[i]) return;
    s.queued[i] = 1;
    // Sends are put off as long as anything else can run; the late rank's writes into its
    // peers' memory too (everyone else's run as early as allowed).
    const StepKind kind = s.schedule.steps[i].kind;
    const bool send = kind == StepKind::Send || (kind == StepKind::PeerWrite && r == late_);
    (!send ? localWork_ : r == late_ ? lateSendWork_ : sendWork_).push_back({r, i});
  }

  // Rule 1: step i may start once the step it waits for is complete (and, where that is a
  // write beside a fold, the fold too); a write beside a fold once the fold has taken its
  // record, so that the write's is the next message.
  static bool mayStart(const RankRun& s, int i) {
    const int p = s.prevInQueue[i];
    if (p >= 0 && (!s.done[p] || (s.besideFold[p] >= 0 && !s.done[s.besideFold[p]]))) return false;
    return s.besideFold[i] < 0 || s.recordTaken[s.besideFold[i]];
  }

  // The write that runs beside fold i (the next step in its queue), or -1.
  static int writeBeside(const RankRun& s, int i) {
    const int next = s.nextInQueue[i];
    return next >= 0 && s.besideFold[next] == i ? next : -1;
  }

  // A message came on link l of rank r: the step heading its queue may take it, and so may
  // a write beside that step.
  void notifyHead(int r, size_t l) {
    const RankRun& s = ranks_[r];
    const int head = s.recvHead[l];
    if (head < 0) return;
    notify(r, head);
    if (const int write = writeBeside(s, head); write >= 0) notify(r, write);
  }

  // One-sided step i of rank r has its Expose message: a write beside it may start.
  void takeRecord(int r, int i) {
    RankRun& s = ranks_[r];
    if (s.recordTaken[i]) return;
    s.recordTaken[i] = 1;
    if (const int write = writeBeside(s, i); write >= 0) notify(r, write);
  }

  void progressed(int r, int i, size_t to) {
    RankRun& s = ranks_[r];
    s.progress[i] = to;
    for (int d = s.dependentsBegin[i]; d < s.dependentsBegin[i + 1]; ++d)
      notify(r, s.dependents[d]);
    if (to < elementsOf(s.schedule.steps[i])) return;
    s.done[i] = 1;
    --s.stepsLeft;
    const Step& step = s.schedule.steps[i];
    if (isIncoming(step.kind)) {
      int& head = s.recvHead[link(s, step.peer)];
      if (head == i) {  // (a write beside a fold may be done before the fold)
        head = s.nextInQueue[i];
        while (head >= 0 && s.done[head]) head = s.nextInQueue[head];
      }
    }
    if (s.nextInQueue[i] >= 0) notify(r, s.nextInQueue[i]);
    // The step after a write beside this fold waits for the fold too.
    if (const int write = writeBeside(s, i); write >= 0 && s.nextInQueue[write] >= 0)
      notify(r, s.nextInQueue[write]);
  }

  // Writes `pieces` into step i's destination at element `from`, finalizing if it says so.
  void store(int r, int i, size_t from, Pieces& pieces) {
    RankRun& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    if (step.finalize) {
      expand(pieces, stride_, finalized_);
      for (Piece& p : finalized_) {
        if (p.content.finalized) fail(r, i, "an element finalized twice");
        if (!p.content.ranks.isRange(0, nranks_))
          fail(r, i, "finalized before all contributions: " + describe(p.content, stride_));
        p.content.finalized = true;
      }
      pieces.swap(finalized_);
    }
    auto [buffer, base] = resolve(s, step.dst.buffer);
    size_t n = 0;
    for (const Piece& p : pieces) n += p.length;
    const size_t at = base + step.dst.offset + from;
    for (const Window& w : s.windows)
      if (w.buffer == buffer && at < w.begin + w.count && w.begin < at + n)
        fail(r, i,
             "overwrites what its step " + std::to_string(w.step) + " exposed while rank " +
                 std::to_string(w.reader) + " may still read it");
    buffer->write(at, pieces);
  }

  // A message from `from` to `to` tells `to` which of its windows `from` finished reading.
  void carryAcks(int from, int to, Message& m) {
    auto it = ranks_[from].readsToAck.find(to);
    if (it == ranks_[from].readsToAck.end()) return;
    m.acks = std::move(it->second);
    ranks_[from].readsToAck.erase(it);
  }
  void applyAcks(int r, Message& m) {
    if (m.acksApplied) return;
    m.acksApplied = true;
    auto& open = ranks_[r].windows;
    for (int id : m.acks) std::erase_if(open, [&](const Window& w) { return w.id == id; });
  }

  // Whether step i's `after` counts as complete: it is, or it is a guard that does not
  // bind here (rule 7: the memory step i writes shares no element with what its Send
  // reads; out of place, input and output are separate stores).
  bool afterDone(int r, int i) {
    RankRun& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    if (step.after < 0) return false;
    if (s.done[step.after]) return true;
    const Range& read = s.schedule.steps[step.after].src;
    auto [a, aBase] = resolve(s, read.buffer);
    auto [b, bBase] = resolve(s, step.dst.buffer);
    const size_t x = aBase + read.offset, y = bBase + step.dst.offset;
    const bool shared = a == b && x < y + step.dst.count && y < x + read.count;
    return !rules::guardBinds(step, shared);
  }

  // Expose: once `after` is complete (all of it, rule 4), tell the peer where the range is.
  // How far rank r's step i may go now (rules::allowedElements, behind its `after` step).
  size_t allowedNow(int r, int i, bool afterDone) const {
    const RankRun& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    return rules::allowedElements(s.schedule, i, step.after >= 0 ? s.progress[step.after] : 0,
                                  afterDone);
  }

  void advanceExpose(int r, int i) {
    RankRun& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    const bool afterDone = this->afterDone(r, i);
    if (!rules::emptyStepMayComplete(step, afterDone) ||
        allowedNow(r, i, afterDone) < step.src.count)
      return;
    RankRun& peer = ranks_[step.peer];
    const size_t l = link(peer, r);
    if (l == peer.recvPeers.size() || peer.recvPeers[l] != r) {
      fail(r, i, "exposes to rank " + std::to_string(step.peer) + ", which never reads from it");
      return;
    }
    Message m{step.src.count, step.src.count};
    m.exposed = true;
    m.range = step.src;
    if (step.src.count > 0) {
      auto [buffer, base] = resolve(s, step.src.buffer);
      m.window = nextWindow_++;
      // Written where the peer's step that takes this message (rule 1) is a PeerWrite.
      const std::vector<int>& takers = peer.messageSteps[l];
      const size_t index = peer.inbox[l].messages.size();
      const bool written =
          index < takers.size() && peer.schedule.steps[takers[index]].kind == StepKind::PeerWrite;
      s.windows.push_back(
          {m.window, step.peer, i, buffer, base + step.src.offset, step.src.count, written});
    }
    carryAcks(r, step.peer, m);
    peer.inbox[l].messages.push_back(std::move(m));
    notifyHead(step.peer, l);
    progressed(r, i, step.src.count);
  }

  // The message one-sided step i of rank r takes (its peer's next), or nullptr: none has
  // come yet, or it is not an Expose of `total` elements (then the run fails, saying what
  // the step `verb`s).
  Message* exposedMessage(int r, int i, size_t total, const char* verb) {
    RankRun& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    auto& queue = s.inbox[link(s, step.peer)];
    const size_t index = static_cast<size_t>(s.messageIndex[i]);
    if (index >= queue.messages.size()) return nullptr;
    Message& message = queue.messages[index];
    if (!message.exposed || message.total != total) {
      fail(r, i,
           std::string(message.exposed ? "an exposed range" : "a stream message") + " of " +
               std::to_string(message.total) + " elements from rank " + std::to_string(step.peer) +
               " where it " + verb + " " + std::to_string(total) + " in place");
      return nullptr;
    }
    takeRecord(r, i);
    return &message;
  }

  // PeerRead / PeerReduce: the owner's exposed range as it is now.
  void advancePeerRead(int r, int i) {
    RankRun& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    const size_t total = step.dst.count;
    Message* taken = exposedMessage(r, i, total, "reads");
    if (!taken) return;
    Message& message = *taken;
    applyAcks(r, message);
    const bool afterDone = this->afterDone(r, i);
    const size_t from = s.progress[i];
    const size_t to = allowedNow(r, i, afterDone);
    if (total > 0 && to <= from) return;
    if (total == 0 && !rules::emptyStepMayComplete(step, afterDone)) return;
    int last = i;  // the last step of a fused fold chain this pass runs
    if (to > from) {
      read(step.peer, message.range, from, to - from, incoming_);
      if (step.kind == StepKind::PeerReduce) {
        readOwn(r, i, step.src, from, to - from, other_);
        fold(other_, incoming_, stride_, pieces_, foldError_);
        if (fuseFolds_) last = foldChain(r, i, from, to);
        store(r, last, from, pieces_);  // a chain's steps share one destination (rule 6)
      } else {
        store(r, i, from, incoming_);
      }
      if (!foldError_.empty()) fail(r, i, foldError_);
    }
    if (to == total) finishRead(r, i);
    progressed(r, i, to);
    for (int j = i + 1; j <= last; ++j) {
      const Step& member = s.schedule.steps[j];
      if (member.kind == StepKind::PeerReduce && to == member.dst.count) finishRead(r, j);
      progressed(r, j, to);
    }
  }

  // Rank r has read all of what PeerRead/PeerReduce i's peer exposed: the message is taken
  // and the peer hears of it with r's next message to it.
  void finishRead(int r, int i) {
    RankRun& s = ranks_[r];
    const int peer = s.schedule.steps[i].peer;
    auto& queue = s.inbox[link(s, peer)];
    const size_t index = static_cast<size_t>(s.messageIndex[i]);
    if (queue.messages[index].window >= 0)
      s.readsToAck[peer].push_back(queue.messages[index].window);
    queue.take(index);
  }

  // PeerWrite: writes its source into the owner's exposed range as early as allowed (so
  // writing data before it is produced shows up as a wrong result), in installments as a
  // send moves; the late rank's as late as possible (so a "written" said before the
  // writes end leaves the owner's window open). The owner reading the range before the writer's
  // next message reached it is caught by readOwn (the window is marked written when it opens).
  void advancePeerWrite(int r, int i) {
    RankRun& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    const size_t total = step.src.count;
    Message* taken = exposedMessage(r, i, total, "writes");
    if (!taken) return;
    Message& message = *taken;
    applyAcks(r, message);
    RankRun& owner = ranks_[step.peer];
    const bool afterDone = this->afterDone(r, i);
    const size_t from = s.progress[i];
    const size_t limit = allowedNow(r, i, afterDone);
    if (total == 0) {
      if (!rules::emptyStepMayComplete(step, afterDone)) return;
      finishRead(r, i);
      progressed(r, i, 0);
      return;
    }
    if (limit <= from) return;
    const size_t grain = std::max<size_t>(1, total / installments_ + (total % installments_ != 0));
    const size_t to = from + std::min(limit - from, grain);
    readOwn(r, i, step.src, from, to - from, pieces_);
    auto [buffer, base] = resolve(owner, message.range.buffer);
    buffer->write(base + message.range.offset + from, pieces_);
    if (to == total) finishRead(r, i);
    progressed(r, i, to);
    if (to < limit) notify(r, i);  // the next installment
  }

  // The engine's one-pass fold (rule 6, Engine::gatherFoldChain): PeerReduce i's pass over
  // [from, to) also folds the next steps of its chain into pieces_, as long as each has
  // caught up with i (its progress is `from`) and its source is at hand: a local range, or
  // a peer range whose Expose heads the step's link while the step heads its queue. Their
  // sources are read now, when i runs, not when they would run; returns the last folded.
  int foldChain(int r, int i, size_t from, size_t to) {
    RankRun& s = ranks_[r];
    const std::vector<bool>& folds = s.foldsIntoPrevious;
    int last = i;
    for (size_t j = static_cast<size_t>(i) + 1; j < folds.size() && folds[j]; ++j) {
      const Step& member = s.schedule.steps[j];
      if (s.done[j] || s.progress[j] != from) break;
      if (member.kind == StepKind::Reduce) {
        readOwn(r, static_cast<int>(j), member.src, from, to - from, incoming_);
      } else {
        const size_t l = link(s, member.peer);
        if (s.recvHead[l] != static_cast<int>(j) || s.inbox[l].empty()) break;
        Message& message = s.inbox[l].front();
        if (!message.exposed || message.total != member.dst.count) break;  // reported later
        applyAcks(r, message);
        takeRecord(r, static_cast<int>(j));
        read(member.peer, message.range, from, to - from, incoming_);
      }
      other_.swap(pieces_);
      fold(other_, incoming_, stride_, pieces_, foldError_);
      last = static_cast<int>(j);
    }
    return last;
  }

  void read(int r, const Range& range, size_t from, size_t n, Pieces& out) {
    auto [buffer, base] = resolve(ranks_[r], range.buffer);
    buffer->read(base + range.offset + from, n, out);
  }
  // Rank r's step i reads its own memory: not where a peer may still be writing.
  void readOwn(int r, int i, const Range& range, size_t from, size_t n, Pieces& out) {
    auto [buffer, base] = resolve(ranks_[r], range.buffer);
    const size_t at = base + range.offset + from;
    for (const Window& w : ranks_[r].windows)
      if (w.written && w.buffer == buffer && at < w.begin + w.count && w.begin < at + n)
        fail(r, i,
             "reads what its step " + std::to_string(w.step) + " exposed while rank " +
                 std::to_string(w.reader) + " may still write it");
    buffer->read(at, n, out);
  }

  // Advances step i of rank r as far as the rules let it (a send: one installment).
  void advance(int r, int i) {
    RankRun& s = ranks_[r];
    const Step& step = s.schedule.steps[i];
    if (s.done[i]) return;
    if (!isLocal(step) && !mayStart(s, i)) return;
    if (step.kind == StepKind::Expose) return advanceExpose(r, i);
    if (step.kind == StepKind::PeerRead || step.kind == StepKind::PeerReduce)
      return advancePeerRead(r, i);
    if (step.kind == StepKind::PeerWrite) return advancePeerWrite(r, i);
    const bool afterDone = this->afterDone(r, i);
    const size_t total = elementsOf(step);
    if (total == 0) {  // moves nothing, matches nothing, keeps its place
      if (rules::emptyStepMayComplete(step, afterDone)) progressed(r, i, 0);
      return;
    }
    const size_t from = s.progress[i];
    const size_t limit = allowedNow(r, i, afterDone);
    if (limit <= from) return;
    size_t to = limit;
    switch (step.kind) {
      case StepKind::Send: {
        const size_t grain =
            std::max<size_t>(1, total / installments_ + (total % installments_ != 0));
        to = from + std::min(limit - from, grain);
        RankRun& peer = ranks_[step.peer];
        const size_t l = link(peer, r);
        if (l == peer.recvPeers.size() || peer.recvPeers[l] != r) {
          fail(r, i,
               "sends to rank " + std::to_string(step.peer) + ", which never receives from it");
          return;
        }
        if (from == 0) {
          peer.inbox[l].messages.push_back({total});
          carryAcks(r, step.peer, peer.inbox[l].back());
        }
        Message& message = peer.inbox[l].back();
        readOwn(r, i, step.src, from, to - from, pieces_);
        for (Piece& p : pieces_)
          append(message.pieces, p.length, moved(p.content, -static_cast<int64_t>(from)));
        message.available = to;
        notifyHead(step.peer, l);
        break;
      }
      case StepKind::Copy:
        readOwn(r, i, step.src, from, to - from, pieces_);
        store(r, i, from, pieces_);
        break;
      case StepKind::Reduce:
        readOwn(r, i, step.dst, from, to - from, other_);
        readOwn(r, i, step.src, from, to - from, incoming_);
        fold(other_, incoming_, stride_, pieces_, foldError_);
        store(r, i, from, pieces_);
        break;
      case StepKind::Expose:
      case StepKind::PeerRead:
      case StepKind::PeerReduce:
      case StepKind::PeerWrite:
        return;  // above
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        auto& queue = s.inbox[link(s, step.peer)];
        if (queue.empty()) return;  // the peer has not started sending
        Message& message = queue.front();
        if (message.exposed) {
          fail(r, i,
               "receives a stream where rank " + std::to_string(step.peer) +
                   " exposed a range to read in place");
          return;
        }
        applyAcks(r, message);
        if (message.total != total) {
          fail(r, i,
               "a message of " + std::to_string(message.total) + " elements from rank " +
                   std::to_string(step.peer) + " into a receive of " + std::to_string(total));
          return;
        }
        to = std::min(limit, message.available);
        if (to <= from) return;
        take(message, from, to, incoming_);
        if (step.kind == StepKind::RecvReduce) {
          readOwn(r, i, step.src, from, to - from, other_);
          fold(other_, incoming_, stride_, pieces_, foldError_);
          store(r, i, from, pieces_);
        } else {
          store(r, i, from, incoming_);
        }
        if (to == total) queue.take(queue.head);
        break;
      }
    }
    if (!foldError_.empty()) fail(r, i, foldError_);
    progressed(r, i, to);
    // A send goes on next round if it may; anything else ran as far as it could.
    if (step.kind == StepKind::Send && to < limit) notify(r, i);
  }

  // Elements [from, to) of a message, shifts relative to `from`; receives read in order.
  static void take(Message& m, size_t from, size_t to, Pieces& out) {
    out.clear();
    while (m.cursorAt + m.pieces[m.cursor].length <= from)
      m.cursorAt += m.pieces[m.cursor++].length;
    size_t at = m.cursorAt;
    for (size_t k = m.cursor; at < to; ++k) {
      const size_t lo = std::max(at, from), hi = std::min(at + m.pieces[k].length, to);
      append(out, hi - lo, moved(m.pieces[k].content, static_cast<int64_t>(from)));
      at += m.pieces[k].length;
    }
  }

  int nranks_;
  int64_t stride_;  // elements of each rank's input (rank-major numbering, see Content)
  size_t installments_;
  int late_;
  bool fuseFolds_;
  std::vector<RankRun> ranks_;
  std::vector<std::pair<int, int>> localWork_, sendWork_, lateSendWork_, round_;
  Pieces pieces_, other_, incoming_, finalized_;
  std::string error_, foldError_;
  int nextWindow_ = 0;
};

std::string describeCase(const Algorithm& a, const Case& c) {
  std::string text = std::string(toString(a.collective)) + "/" + a.name +
                     " p=" + std::to_string(c.nranks) + " count=" + std::to_string(c.count) +
                     " root=" + std::to_string(c.root) + (c.inPlace ? " in-place" : "");
  if (c.installments != 1)
    text += c.installments == SIZE_MAX ? " element-wise"
                                       : " installments=" + std::to_string(c.installments);
  if (c.late >= 0) text += " late=" + std::to_string(c.late);
  if (c.fuseFolds) text += " fused";
  if (c.layout) text += " layout " + std::to_string(c.layout->nodes()) + " nodes";
  return text;
}

}  // namespace

// The v-collectives' per-rank counts for a case: uneven, some ranks empty (every third),
// all empty for count 0.
std::vector<size_t> unevenCounts(int nranks, size_t count) {
  std::vector<size_t> counts(nranks, 0);
  if (count == 0) return counts;
  for (int r = 0; r < nranks; ++r) counts[r] = r % 3 == 1 ? 0 : count + r % 4;
  return counts;
}

std::string prove(const Algorithm& algorithm, const Case& c) {
  const int n = c.nranks;
  const size_t count = c.count;
  const Collective kind = algorithm.collective;
  const bool vee = kind == Collective::AllGatherV || kind == Collective::ReduceScatterV;
  const std::vector<size_t> counts = vee ? unevenCounts(n, count) : std::vector<size_t>{};
  std::vector<size_t> offsets(n + 1, 0);  // of the v-collectives' blocks, packed
  for (int r = 0; vee && r < n; ++r) offsets[r + 1] = offsets[r] + counts[r];
  const size_t total = offsets[n];
  const size_t blocks = static_cast<size_t>(n) * count;
  // Counts per rank, and in place (as NCCL): all-gather's input is block `rank` of its
  // output (send == recv + rank * count), reduce-scatter's output block `rank` of its
  // input; gather's input block `rank` of its output, scatter's output block `rank` of its
  // input (what counts at the root); the v-collectives likewise at their packed offsets.
  using Shape = Run::Shape;
  auto shapeOf = [&](int r) -> Shape {
    const size_t at = static_cast<size_t>(r) * count;
    switch (kind) {
      case Collective::AllGather:
      case Collective::Gather:
        return {count, blocks, at, 0};
      case Collective::ReduceScatter:
      case Collective::Scatter:
        return {blocks, count, 0, at};
      case Collective::AllToAll:
        return {blocks, blocks, 0, 0};
      case Collective::AllGatherV:
        return {counts[r], total, offsets[r], 0};
      case Collective::ReduceScatterV:
        return {total, counts[r], 0, offsets[r]};
      default:
        return {count, count, 0, 0};
    }
  };
  size_t stride = shapeOf(0).inputCount;
  for (int r = 0; kind == Collective::AllGatherV && r < n; ++r)
    stride = std::max(stride, counts[r]);
  Run run(
      n, static_cast<int64_t>(stride), shapeOf, c.inPlace, c.installments, c.late,
      [&](int r) {
        return algorithm.build({kind, r, n, count, c.root, c.layout, counts});
      },
      c.fuseFolds);
  std::string error = run.run();
  if (error.empty()) {
    const Content all{RankSet(0, n), 0, true};
    error = run.verify([&](int r, Pieces& want) {
      auto one = [&](int from, int64_t index) {
        return single(from, index, static_cast<int64_t>(stride));
      };
      const int64_t at = static_cast<int64_t>(r) * static_cast<int64_t>(count);
      switch (kind) {
        case Collective::AllReduce:
          want.push_back({count, all});
          break;
        case Collective::Reduce:
          if (r == c.root) want.push_back({count, all});
          break;
        case Collective::ReduceScatter:  // element i is input element r * count + i
          want.push_back({count, moved(all, at)});
          break;
        case Collective::Broadcast:
          want.push_back({count, one(c.root, 0)});
          break;
        case Collective::AllGather:  // block j is rank j's input: element q is element q
          want.push_back({n * count, one(0, 0)});  // of all inputs laid end to end
          break;
        case Collective::Gather:  // at the root, as all-gather
          if (r == c.root) want.push_back({n * count, one(0, 0)});
          break;
        case Collective::Scatter:  // block r of the root's input
          want.push_back({count, one(c.root, at)});
          break;
        case Collective::AllToAll:  // block j is block r of rank j's input
          for (int j = 0; j < n; ++j)
            want.push_back({count, one(j, int64_t{r - j} * static_cast<int64_t>(count))});
          break;
        case Collective::AllGatherV:  // block j (at offsets[j]) is rank j's input
          for (int j = 0; j < n; ++j)
            if (counts[j] > 0) want.push_back({counts[j], one(j, -int64_t(offsets[j]))});
          break;
        case Collective::ReduceScatterV:  // element i is input element offsets[r] + i
          if (counts[r] > 0) want.push_back({counts[r], moved(all, int64_t(offsets[r]))});
          break;
        default:
          break;
      }
    });
  }
  return error.empty() ? "" : describeCase(algorithm, c) + ": " + error;
}

std::string provePointToPoint(int nranks, size_t count, int shift, bool receiveFirst,
                              size_t installments) {
  const Algorithm& send = *findAlgorithm(Collective::Send, "direct");
  const Algorithm& recv = *findAlgorithm(Collective::Recv, "direct");
  auto to = [&](int r) { return wrapRank(r + shift, nranks); };
  auto from = [&](int r) { return wrapRank(r - shift, nranks); };
  // One schedule per rank holding both calls, as the engine queues two ops' steps.
  auto shape = [&](int) { return Run::Shape{count, count, 0, 0}; };
  Run run(nranks, static_cast<int64_t>(count), shape, false, installments, -1, [&](int r) {
    Schedule out = send.build({Collective::Send, r, nranks, count, to(r)});
    Schedule in = recv.build({Collective::Recv, r, nranks, count, from(r)});
    if (receiveFirst) std::swap(out, in);
    const int base = static_cast<int>(out.steps.size());
    for (Step step : in.steps) {
      if (step.after >= 0) step.after += base;
      out.steps.push_back(step);
    }
    return out;
  });
  std::string error = run.run();
  if (error.empty())
    error = run.verify([&](int r, Pieces& want) {
      want.push_back({count, single(from(r), 0, static_cast<int64_t>(count))});
    });
  return error.empty()
             ? ""
             : "send/recv p=" + std::to_string(nranks) + " count=" + std::to_string(count) +
                   " shift=" + std::to_string(shift) + ": " + error;
}

size_t totalSteps(const Algorithm& algorithm, int nranks, size_t count, int root,
                  const Layout* layout) {
  size_t total = 0;
  for (int r = 0; r < nranks; ++r)
    total += algorithm.build({algorithm.collective, r, nranks, count, root, layout}).steps.size();
  return total;
}

}  // namespace chorus::symbolic
