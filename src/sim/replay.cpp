#include "sim/replay.hpp"

#include "algorithms/schedule_rules.hpp"

#include <algorithm>
#include <compare>
#include <cstdint>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>

namespace chorus::sim {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// One step of one rank, flattened with its dependencies as global indices.
// How a step waits for its `after` (rules 2 and 3 of algorithms/schedule_rules.hpp).
enum class AfterWait : unsigned char { None, Elementwise, Completion };

struct Node {
  StepKind kind;
  AfterWait afterWait = AfterWait::None;
  bool firstOfCall = false;  // a message that carries the call's header (rule 5)
  int rank;                  // the real rank (with Rotate not the replayed slot: see slotOf)
  int peer;
  size_t count;
  int after = -1;  // producer (same rank)
  // Rule 1: the step on the same peer queue (same direction) it waits for, as
  // QueueOrder::Place::previous: a write beside a fold waits for what the fold waits for
  // (it ends behind the fold chain it is `after` anyway, so the step after it, which
  // waits for the write, is not priced as passing the fold).
  int linkPrev = -1;
  int match = -1;     // receives: the matching send; before matching: the sequence number
  int pending = 0;    // dependencies not yet timed
  int ordinal = -1;   // sends: which message of its rank this is
  int step = 0;       // its index in its rank's schedule
  int recvStep = -1;  // sends: the index of the matching receive in the receiver's schedule
  int nicOut = -1, nicIn = -1;  // sends: the shared NICs they cross (drains), -1: none
  uint32_t lanes = 0;           // sends: sender's and receiver's lanes on their NICs
  double start = 0, finish = 0, earliestStart = 0, earliestFinish = 0;
  MessageCost cost;  // messages (sends and their receives)
  // Folds one more source into the pass of the step before it (rule 6): the engine runs
  // the chain as one multi-source pass, so this step adds one read stream, not a reduce.
  bool chained = false;
};

class Replay {
 public:
  Replay(int nranks, int replayed, size_t elementSize, NetworkModel& net, size_t sliceBytes,
         Symmetry symmetry, int perNode)
      : nranks_(nranks),
        replayed_(replayed),
        symmetry_(symmetry),
        perNode_(symmetry == Symmetry::Rotate ? perNode : 1),
        unit_(symmetry == Symmetry::Rotate ? replayed / (nranks / perNode) : 1),
        elementSize_(elementSize),
        net_(net),
        ports_(net.ports()),
        sliceBytes_(static_cast<double>(sliceBytes)),
        pool_(net.corePool(nranks)),
        poolCores_(pool_.cores),
        poolScale_(poolCores_ > 0 ? double(poolCores_) / nranks : 1),
        reduceBytesPerUs_(atWholeCore(net.reduceBytesPerUs())),
        copyBytesPerUs_(atWholeCore(net.copyBytesPerUs())),
        transportBytesPerUs_(atWholeCore(net.transportBytesPerUs())),
        burstUs_(net.nicBurstUs()),
        queues_(nranks) {
    sendBegin_.reserve(replayed + 1);
  }

  // Ranks must be added in slot order 0, 1, ..., replayed-1 (rankOfSlot), all of them
  // before the first run.
  void addRank(const Schedule& schedule) {
    const int rank = rankOfSlot(static_cast<int>(sendBegin_.size()));
    const int base = static_cast<int>(nodes_.size());
    sendBegin_.push_back(sends_.size());
    int ordinal = 0;
    const std::vector<bool> folds = rules::foldsIntoPrevious(schedule);
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      const Step& s = schedule.steps[i];
      const int g = base + static_cast<int>(i);
      Node n;
      n.step = static_cast<int>(i);
      n.chained = folds[i];
      n.kind = s.kind;
      n.rank = rank;
      n.peer = s.peer;
      n.count = rules::elementsOf(s);
      if (s.after >= 0 && static_cast<size_t>(s.after) < schedule.steps.size()) {
        n.after = base + s.after;
        n.afterWait = afterWaitOf(schedule, static_cast<int>(i));
      }
      if (!rules::isLocal(s)) {
        if (s.peer < 0 || s.peer >= nranks_) {
          n.match = -2;  // never satisfiable: reported as a deadlock
        } else {
          const rules::QueueOrder::Place place = queues_.link(s, static_cast<int>(i));
          if (place.previous >= 0) n.linkPrev = base + place.previous;
          if (place.message >= 0) {  // empty steps move no bytes: they match nothing
            n.firstOfCall = place.message == 0;
            if (isOutgoing(s.kind)) {
              sends_.push_back({s.peer, g});
              if (s.peer != rank) n.ordinal = ordinal++;
            } else {
              n.match = place.message;
            }
          }
        }
      }
      nodes_.push_back(n);
    }
    // Sends grouped by peer, in order within a peer: the k-th one to b is at
    // lower_bound(b) + k.
    std::stable_sort(sends_.begin() + sendBegin_.back(), sends_.end(),
                     [](const SendRef& a, const SendRef& b) { return a.peer < b.peer; });
    queues_.clear();  // O(queues used)
  }

