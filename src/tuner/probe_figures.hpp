// The link figures a communicator's probe (comm/tuning_setup.cpp) derives from its timings,
// as a pure function so that the arithmetic is tested apart from the timing.
#pragma once

#include "tuner/link_model.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace chorus {

// Round-trip times of the probe, in us (each the median of a few rounds).
struct ProbeTimes {
  size_t smallBytes = 8;
  double one = 0;        // 1 x small each way: 2 (L + 2 o)
  int burst = 8;         // messages of the burst
  double burstTrip = 0;  // burst x small there, 1 x small back: 2 L + (burst + 3) o
  // A burst of midBurst messages (0: not measured), timed like the full one, and the fastest
  // round of each burst (0: not recorded): the slope over the lengths is o (burstOverhead).
  int midBurst = 0;
  double midBurstTrip = 0;
  double midBurstBest = 0, burstBest = 0;
  // Of several blocks (quietestOfBlocks): the median over the blocks of each one's own
  // fastest-round slope (fastestRoundsSlope), which burstOverhead takes before the slope of
  // the blocks' fastest rounds put together (each from another moment). On the 3x2 bed (25
  // probes, chrt -f 1) it kept the within-node o in 14.5-24.4 us where those gave 6.5-24.4;
  // on 25 more, 2.3-30.4 against 6.8-31.2 (docs/sim.md, eighteenth session).
  std::optional<double> blocksSlopeUs;
  size_t largeBytes = 256 << 10;
  double large = 0;  // 1 x large each way: 2 (L + 2 o + large / bandwidth)
  // The fastest rounds of `one` and `large` (0: not recorded): the rounds in which both
  // ranks had a core throughout, what the transport's copies cost on their own.
  double oneBest = 0, largeBest = 0;
  // All ranks of the node at once, each sending small to every other rank of its exchange
  // group and receiving small from each (exchangeGroup below; exchangeRanks is the group's
  // size, 0 or <= 2: not measured): L + 2 (p - 1) o in the model.
  int exchangeRanks = 0;
  double exchange = 0;
  // The share of a core each busy rank had in the ping-pong (one rank of each pair of the
  // machine busy at a time) and in the exchange (every rank of the exchanging nodes busy);
  // 0: not known (LinkModel::overheadShare).
  double pingPongShare = 0, exchangeShare = 0;
};

// `start` with latencyUs, overheadUs and bytesPerUs replaced by what the times say. The
// ping-pong's burst gives the per-message overhead o between two running ranks; a step to
// several peers pays more where ranks outnumber cores (each message waits for its sender
// to get a core), which only the exchange sees: o is the larger of the two solutions, and
// L what the ping-pong leaves for it. The bandwidth comes from the fastest rounds (oneBest,
// largeBest; the medians where those were not recorded): a round's waits for a core are
// the messages' cost, already in o and L, and a 256 KiB median that stalled once in a
// probe of a few rounds would charge every byte of every algorithm with them.
// With the shares the rounds ran at (pingPongShare, exchangeShare), "larger" compares the
// two at one core (o x share) and overheadShare is the chosen one's: the exchange keeps
// every rank busy, as a call does, and the ping-pong half of them.
// Unmeasured times (one = 0) leave `start` as it is.
// Small rounds whose fastest took longer than the large rounds' fastest stalled in every
// round: no figure of the link can come from them (linkFromProbe, transportFromProbe).
// `note` (when given) gets how o was found (burstOverhead's rule).
bool smallRoundsStalled(const ProbeTimes& t);
LinkModel linkFromProbe(const ProbeTimes& t, LinkModel start, std::string* note = nullptr);

// The least latency linkFromProbe solves for (us): a round trip that is all overhead.
inline constexpr double kLatencyFloorUs = 0.05;

