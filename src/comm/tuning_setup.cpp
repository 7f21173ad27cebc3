// How a communicator gets the figures its tuner works from (see tuner/tuning.hpp).
#include "comm/comm_impl.hpp"
#include "log.hpp"
#include "net/socket.hpp"
#include "settings/settings.hpp"
#include "topology/topology.hpp"
#include "transports/shm/fifo_segment.hpp"
#include "tuner/local_rates.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace chorus::detail {
namespace {

constexpr size_t kSmallProbe = 8;
constexpr size_t kLargeProbe = 256 << 10;
// After one warm-up round each, per block (kProbeBlocks within a node). The large rounds
// give the bandwidth from their fastest (linkFromProbe): 12 of ~0.3-0.7 ms in all (4 a
// block within a node), so that a few ms of another tenant on a core leave some rounds
// untouched (4 rounds stalled together in some probes).
constexpr int kSmallRounds = 16, kLargeRounds = 12;

// The median round: what a collective typically pays. The best round is the luckiest
// moment, where ranks sharing cores happened to run together; with more ranks than cores
// (or a loaded machine) the typical step waits for a peer to get a core, and the best-of
// figures made the model undercharge each message against each byte.
double median(std::vector<double> rounds) {
  std::sort(rounds.begin(), rounds.end());
  return rounds.empty() ? 0 : rounds[rounds.size() / 2];
}

// The line rate of the NICs this rank's TCP traffic may use (CHORUS_SOCKET_IFNAME, as the
// transport picks them; sysfs or CHORUS_TOPO_FILE speeds), in bytes per us; 0 if unknown.
double nicBytesPerUs() {
  try {
    const topo::Topology t = topo::detect();
    const std::string spec = settings::text("CHORUS_SOCKET_IFNAME");
    std::vector<std::string> names = net::findInterfaceNames(spec);
    if (spec.empty() && names.size() > 1) names.resize(1);  // the transport uses the first
    double mbps = 0;
    for (const std::string& name : names)
      for (const topo::Nic& nic : t.nics)
        if (nic.name == name && nic.up && nic.speedMbps > 0) mbps += nic.speedMbps;
    return mbps / 8;  // Mbit/s -> bytes per us
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

// Ping-pong with `peer` (-1: sit out), every pair at once, so the figures include the
// contention of ranks sharing cores and memory as they do during a collective; rank 0's
// pair is the one used. Round trips (median of a few, and the fastest), what linkFromProbe
// solves:
//   1 x 8 B each way:              2 (L + 2o)
//   k x 8 B there, 1 x 8 B back:   2L + (k + 3) o, k = 4, 8  -> o, the slope over k
//   1 x 256 KiB each way:          2 (L + 2o + 256 KiB / bandwidth)
// A few ms on shared memory, ~5-10 ms on loopback TCP.
ProbeTimes CommImpl::probeTimes(int peer, int largeRounds) {
  ProbeTimes t;
  if (peer < 0 || peer == rank_) return t;
  std::vector<std::byte> out(kLargeProbe), in(kLargeProbe);
  // One round: `burst` x `bytes` from the lower rank, one back; us.
  auto timeRound = [&](size_t bytes, int burst) {
    Call send{Collective::Send, out.data(), nullptr, bytes, DataType::Uint8, RedOp::Sum, peer};
    Call recv{Collective::Recv, nullptr, in.data(), bytes, DataType::Uint8, RedOp::Sum, peer};
    const auto start = Clock::now();
    if (rank_ < peer) {  // the lower rank starts
      std::vector<Work> sent;
      for (int k = 0; k < burst; ++k) sent.push_back(submit(send));
      for (Work& w : sent) w.wait(timeout_);
      submit(recv).wait(timeout_);
    } else {
      std::vector<Work> received;
      for (int k = 0; k < burst; ++k) received.push_back(submit(recv));
      for (Work& w : received) w.wait(timeout_);
      submit(send).wait(timeout_);
    }
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  };
  // The median round, and the fastest into *best when asked.
  auto summarize = [](const std::vector<double>& times, double* best) {
    if (best) *best = times.empty() ? 0 : *std::min_element(times.begin(), times.end());
    return median(times);
  };
  auto roundTrip = [&](size_t bytes, int burst, int rounds, double* best = nullptr) {
    std::vector<double> times;
    for (int i = 0; i <= rounds; ++i) {  // round 0 warms up
      const double us = timeRound(bytes, burst);
      if (i > 0) times.push_back(us);
    }
    return summarize(times, best);
  };
  t.smallBytes = kSmallProbe;
  t.largeBytes = kLargeProbe;
  t.burst = 8;
  t.midBurst = t.burst / 2;
  // The single 8 B rounds as they always ran (16 in a row: their median is the half round
  // trip L + 2 o, which the bed's recordings agree with), then the bursts of midBurst and
  // burst messages interleaved, so that a moment's waits for a core fall on both alike.
  // (Interleaving the single rounds with them too made their median 1.7x slower on the 3x2
  // bed, 154 against 92 us: the L + 2 o of the recordings is the one-after-another figure.)
  std::vector<double> ones, mids, bursts;
  for (int i = 0; i <= kSmallRounds; ++i) {  // round 0 warms up
    const double one = timeRound(kSmallProbe, 1);
    if (i > 0) ones.push_back(one);
  }
  for (int i = 0; i <= kSmallRounds / 2; ++i) {
    const double mid = timeRound(kSmallProbe, t.midBurst), full = timeRound(kSmallProbe, t.burst);
    if (i > 0) mids.push_back(mid), bursts.push_back(full);
  }
  t.one = summarize(ones, &t.oneBest);
  t.midBurstTrip = summarize(mids, &t.midBurstBest);
  t.burstTrip = summarize(bursts, &t.burstBest);
  t.large = roundTrip(kLargeProbe, 1, largeRounds, &t.largeBest);
  return t;
}

// Every rank of `ranks` (this one among them, all calling) sends 8 B to each of the others
// and receives 8 B from each, all at once: the step of a one-shot or two-shot all-reduce.
// With more ranks than cores each of those messages waits for its sender to get a core,
// which the ping-pong between two running ranks never sees. Microseconds of the median of
// a few rounds, after one warm-up round.
double CommImpl::probeExchange(const std::vector<int>& ranks) {
  std::vector<std::byte> out(kSmallProbe), in(kSmallProbe * ranks.size());
  std::vector<double> times;
  for (int i = 0; i <= kSmallRounds / 2; ++i) {
    const auto start = Clock::now();
    std::vector<Work> pending;
    for (size_t k = 0; k < ranks.size(); ++k) {
      if (ranks[k] == rank_) continue;
      pending.push_back(submit({Collective::Send, out.data(), nullptr, kSmallProbe, DataType::Uint8,
                                RedOp::Sum, ranks[k]}));
      pending.push_back(submit({Collective::Recv, nullptr, in.data() + k * kSmallProbe, kSmallProbe,
                                DataType::Uint8, RedOp::Sum, ranks[k]}));
    }
    for (Work& w : pending) w.wait(timeout_);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (i > 0) times.push_back(us);
  }
  return median(std::move(times));
}

void CommImpl::setUpTuner(int localRanks, int cores, const std::vector<bool>& onThisMachine,
                          size_t sliceBytes) {
  const LinkClass link = parseLinkClass(transport_->name()).value_or(LinkClass::Tcp);
  // Deterministic: nothing measured may sway the choice, so the thresholds decide.
  const bool deterministic = options_.deterministic || settings::boolean("CHORUS_DETERMINISTIC");
  const Tuner::Mode mode = deterministic ? Tuner::Mode::Static : tunerModeFromEnv();
  tuner_ = std::make_unique<Tuner>(nranks_, defaultTuning(link), mode, nullptr, std::nullopt,
                                   sliceBytes);
  if (mode == Tuner::Mode::Static || nranks_ == 1) return;
  // Probe partners: local index i^1 on this node, and the same local index on node a^1.
  const int node = layout_.nodeOf(rank_), local = layout_.localIndex(rank_);
  auto rankAt = [&](int n, int i) {
    if (n >= layout_.nodes()) return -1;
    const auto& ranks = layout_.ranksOf(n);
    return i < static_cast<int>(ranks.size()) ? ranks[i] : -1;
  };
  const bool severalNodes = layout_.nodes() > 1;
  std::optional<LinkModel> inter;
  if (severalNodes) inter = defaultLinkModel(link);

  const std::string file = settings::text("CHORUS_TUNE_FILE");
  const bool probe = settings::boolean("CHORUS_TUNE_PROBE");
  // Rank 0 decides where the figures come from; every rank learns it from the store so
  // that all take part in the probe or none does.
  std::string plan;
  Tuning tuning = defaultTuning(link);
  if (rank_ == 0) {
    plan = probe ? "probe" : "defaults";
    try {
      if (!file.empty()) {
        if (auto entry = pickTuning(readTuneFile(file), link, localRanks)) {
          tuning = *entry;
          tuning.source = file + " (" + std::to_string(entry->ranks) + " ranks)";
          plan = "file";
        } else {
          logf(LogLevel::Warn, "%s has no entry for link %s: %s", file.c_str(), toString(link),
               probe ? "probing instead" : "using the defaults");
        }
      }
    } catch (const Error& e) {
      plan = std::string("error:") + e.what();  // every rank fails with rank 0's reason
    }
    store_->set("tune/plan", std::as_bytes(std::span(plan)));
  } else {
    auto bytes = store_->get("tune/plan", Clock::now() + timeout_);
    plan.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  if (plan.starts_with("error:"))
    throw Error(Result::InvalidArgument, "CHORUS_TUNE_FILE: " + plan.substr(6));
  if (plan == "probe") {
    const auto start = Clock::now();
    // Small rounds that stalled on rank 0 (smallRoundsStalled) say nothing of the link:
    // every rank runs its rounds again, as rank 0 says through the store, a few times at most.
    int tries = 0;
    // A step to several peers (one-shot, two-shot) waits on more ranks than the ping-pong
    // does: time one (linkFromProbe weighs it).
    const std::vector<int>& onNode = layout_.ranksOf(node);
    std::vector<int> group;
    for (int i : exchangeGroup(local, static_cast<int>(onNode.size()))) group.push_back(onNode[i]);
    // Every rank runs the same blocks (the ping-pong and the exchange are collective over the
    // node); rank 0's quietest block of each time is the one used (quietestOfBlocks).
    auto probeBlock = [&] {
      // What the waits learnt in the block before (or the creation's rendezvous) must not
      // decide this block's: a YieldPolicy that learnt to sleep made the next block's 8 B
      // round trips futex wake-ups (np 4, load 4-13, tuner_accuracy probes: the third block
      // steady in 5 of 5 with the reset, 2 of 5 without; perf/README.md, tuner13).
      engine_->resetYieldPolicy();
      ProbeTimes t = probeTimes(rankAt(node, local ^ 1), kLargeRounds / kProbeBlocks);
      if (group.size() > 2) {
        t.exchangeRanks = static_cast<int>(group.size());
        t.exchange = probeExchange(group);
      }
      return t;
    };
    // Rank 0 decides whether the blocks run again (its pair's times are the ones used) and
    // every rank learns it through the store under `key`, so that all run them or none does.
    auto rank0Says = [&](const std::string& key, const std::function<bool()>& againOnRank0) {
      if (rank_ == 0) {
        const bool again = againOnRank0();
        const std::string verdict = again ? "again" : "done";
        store_->set(key, std::as_bytes(std::span(verdict)));
        return again;
      }
      auto bytes = store_->get(key, Clock::now() + timeout_);
      return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()) == "again";
    };
    int unsteadyVerdicts = 0;  // keys tune/unsteady/N over every try of the probe
    auto probeBlocks = [&] {
      const std::vector<ProbeTimes> blocks = probeBlocksUntilSteady(
          probeBlock,
          [&](const std::vector<ProbeTimes>& sofar) {
            return rank0Says("tune/unsteady/" + std::to_string(unsteadyVerdicts++), [&] {
              if (!needsAnotherBlock(sofar)) return false;
              logf(LogLevel::Info,
                   "tuning probe: no block's 8 B round trips steady (median <= %.1fx fastest; "
                   "last %.2f, best %.2f us): another block",
                   kSteadyMedianOverBest, sofar.back().one, sofar.back().oneBest);
              return true;
            });
          },
          kExtraProbeBlocks);
      if (rank_ == 0)
        for (const ProbeTimes& t : blocks)
          logf(LogLevel::Info,
               "tuning probe block (us): 8 B %.2f (best %.2f%s), %d x 8 B %.2f (best %.2f), "
               "%d x 8 B %.2f (best %.2f), 256 KiB %.1f (best %.1f), exchange %.2f",
               t.one, t.oneBest, smallRoundsSteady(t) ? ", steady" : "", t.midBurst, t.midBurstTrip,
               t.midBurstBest, t.burst, t.burstTrip, t.burstBest, t.large, t.largeBest, t.exchange);
      return quietestOfBlocks(blocks);
    };
    ProbeTimes times = probeUntilSettled(
        probeBlocks,
        [&](const ProbeTimes& t, int attempt) {
          return rank0Says("tune/stalled/" + std::to_string(attempt), [&] {
            if (!smallRoundsStalled(t)) return false;
            logf(LogLevel::Info,
                 "tuning probe: the 8 B round trips stalled (best %.2f us, 256 KiB best "
                 "%.1f us): probing again (%d of %d)",
                 t.oneBest, t.largeBest, attempt + 1, kStalledProbeRetries);
            return true;
          });
        },
        kStalledProbeRetries, &tries);
    if (rank_ == 0)
      logf(LogLevel::Info,
           "tuning probe round trips (us): 8 B %.2f (best %.2f), %d x 8 B %.2f (best %.2f), "
           "%d x 8 B %.2f (best %.2f), 256 KiB %.1f (best %.1f); exchange of 8 B among %d "
           "ranks %.2f",
           times.one, times.oneBest, times.midBurst, times.midBurstTrip, times.midBurstBest,
           times.burst, times.burstTrip, times.burstBest, times.large, times.largeBest,
           times.exchangeRanks, times.exchange);
    // The share of a core each rank gets in a call, where every rank of the machine is busy
    // (the bed's netns nodes share one machine's cores), and in the probe's rounds: the
    // ping-pongs keep one rank of each pair busy at a time, the exchange every rank of the
    // nodes that run one. A message's overhead is CPU time, so the tuner charges it at the
    // call's share (LinkModel::callOverheadUs), as the simulator does.
    const int nranksAll = static_cast<int>(onThisMachine.size());
    auto busyOnMachine = [&](const std::function<bool(int)>& busy) {
      double n = 0;
      for (int r = 0; r < nranksAll; ++r) n += onThisMachine[r] && busy(r);
      return n;
    };
    const double coreShare = coreShareOf(cores, busyOnMachine([](int) { return true; }));
    auto pairedShare = [&](const std::function<int(int)>& partnerOf) {
      return coreShareOf(cores, busyOnMachine([&](int r) { return partnerOf(r) >= 0; }) / 2);
    };
    times.pingPongShare =
        pairedShare([&](int r) { return rankAt(layout_.nodeOf(r), layout_.localIndex(r) ^ 1); });
    times.exchangeShare = coreShareOf(
        cores, busyOnMachine([&](int r) {
          const int onItsNode = static_cast<int>(layout_.ranksOf(layout_.nodeOf(r)).size());
          return exchangeGroup(layout_.localIndex(r), onItsNode).size() > 2;
        }));
    std::string note;
    tuning.model = linkFromProbe(times, tuning.model, &note);
    if (rank_ == 0) logf(LogLevel::Info, "tuning probe within a node: %s", note.c_str());
    tuning.model.callShare = coreShare;
    if (severalNodes) {
      // The medians between nodes (largeBest unset): the fastest-round rate is measured
      // within a node only (shm's stalled rounds); a shaper's burst would inflate it there.
      ProbeTimes across = probeTimes(rankAt(node ^ 1, local), kLargeRounds);
      across.largeBest = 0;
      across.pingPongShare =
          pairedShare([&](int r) { return rankAt(layout_.nodeOf(r) ^ 1, layout_.localIndex(r)); });
      inter = linkFromProbe(across, tuning.model, &note);
      if (rank_ == 0)
        logf(LogLevel::Info,
             "tuning probe between nodes (us): 8 B %.2f (best %.2f), %d x 8 B %.2f (best %.2f), "
             "%d x 8 B %.2f (best %.2f), 256 KiB %.1f; %s",
             across.one, across.oneBest, across.midBurst, across.midBurstTrip, across.midBurstBest,
             across.burst, across.burstTrip, across.burstBest, across.large, note.c_str());
      // A short probe fits in a rate limiter's burst (or a switch's buffers): the NICs'
      // line rate, when known, bounds what it measured. tcp's ranks share the interface the
      // transport picks, one per node: every local index with a partner on node ^ 1 probed
      // at once (rank 0's figures are the ones used: its node's count). The RDMA
      // transports keep a port per rank (a rail's NIC each, as the line cap assumes).
      const double line = nicBytesPerUs();
      const int node0 = layout_.nodeOf(0), partner = node0 ^ 1;
      const int concurrent = partner < layout_.nodes()
                                 ? static_cast<int>(std::min(layout_.ranksOf(node0).size(),
                                                             layout_.ranksOf(partner).size()))
                                 : 1;
      if (link == LinkClass::Tcp) {
        nicFromProbe(*inter, concurrent, line);
        // A shaper's burst the probe cannot tell from the line (its 256 KiB fits in it).
        inter->nicBurstBytes = static_cast<double>(settings::bytes("CHORUS_NIC_BURST"));
      } else if (line > 0 && inter->bytesPerUs > line)
        inter->bytesPerUs = line;
    }
    // tcp's copies through the kernel, on the CPU at both ends (no extra probe: the
    // loopback ping-pong's fastest rounds give that copy's rate).
    transportFromProbe(link, times, coreShare, tuning.model, inter ? &*inter : nullptr);
    nextSequence_ = 0;  // the probe's sends are not the user's collectives
    engine_->restartTrace();
    if (rank_ == 0) {
      measureLocalRates(tuning, coreShare);
      sendsAtCopyRate(tuning.model);  // shm: a send is the rank's copy into the FIFO
      tuning.ranks = localRanks;
      tuning.source = "probe";
      logf(LogLevel::Info, "tuning probe took %.1f ms (%d %s of the round trips)",
           std::chrono::duration<double, std::milli>(Clock::now() - start).count(), tries,
           tries == 1 ? "run" : "runs");
    }
  }
  // Rank 0's figures for every rank: "<intra line>\n[<inter line>]\n<source>". Every
  // rank, rank 0 included, decides from the parsed text: the text rounds the figures,
  // and a choice between two algorithms predicted almost alike must not differ by rank.
  std::string text;
  if (rank_ == 0) {
    Tuning between = tuning;
    if (inter) between.model = *inter;
    text = tuning.toLine() + "\n" + (inter ? between.toLine() : "") + "\n" + tuning.source;
    store_->set("tune/figures", std::as_bytes(std::span(text)));
    logf(LogLevel::Info, "tuning (%s): %s", tuning.source.c_str(), tuning.toLine().c_str());
    if (inter)
      logf(LogLevel::Info, "tuning between nodes (%d nodes): %s", layout_.nodes(),
           between.toLine().c_str());
  } else {
    auto bytes = store_->get("tune/figures", Clock::now() + timeout_);
    text.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  const size_t last = text.rfind('\n');
  auto entries = parseTuneFile(text.substr(0, last), "rank 0's tuning");
  tuning = entries.at(0);
  tuning.source = text.substr(last + 1);
  inter.reset();
  if (entries.size() > 1) inter = entries[1].model;
  // The FIFO a shm message crosses, as the transport sizes it (LinkModel::channelBytes): a
  // larger message hands over once per FIFO-full.
  if (link == LinkClass::Shm)
    tuning.model.channelBytes = static_cast<double>(shm::FifoSizing::fromSettings(nranks_).full);
  tuner_ = std::make_unique<Tuner>(nranks_, tuning, mode, &layout_, inter, sliceBytes);
}

}  // namespace chorus::detail