  // Times one call. Runs again as often as asked, each a call of its own on the same
  // schedules and network (the first run prices, matches and links the steps once; a run
  // only resets what the one before used up: dependency counts, resources, drains).
  // credits: each shared NIC's banked burst at the call's start (out drains, then in
  // drains, densely numbered as priceMessages numbers them); empty: none banked.
  ReplayResult run(const std::vector<double>& credits = {}) {
    if (!prepared_) prepare();
    ReplayResult result;
    result.replayed = nodes_.size();
    result.steps = nodes_.size() * static_cast<size_t>(nranks_ / std::max(replayed_, 1));
    if (incomplete_) {
      result.deadlock = true;
      result.micros = kInfinity;
      return result;
    }
    for (size_t g = 0; g < nodes_.size(); ++g) nodes_[g].pending = pending_[g];
    if (recordBegan_) began_.assign(nodes_.size(), 0);
    events_ = {};
    now_ = 0;
    free_.assign(static_cast<size_t>(ports_ + 1) * replayed_, 0);
    ingressFree_.assign(static_cast<size_t>(ports_) * replayed_, 0);
    nicOutFree_.assign(nics_, 0);
    nicInFree_.assign(nics_, 0);
    nicOutCredit_.assign(nics_, 0);
    nicInCredit_.assign(nics_, 0);
    coreFree_.assign(poolCores_, 0);
    spins_.assign(pool_.spinUs > 0 ? nranks_ : 0, Spin{});
    if (credits.size() == 2 * nics_) {
      std::copy(credits.begin(), credits.begin() + nics_, nicOutCredit_.begin());
      std::copy(credits.begin() + nics_, credits.end(), nicInCredit_.begin());
    }
    // Steps that found their resource (egress port or CPU) busy wait in its line, best
    // earliest start first; one wake event per busy resource sits in the main queue at
    // the time it frees, so resources go to steps in order of when they can start.
    std::vector<std::vector<Entry>> waiting(free_.size());
    std::vector<bool> waking(free_.size(), false);
    for (int g = 0; g < static_cast<int>(nodes_.size()); ++g)
      if (nodes_[g].pending == 0) pushStep(earliest(g), g);
    size_t timed = 0;
    auto wait = [&](int resource, double est, int g) {
      auto& line = waiting[resource];
      line.push_back({est, g});
      std::push_heap(line.begin(), line.end(), std::greater<>());
      if (!waking[resource]) {
        waking[resource] = true;
        pushWake(free_[resource], resource, line.front().second);
      }
    };
    while (!events_.empty()) {
      const Event event = events_.top();
      events_.pop();
      const double time = event.time;
      now_ = time;
      int g = event.id;
      if (g < 0) {  // a resource frees: its best waiter takes it
        const int resource = -1 - g;
        auto& line = waiting[resource];
        // Not free yet, or the best waiter changed since the wake was queued: queue it
        // again, keyed as that waiter, so that ties still go in key order.
        if (free_[resource] > time || !(event.key == tieKey(line.front().second))) {
          pushWake(std::max(time, free_[resource]), resource, line.front().second);
          continue;
        }
        std::pop_heap(line.begin(), line.end(), std::greater<>());
        g = line.back().second;
        line.pop_back();
        if (line.empty())
          waking[resource] = false;
        else
          pushWake(std::max(time, free_[resource]), resource, line.front().second);
      } else {
        const int resource = resourceOf(nodes_[g]);
        if (resource >= 0 && (free_[resource] > time || !waiting[resource].empty())) {
          wait(resource, time, g);
          continue;
        }
      }
      Node& n = nodes_[g];
      schedule(n);
      if (const int resource = resourceOf(n);
          resource >= 0 && !waiting[resource].empty() && !waking[resource]) {
        waking[resource] = true;
        pushWake(free_[resource], resource, waiting[resource].front().second);
      }
      ++timed;
      if (n.finish > result.micros || result.lastRank < 0) {
        result.micros = std::max(result.micros, n.finish);
        result.lastRank = n.rank;
      }
      for (size_t d = depBegin_[g]; d < depBegin_[g + 1]; ++d) {
        int next = dependents_[d];
        if (--nodes_[next].pending == 0) pushStep(earliest(next), next);
      }
    }
    if (timed != nodes_.size()) {
      result.deadlock = true;
      result.micros = kInfinity;
    }
    return result;
  }