// The per-message overhead the bursts give: the least-squares slope of the round trip over
// the burst's length (k messages there, one back: 2 L + (k + 3) o), over the lengths measured
// (1, midBurst, burst). From the fastest round of each length where all were recorded (the
// rounds in which both ranks had a core: a median is one moment's waits for a core, and the
// difference of two such medians put o anywhere in 0.3-230 us on the same bed from run to
// run, docs/sim.md, seventeenth and eighteenth sessions), else from the medians. Bounded so
// that L + 2 o is the measured half round trip (halfTrip): a negative slope gives o 0 (L the
// whole half), one with 2 o above halfTrip - kLatencyFloorUs gives that bound (L at its floor)
// and the slope as the gap g (LinkModel::gapUs): a message in a burst costs more than o may,
// and only a gap between injections (start to start, overlapping the next message's o and
// L) keeps both the single round trip (L + 2 o) and the burst's slope (g). Below the bound g
// is 0, not o: a send already holds its port for o + wire >= o, so g <= o would change no
// replayed time, and 0 keeps the figures (and tune files) of every unbounded probe as before.
// The least-squares slope of one probe's fastest rounds of 1, midBurst and burst messages;
// none where they were not all recorded.
std::optional<double> fastestRoundsSlope(const ProbeTimes& t);
struct BurstOverhead {
  double overheadUs = 0;
  bool fromFastest = false;  // the fastest rounds' slope (a core throughout: share 1)
  // "slope", "negative slope", "slope above the half trip", "no burst"
  const char* rule = "slope";
  double slopeUs = 0;  // the fitted slope itself
  double gapUs = 0;    // the slope where it is above what o may take, else 0
};
BurstOverhead burstOverhead(const ProbeTimes& t, double halfTrip);

// How many times, at most, the probe's rounds run again after rank 0's small rounds stalled
// (about one np 4 probe in 30 on 2 idle cores: a stall of the whole probe, ~0.5 ms per 8 B
// round trip, not of the link). Each try costs a few ms at communicator creation.
inline constexpr int kStalledProbeRetries = 2;

// Runs `probe` (every rank's ping-pong, all pairs at once: collective over the node) and,
// while `stalledOnRank0(times, attempt)` says so, again, at most `retries` more times. The
// verdict must be rank 0's (its pair's times are the ones used) and the same on every rank,
// so that all of them run the rounds again or none does: the communicator asks the store.
// Returns the last try's times (still stalled after all tries: linkFromProbe keeps the
// defaults); `tries` gets how many ran.
ProbeTimes probeUntilSettled(const std::function<ProbeTimes()>& probe,
                             const std::function<bool(const ProbeTimes&, int)>& stalledOnRank0,
                             int retries, int* tries = nullptr);

// The probe runs its rounds in kProbeBlocks blocks one after the other (each block: the
// ping-pongs, then the exchange; the large rounds split among them), and takes the
// quietest: per time, the smallest of the blocks' medians, and the fastest round of all.
// A block's median is the typical round of that moment, waits for a core included (what
// a collective pays; the fastest round alone undercharged each message); another tenant
// holding a core for a few ms inflates every round of one block, which no statistic over
// that block's consecutive rounds (a few us each) can see through. Two idle np 4 probes
// on 2 cores gave an exchange of 12.1 and 30.5 us (o 2.1 and 6.9 us) and picked rd at
// 256 KiB where the ring was the best (0.76).
// Where at least one block's 8 B round trips were steady (smallRoundsSteady), the figures
// come from the steady blocks only: a steady block's median is a figure of the link, while
// an unsteady block's fastest round beside another block's median mixes two moments (and
// its medians are the waits for a core of that moment).
inline constexpr int kProbeBlocks = 3;
ProbeTimes quietestOfBlocks(const std::vector<ProbeTimes>& blocks);

// A block's 8 B round trips were steady: their median at most kSteadyMedianOverBest times
// their fastest round (and not stalled, smallRoundsStalled). Under load (2 cores, load 4-13)
// np 4 blocks gave medians 2-16x their fastest round: a peer waiting for a core in most
// rounds, or a waiting rank asleep on a futex (its YieldPolicy had learnt to sleep: the
// probe resets it before each block, Engine::resetYieldPolicy). Unrecorded (oneBest 0):
// not steady.
inline constexpr double kSteadyMedianOverBest = 1.5;
bool smallRoundsSteady(const ProbeTimes& t);

// How many blocks, at most, run after the kProbeBlocks while none of them was steady on
// rank 0. Each block costs ~1-3 ms at communicator creation (np 4 on shm).
inline constexpr int kExtraProbeBlocks = 3;