  // Each shared NIC's banked burst when the last run's call ends at `end` (run's credits'
  // order):
  // what it banked after its last message plus what it refilled since, at most the bucket.
  // The next runs also keep when each step took its resource (for timeline()).
  void recordBegan() { recordBegan_ = true; }
  void timeline(std::vector<StepTime>& out) const {
    out.clear();
    out.reserve(nodes_.size());
    for (size_t g = 0; g < nodes_.size(); ++g) {
      const Node& n = nodes_[g];
      StepTime t;
      t.rank = n.rank;
      t.step = n.step;
      t.kind = n.kind;
      t.peer = n.peer;
      t.bytes = n.count * elementSize_;
      t.after = n.after >= 0 ? nodes_[n.after].step : -1;
      t.start = g < began_.size() ? began_[g] : n.start;
      t.finish = n.finish;
      out.push_back(t);
    }
  }

  std::vector<double> creditsAt(double end) const {
    std::vector<double> credits;
    for (auto [free, credit] :
         {std::pair{&nicOutFree_, &nicOutCredit_}, {&nicInFree_, &nicInCredit_}})
      for (size_t i = 0; i < nics_; ++i)
        credits.push_back(std::min(burstUs_, (*credit)[i] + std::max(0.0, end - (*free)[i])));
    return credits;
  }

 private:
  // The same for a step and its image under every symmetry map: its place in its rank's
  // schedule and, for a send, the place of its receive in the receiver's (two messages
  // into one rank never share that), so same-time messages into a rank keep their order.
  // Then the sender's and receiver's lanes on their shared NICs: messages through one
  // NIC at one time from (to) different ranks differ there, so a NIC drains them in the
  // same order in full and compressed replays too.
  // What every run shares, once: every message's cost, the receives' sends, the steps'
  // dependents and dependency counts (kept in pending_; a run counts down copies).
  void prepare() {
    prepared_ = true;
    sendBegin_.push_back(sends_.size());
    if (static_cast<int>(sendBegin_.size()) != replayed_ + 1) {
      incomplete_ = true;
      return;
    }
    priceMessages();
    resolveMatches();
    buildDependents();
    pending_.resize(nodes_.size());
    for (size_t g = 0; g < nodes_.size(); ++g) pending_[g] = nodes_[g].pending;
  }

  struct TieKey {
    uint64_t place;
    uint32_t lanes;
    auto operator<=>(const TieKey&) const = default;
  };
  TieKey tieKey(int g) const {
    const Node& n = nodes_[g];
    return {static_cast<uint64_t>(n.step) << 32 | static_cast<uint32_t>(n.recvStep + 1), n.lanes};
  }
  // Never before the time being handled: a CPU step's start is its earliest start, so a
  // step pipelined behind one that waited for the CPU may find its earliest start in the
  // past. Queued there, it would run before everything else at once, an order that
  // depends on which ranks are replayed; at the present it takes its place by key.
  void pushStep(double time, int g) { events_.push({std::max(time, now_), 1, tieKey(g), g}); }
  void pushWake(double time, int resource, int best) {
    events_.push({std::max(time, now_), 0, tieKey(best), -1 - resource});
  }

  struct SendRef {
    int peer;
    int node;
  };

  // Rules 2 and 3, asked the way the engine asks them: what the step may handle while its
  // `after` has handled all of its own elements but is not complete, and whether an empty
  // step may complete then. Expose (rule 4) and unequal counts give 0: wait to complete.
  static AfterWait afterWaitOf(const Schedule& schedule, int index) {
    const Step& s = schedule.steps[index];
    const size_t elements = rules::elementsOf(s);
    if (elements == 0)
      return rules::emptyStepMayComplete(s, false) ? AfterWait::None : AfterWait::Completion;
    const size_t afterElements = rules::elementsOf(schedule.steps[s.after]);
    return rules::allowedElements(schedule, index, afterElements, false) == elements
               ? AfterWait::Elementwise
               : AfterWait::Completion;
  }

  double bytes(const Node& n) const { return static_cast<double>(n.count * elementSize_); }
  // What a message puts on the wire: padded, with the call's header on its queue's first
  // message (rule 5); an Expose's is its record, not the range it describes. A send to
  // oneself is a copy of the data.
  double wireBytes(const Node& n) const {
    const size_t data =
        n.kind == StepKind::Expose ? rules::kExposeRecordBytes : n.count * elementSize_;
    return static_cast<double>(rules::wireBytes(data, n.firstOfCall));
  }
  bool selfMessage(const Node& n) const { return n.peer == n.rank; }

  // Throughput cost of the step's own work, excluding waiting on others.
  double ownCost(const Node& n) const {
    const double b = bytes(n);
    switch (n.kind) {
      case StepKind::Send:
        return selfMessage(n) ? b / copyBytesPerUs_ : n.cost.senderOverheadUs() + n.cost.wireUs;
      case StepKind::Recv:
        return selfMessage(n) ? 0 : n.cost.overheadUs + transportCpu(n) + copyOut(n);
      case StepKind::RecvReduce:
        return (selfMessage(n) ? 0 : n.cost.overheadUs + transportCpu(n)) + b / reduceBytesPerUs_;
      case StepKind::Reduce:
        return fold(n, b);
      case StepKind::Copy:
        return b / copyBytesPerUs_;
      // One-sided: the message is only a description; the reader moves the bytes.
      case StepKind::Expose:
        return selfMessage(n) ? 0 : n.cost.overheadUs;
      // The reader takes the Expose's record off the channel (a receive's overhead), then
      // moves the bytes.
      case StepKind::PeerRead:
        return record(n) + b / copyBytesPerUs_;
      case StepKind::PeerReduce:
        return record(n) + fold(n, b);
      case StepKind::PeerWrite:
        return record(n) + written(n, b);
    }
    return 0;
  }
  // A PeerWrite copies b bytes into the peer's memory. Right behind the step that produced
  // them (element-wise, rule 2: peer_push's writes of the part just folded) it reads them
  // from cache, so of a copy's two streams over memory only the write is left.
  double written(const Node& n, double b) const {
    return (n.afterWait == AfterWait::Elementwise ? b / 2 : b) / copyBytesPerUs_;
  }
  // A reduce of b bytes: a pass over three streams (two sources, the destination); a
  // member of a fold chain (rule 6) adds one source stream to its head's pass. Priced one
  // by one as pairwise reduces, peer_twoshot's fold of n sources cost as much as
  // peer_ring's n - 1 separate folds, and the replay picked peer_ring for memAlloc buffers
  // at np 4, which ran at 0.5-0.66x peer_twoshot there (perf/README.md, bw9).
  double fold(const Node& n, double b) const { return (n.chained ? b / 3 : b) / reduceBytesPerUs_; }
  // An Expose and the peer's read of it exchange a record through the channel, whatever
  // the range (an empty one says "done with yours"): the engine sends and takes it as a
  // message (its overhead at each end).
  bool exchangesRecord(const Node& n) const { return isOneSided(n.kind) && !selfMessage(n); }
  double record(const Node& n) const { return exchangesRecord(n) ? n.cost.overheadUs : 0; }
  // A receive on a link whose sends are the sender's copies into the receiver's memory
  // (MessageCost::onCpu: shm's FIFO) copies the bytes out again on the receiver's CPU (the
  // engine's advanceRecv: memcpy from the channel's peek into the destination); a
  // RecvReduce folds them straight from there, its reduce is the only pass.
  double copyOut(const Node& n) const { return n.cost.onCpu ? bytes(n) / copyBytesPerUs_ : 0; }
  // CPU time of the transport's copy of a message at one end (0 without such a cost).
  double transportCpu(const Node& n) const {
    return transportBytesPerUs_ > 0 ? wireBytes(n) / transportBytesPerUs_ : 0;
  }
  double sliceCost(const Node& n) const { return sliceOf(n, ownCost(n)); }
  // The share of `cost` that the step's last slice takes.
  double sliceOf(const Node& n, double cost) const {
    const double b = bytes(n);
    return b <= sliceBytes_ ? cost : cost * (sliceBytes_ / b);
  }