// Runs `block` kProbeBlocks times, then again while `moreOnRank0(blocksSoFar)` says so, at
// most `extra` more times; returns every block run. As with probeUntilSettled the verdict
// must be rank 0's and the same on every rank (the blocks are collective over the node):
// the communicator decides on rank 0 (no steady block yet) and tells the others through
// the store.
std::vector<ProbeTimes> probeBlocksUntilSteady(
    const std::function<ProbeTimes()>& block,
    const std::function<bool(const std::vector<ProbeTimes>&)>& moreOnRank0, int extra);

// What rank 0 asks before another block: some block measured 8 B round trips (a rank
// without a partner measures none) and none of them was steady.
bool needsAnotherBlock(const std::vector<ProbeTimes>& blocks);

// A link whose sends are the rank's own copies (cpuSends: shm's progress thread copies each
// message into the peer's FIFO, the receiver reduces or copies it out in its step) moves a
// step's bytes at the rank's copy rate, so that is its wire rate (bytesPerUs raised to
// copyBytesPerUs, the local rate at the machine's core share; measureLocalRates). The 256 KiB
// ping-pong measured 3-25x less (np 4 on 2 cores: best rounds 231-739 us, 0.7-2.3 GB/s a
// way; medians to 0.19 GB/s): one rank of the pair waits while the other copies, and each
// round waits for both to get a core again, where a collective's ranks copy at once. With
// the ping-pong's rate the model put rhd before rd at np 4, 32 KiB (rhd 212 us predicted,
// 23.5 measured idle; rd 17.7 measured, the best); with the copy rate it predicts ring 23.7,
// twoshot 23.8, rd 14.5, rhd 17.2 (measured 23.7, 24.0, 17.7, 23.5). Other links unchanged.
void sendsAtCopyRate(LinkModel& link);

// The CPU cost per byte of a transport that copies through the kernel (tcp), from figures
// the probe already has: within a node tcp runs over loopback, where no wire limits the
// rate, so the ping-pong's rate is what a rank's CPU copies at (the sender's copy in and
// the receiver's copy out overlap in a one-way message, which the replay also lets them
// do: one message costs max(wire, copy), a step that sends and receives at once pays both
// copies). The rate is the fastest rounds' (oneBest, largeBest; the medians where those
// were not recorded) times `coreShare`, the share of a core each of the machine's ranks gets
// when all are busy (cores / the machine's ranks, at most 1), as the local copy and reduce rates
// are measured (local_rates.hpp): the median round also holds the waits for a core that
// the other tenants' load caused at that moment, which swung the loopback median 46-538
// B/us between runs on a loaded 2-core host; the best round is the copy's own cost, and
// the share is what the layout (not the moment) leaves of a core. Sets
// transportBytesPerUs of both classes, which keep their measured rates; 0 (no cost) for
// other transports or when within was not measured (`withinTimes.one` 0: one rank per node).
void transportFromProbe(LinkClass transport, const ProbeTimes& withinTimes, double coreShare,
                        LinkModel& within, LinkModel* between);

// The node-shared NIC from the between-node probe: it runs every pair at once, so the rate
// it measured (`between.bytesPerUs`) is one rank's share of its node's NIC when
// `concurrentRanks` of the node send across at once: the NIC carries concurrentRanks times
// that, at most `lineBytesPerUs` (the NICs' line rate; 0: unknown), and a rank sending
// alone may use all of it. Sets between.nicBytesPerUs and between.bytesPerUs to that rate,
// so that the replay of the probe's own pattern (concurrentRanks flows out of the node at
// once, sharing the NIC max-min fairly) gives back the measured per-rank rate.
void nicFromProbe(LinkModel& between, int concurrentRanks, double lineBytesPerUs);

// The exchange runs in blocks of at most kExchangeGroup consecutive local indices, all
// blocks at once (so every rank of the node still competes for the cores): a rank connects
// to at most kExchangeGroup - 1 peers at creation however many share the node, which keeps
// tcp's lazy connections and shm's FIFOs mapped on first send lazy at 64-128 ranks. An
// aligned block of 8 holds the first three recursive-doubling partners.
inline constexpr int kExchangeGroup = 8;

// The local indices of the block `local` belongs to among `localRanks` (the last block may be
// smaller; a block of one has no exchange).
std::vector<int> exchangeGroup(int local, int localRanks);

}  // namespace chorus