  // Every message's cost, from the network (flow-level ones first see all the traffic).
  void priceMessages() {
    if (net_.wantsTraffic()) {
      Traffic traffic{nranks_, replayed_, {}, symmetry_, perNode_};
      for (const Node& n : nodes_) {
        if (n.ordinal < 0) continue;
        if (traffic.ordinals.size() <= static_cast<size_t>(n.ordinal))
          traffic.ordinals.resize(n.ordinal + 1);
        traffic.ordinals[n.ordinal].push_back({n.rank, n.peer, wireBytes(n)});
      }
      net_.prepare(traffic);
    }
    for (Node& n : nodes_) {
      if (n.ordinal < 0) continue;
      n.cost = net_.message(n.rank, n.peer, n.ordinal, wireBytes(n));
      // With a core pool, o and g (figures at the call's share) run at a whole core; a
      // sender's own o (MessageCost::sendOverheadUs) is a whole core's already.
      if (poolCores_ > 0 && !pool_.overheadAtCallShare) {
        n.cost.overheadUs *= poolScale_;
        n.cost.gapUs *= poolScale_;
      }
    }
    // The shared NICs of the replayed ranks (a receiver's is its class representative's),
    // densely numbered.
    std::unordered_map<int, int> dense;
    auto drain = [&](const NicPlace& place) {
      return place.nic < 0 ? -1 : dense.try_emplace(place.nic, int(dense.size())).first->second;
    };
    for (Node& n : nodes_) {
      if (n.ordinal < 0 || n.cost.nicUs <= 0) continue;
      const NicPlace out = net_.sharedNic(n.rank);
      const NicPlace in = net_.sharedNic(rankOfSlot(slotOf(n.peer)));
      n.nicOut = drain(out);
      n.nicIn = drain(in);
      n.lanes = static_cast<uint32_t>(out.lane) << 16 | static_cast<uint32_t>(in.lane);
    }
    nics_ = dense.size();
  }

  // The replayed ranks by slot: with Shift and Xor slot = rank (0..replayed-1); with
  // Rotate the ranks n G + l, l < u, in order.
  int rankOfSlot(int slot) const {
    return symmetry_ == Symmetry::Rotate ? slot / unit_ * perNode_ + slot % unit_ : slot;
  }
  // The slot of the replayed rank whose class holds rank q (q mod replayed, or for Rotate
  // n G + l mod u).
  int slotOf(int q) const {
    if (symmetry_ != Symmetry::Rotate) return q % replayed_;
    return q / perNode_ * unit_ + q % perNode_ % unit_;
  }

  // A receive at rank r from q takes the matching send of q's class representative q0,
  // sent to r mapped back the way q0 maps to q: r - (q - q0), r xor (q - q0), or r turned
  // within its node by -(q - q0) (no map without compression).
  void resolveMatches() {
    for (Node& n : nodes_) {
      if (!isIncoming(n.kind) || n.match < 0) continue;
      const int from = slotOf(n.peer), shift = n.peer - rankOfSlot(from);
      const int to = symmetry_ == Symmetry::Xor      ? n.rank ^ shift
                     : symmetry_ == Symmetry::Rotate ? rotateLocal(n.rank, -shift, perNode_)
                                                     : wrapRank(n.rank - shift, nranks_);
      const int seq = n.match;
      auto begin = sends_.begin() + sendBegin_[from], end = sends_.begin() + sendBegin_[from + 1];
      auto first = std::lower_bound(begin, end, to,
                                    [](const SendRef& s, int peer) { return s.peer < peer; });
      if (end - first > seq && first[seq].peer == to) {
        n.match = first[seq].node;
        n.cost = nodes_[n.match].cost;
        nodes_[n.match].recvStep = n.step;
      } else {
        n.match = -2;
      }
    }
  }

  void buildDependents() {
    const size_t count = nodes_.size();
    depBegin_.assign(count + 1, 0);
    auto forEachDep = [&](auto&& f) {
      for (size_t g = 0; g < count; ++g) {
        const Node& n = nodes_[g];
        if (n.linkPrev >= 0) f(n.linkPrev, g);
        if (n.after >= 0 && n.afterWait != AfterWait::None) f(n.after, g);
        if (!isOutgoing(n.kind) && n.match >= 0) f(n.match, g);  // empty: one-sided only
      }
    };
    forEachDep([&](int dep, size_t) { ++depBegin_[dep + 1]; });
    for (size_t g = 0; g < count; ++g) depBegin_[g + 1] += depBegin_[g];
    dependents_.resize(depBegin_[count]);
    std::vector<size_t> fill(depBegin_.begin(), depBegin_.end() - 1);
    forEachDep([&](int dep, size_t g) {
      dependents_[fill[dep]++] = static_cast<int>(g);
      ++nodes_[g].pending;
    });
    for (Node& n : nodes_)
      if (n.match == -2) ++n.pending;  // unmatched receive: never ready
  }

  // Earliest start from the dependencies; records the earliest finish they allow.
  double earliest(int g) {
    Node& n = nodes_[g];
    double est = 0, efin = 0;
    if (n.linkPrev >= 0) est = nodes_[n.linkPrev].finish;
    if (n.after >= 0) {
      const Node& p = nodes_[n.after];
      if (n.afterWait == AfterWait::Elementwise) {
        est = std::max(est, p.start);
        efin = std::max(efin, p.finish + sliceCost(n));
      } else if (n.afterWait == AfterWait::Completion) {
        est = std::max(est, p.finish);
      }
    }
    if (!isOutgoing(n.kind) && n.match >= 0) {
      const Node& s = nodes_[n.match];
      const double latency = selfMessage(s) ? 0 : s.cost.latencyUs;
      est = std::max(est, s.start + latency);
      efin = std::max(efin, s.finish + latency + sliceCost(n));
    }
    n.earliestStart = est;
    n.earliestFinish = efin;
    return est;
  }

  // Resources of rank r: (ports + 1) r + 1 is its CPU, (ports + 1) r the egress port 0,
  // (ports + 1) r + 1 + k port k >= 1. -1: no resource (empty, or a plain receive).
  int cpuOf(int rank) const { return (ports_ + 1) * slotOf(rank) + 1; }
  int resourceOf(const Node& n) const {
    if ((n.count == 0 && !exchangesRecord(n)) || ownCost(n) == 0) return -1;
    if (!isOutgoing(n.kind) || selfMessage(n) || n.cost.onCpu) return cpuOf(n.rank);
    return (ports_ + 1) * slotOf(n.rank) + (n.cost.port == 0 ? 0 : n.cost.port + 1);
  }

  void schedule(Node& n) {
    const int resource = resourceOf(n);
    n.start = n.earliestStart;
    if (resource < 0) {
      if (recordBegan_) began_[static_cast<size_t>(&n - nodes_.data())] = n.start;
      n.finish = std::max(n.earliestFinish, n.start);
      return;
    }
    double cost = ownCost(n);
    double start = std::max(n.earliestStart, free_[resource]);
    // A step on its rank's CPU runs once it holds one of the host's cores (a pool).
    const bool onCore = poolCores_ > 0 && resource % (ports_ + 1) == 1;
    if (onCore) start = takeCore(start, n.rank);
    if (recordBegan_) began_[static_cast<size_t>(&n - nodes_.data())] = start;
    const bool message = isOutgoing(n.kind) && !selfMessage(n);
    // Shaped NICs (NetworkModel::nicBurstUs): each bucket banks its NIC's idle time, up to
    // the burst; a message through them takes what both hold (a byte passes the sender's
    // shaper and the receiver's) at once, and the rest (`paced`, a share of its bytes) at
    // its rate: at its flow's share on the port, its intake, the NICs' rate in the drains.
    double taken = 0, paced = 1;
    if (message && burstUs_ > 0 && n.cost.nicUs > 0) {
      taken = n.cost.nicUs;
      for (auto [nic, drains, credits] : {std::tuple{n.nicOut, &nicOutFree_, &nicOutCredit_},
                                          {n.nicIn, &nicInFree_, &nicInCredit_}}) {
        if (nic < 0) continue;
        double &free = (*drains)[nic], &credit = (*credits)[nic];
        const double at = std::max(free, start);
        credit = std::min(burstUs_, credit + (at - free));
        free = at;
        taken = std::min(taken, credit);
      }
      for (auto [nic, credits] : {std::pair{n.nicOut, &nicOutCredit_}, {n.nicIn, &nicInCredit_}})
        if (nic >= 0) (*credits)[nic] -= taken;
      paced = 1 - taken / n.cost.nicUs;
      cost -= n.cost.wireUs * (1 - paced);
      // A send pipelined behind its producer finishes no earlier than the producer's
      // finish plus its last slice (earliest()); that slice passes the buckets too.
      if (n.afterWait == AfterWait::Elementwise)
        n.earliestFinish = nodes_[n.after].finish + sliceOf(n, cost);
    }
    if (onCore) cost = holdCore(start, cost, n.rank);  // what the shaper left of it
    // The sender's next message on this port (or CPU) starts no earlier than g after this
    // one (MessageCost::gapUs); the message itself is done at start + cost.
    free_[resource] = start + (message ? std::max(cost, n.cost.gapUs) : cost);
    n.finish = std::max(n.earliestFinish, start + cost);
    if (message) {
      // The sender's port (or its CPU: MessageCost::onCpu) is held; the receiver's port
      // drains what arrives in order, so a busy receiver delays when the bytes are
      // through, not when the sender is free.
      n.start = start;
      // It takes them at its own intake (a shared rate is the NIC drains' below).
      double& ingress = ingressFree_[static_cast<size_t>(ports_) * slotOf(n.peer) + n.cost.port];
      ingress = std::max(ingress, start) + n.cost.overheadUs + n.cost.intakeUs * paced;
      n.finish = std::max(n.finish, ingress);
      // A NIC several ranks share (or a shaped one) carries every message through it in
      // arrival order at its whole rate, out and in, whichever steps (ordinals) they
      // belong to.
      for (auto [nic, drains] : {std::pair{n.nicOut, &nicOutFree_}, {n.nicIn, &nicInFree_}}) {
        if (nic < 0) continue;
        double& free = (*drains)[nic];
        free = std::max(free, start) + (n.cost.nicUs - taken);
        n.finish = std::max(n.finish, free);
      }
      // The sender's CPU copies the bytes into the transport while the port sends them, and
      // spends its o there where it holds a core for it (MessageCost::sendOverheadOnCpu).
      const double senderCpu =
          transportCpu(n) +
          (n.cost.sendOverheadOnCpu() && !n.cost.onCpu ? n.cost.senderOverheadUs() : 0);
      if (senderCpu > 0) {
        double& cpu = free_[cpuOf(n.rank)];
        cpu = std::max(cpu, start);
        if (poolCores_ > 0) {
          cpu = takeCore(cpu, n.rank);
          cpu += holdCore(cpu, senderCpu, n.rank);
        } else {
          cpu += senderCpu;
        }
        n.finish = std::max(n.finish, cpu);
      }
    }
  }

  const int nranks_, replayed_;
  const Symmetry symmetry_;
  const int perNode_, unit_;  // Rotate: ranks a node, replayed ranks a node (else 1, 1)
  const size_t elementSize_;
  NetworkModel& net_;
  const int ports_;
  const double sliceBytes_;
  // The host's cores as a pool (NetworkModel::poolCores; 0: none): a CPU charge of `rank`
  // that may start at `at` takes the core that frees latest by then (else the first to
  // free), first come first served in event order; returns when it begins there. With
  // waiting ranks that keep their cores (CorePool::spinUs), a free core where fewer of
  // them yield comes first, and `rank` stops yielding (it has work).
  double takeCore(double at, int rank) {
    if (!spins_.empty()) spins_[rank].until = std::min(spins_[rank].until, at);
    if (pool_.bound) {  // the engine's binding: rank r on core r mod cores
      lastCore_ = static_cast<size_t>(rank % poolCores_);
      return std::max(at, coreFree_[lastCore_]);
    }
    size_t best = 0;
    int bestYielders = yieldersOn(0, at, rank);
    for (size_t c = 1; c < coreFree_.size(); ++c) {
      const bool fits = coreFree_[c] <= at, bestFits = coreFree_[best] <= at;
      const int yielders = fits && bestFits ? yieldersOn(c, at, rank) : 0;
      if (fits != bestFits                   ? fits
          : fits && yielders != bestYielders ? yielders < bestYielders
          : fits                             ? coreFree_[c] > coreFree_[best]
                                             : coreFree_[c] < coreFree_[best]) {
        best = c;
        bestYielders = yieldersOn(c, at, rank);
      }
    }
    lastCore_ = best;
    return std::max(at, coreFree_[best]);
  }
  // `rank`'s charge of `work` (at a whole core) runs on the core takeCore gave from `begin`;
  // returns how long it takes. Alone there, `work`. Where k waiting ranks yield on that core
  // it runs at 1 / (1 + k) of it until each one's spin ends (the kernel's fair share among
  // runnable threads; each spin as known at `begin`). Then `rank` waits on that core,
  // yielding, for spinUs.
  double holdCore(double begin, double work, int rank) {
    double took = work;
    if (!spins_.empty()) {
      std::vector<double>& ends = spinEnds_;
      ends.clear();
      for (int r = 0; r < nranks_; ++r) {
        const Spin& w = spins_[r];
        if (r != rank && w.core == lastCore_ && w.from <= begin && w.until > begin)
          ends.push_back(w.until);
      }
      std::sort(ends.begin(), ends.end());
      double t = begin, left = work;
      size_t k = ends.size(), i = 0;
      for (; i < ends.size() && left > (ends[i] - t) / double(1 + k); ++i, --k) {
        left -= (ends[i] - t) / double(1 + k);
        t = ends[i];
      }
      if (!ends.empty()) took = t + left * double(1 + k) - begin;
      spins_[rank] = {lastCore_, begin + took, begin + took + pool_.spinUs};
    }
    coreFree_[lastCore_] = begin + took;
    return took;
  }
  // How many other ranks wait, yielding, on core c at `at`.
  int yieldersOn(size_t c, double at, int rank) const {
    int k = 0;
    for (int r = 0; r < static_cast<int>(spins_.size()); ++r)
      k += r != rank && spins_[r].core == c && spins_[r].from <= at && spins_[r].until > at;
    return k;
  }
  // A figure at the call's share as a whole core of the pool runs it (poolCores / nranks
  // of its time); as given without a pool.
  double atWholeCore(double bytesPerUs) const { return bytesPerUs / poolScale_; }

  const NetworkModel::CorePool pool_;
  const int poolCores_;
  const double poolScale_;  // poolCores / nranks with a pool, else 1
  const double reduceBytesPerUs_, copyBytesPerUs_;
  const double transportBytesPerUs_;
  std::vector<double> coreFree_;  // when each of the pool's cores frees
  // A waiting rank yielding on `core` from `from` until `until` (CorePool::spinUs), by rank.
  struct Spin {
    size_t core = 0;
    double from = 0, until = 0;
  };
  std::vector<Spin> spins_;
  std::vector<double> spinEnds_;  // holdCore's scratch
  size_t lastCore_ = 0;           // the core takeCore gave last
  const double burstUs_;          // NetworkModel::nicBurstUs
  std::vector<Node> nodes_;
  std::vector<SendRef> sends_;
  std::vector<size_t> sendBegin_;
  rules::QueueOrder queues_;  // rule 1: each message step's place in its peer queue
  std::vector<size_t> depBegin_;
  std::vector<int> dependents_;
  using Entry = std::pair<double, int>;  // a resource's line: (earliest start, step)
  // Events at one time go wakes first, then by tieKey: a receiver's ingress port takes
  // messages that start together in the order their events run, and that order must be
  // the same in a compressed replay as in the full one (node indices are not: a class's
  // representative stands for ranks numbered before and after others).
  struct Event {
    double time;
    int isStep;  // 0: a wake, 1: a step
    TieKey key;
    int id;  // the step, or -1 - resource for a wake
    auto operator<=>(const Event&) const = default;
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<double> free_, ingressFree_;
  std::vector<double> nicOutFree_, nicInFree_;      // shared NICs: when each drains
  std::vector<double> nicOutCredit_, nicInCredit_;  // and what each has banked then
  size_t nics_ = 0;
  double now_ = 0;                              // the time of the event being handled
  bool prepared_ = false, incomplete_ = false;  // prepare() done; some rank never added
  std::vector<int> pending_;                    // each step's dependencies, before a run
  bool recordBegan_ = false;  // timeline asked for: began_[g] is when step g took its resource
  std::vector<double> began_;
};

}  // namespace

ReplayResult replay(std::span<const Schedule> schedules, size_t elementSize, NetworkModel& net,
                    int nranks, size_t sliceBytes, Symmetry symmetry, int perNode,
                    std::vector<StepTime>* timeline) {
  const int replayed = static_cast<int>(schedules.size());
  if (nranks <= 0) nranks = replayed;
  // Rotate: whole nodes of perNode ranks, the same number u | perNode replayed in each.
  const bool badRotation =
      symmetry == Symmetry::Rotate &&
      (replayed == 0 || perNode <= 0 || nranks % perNode != 0 ||
       replayed % (nranks / perNode) != 0 || perNode % (replayed / (nranks / perNode)) != 0);
  // A pool of host cores couples every rank to every other: no map keeps it
  // (NetworkModel::poolCores), so it is replayed in full or not at all.
  const bool pooledCompression = replayed < nranks && net.poolCores(nranks) > 0;
  if (replayed == 0 || nranks % replayed != 0 || badRotation || pooledCompression) {
    ReplayResult bad;
    bad.deadlock = true;
    bad.micros = kInfinity;
    return bad;
  }
  // With a shaper's bucket on the NICs (nicBurstUs), the call is timed in steady state, as
  // measured: one of many back to back, each starting with what the one before left
  // banked. From an empty bucket, kBurstWarmup calls, then the mean of the next
  // kBurstRounds (calls may alternate: one that starts with more banked leaves less); a
  // call that leaves what it started with is the steady state itself.
  constexpr int kBurstWarmup = 4, kBurstRounds = 4;
  std::vector<double> credits;
  double sum = 0;
  Replay replay(nranks, replayed, elementSize, net, sliceBytes, symmetry, perNode);
  for (const Schedule& s : schedules) replay.addRank(s);
  if (timeline) replay.recordBegan();
  auto done = [&](const ReplayResult& result) {
    if (timeline) replay.timeline(*timeline);
    return result;
  };
  for (int round = 0;; ++round) {
    ReplayResult result = replay.run(credits);
    if (net.nicBurstUs() <= 0 || result.deadlock) return done(result);
    std::vector<double> next = replay.creditsAt(result.micros);
    if (next == credits) return done(result);
    if (round >= kBurstWarmup) {
      sum += result.micros;
      if (round + 1 == kBurstWarmup + kBurstRounds) {
        result.micros = sum / kBurstRounds;
        return done(result);
      }
    }
    credits = std::move(next);
  }
}

}  // namespace chorus::sim
