#include "tuner/probe_figures.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

namespace chorus {

bool smallRoundsStalled(const ProbeTimes& t) {
  return t.oneBest > 0 && t.largeBest > 0 && t.oneBest >= t.largeBest;
}

ProbeTimes probeUntilSettled(const std::function<ProbeTimes()>& probe,
                             const std::function<bool(const ProbeTimes&, int)>& stalledOnRank0,
                             int retries, int* tries) {
  ProbeTimes times = probe();
  int ran = 1;
  for (; ran <= retries && stalledOnRank0(times, ran - 1); ++ran) times = probe();
  if (tries) *tries = ran;
  return times;
}

bool smallRoundsSteady(const ProbeTimes& t) {
  return t.oneBest > 0 && t.one <= kSteadyMedianOverBest * t.oneBest && !smallRoundsStalled(t);
}

namespace {
bool anySteadyBlock(const std::vector<ProbeTimes>& blocks) {
  return std::any_of(blocks.begin(), blocks.end(), smallRoundsSteady);
}
}  // namespace

bool needsAnotherBlock(const std::vector<ProbeTimes>& blocks) {
  const bool measured =
      std::any_of(blocks.begin(), blocks.end(), [](const ProbeTimes& t) { return t.one > 0; });
  return measured && !anySteadyBlock(blocks);
}

std::vector<ProbeTimes> probeBlocksUntilSteady(
    const std::function<ProbeTimes()>& block,
    const std::function<bool(const std::vector<ProbeTimes>&)>& moreOnRank0, int extra) {
  std::vector<ProbeTimes> blocks;
  for (int b = 0; b < kProbeBlocks; ++b) blocks.push_back(block());
  for (int b = 0; b < extra && moreOnRank0(blocks); ++b) blocks.push_back(block());
  return blocks;
}

ProbeTimes quietestOfBlocks(const std::vector<ProbeTimes>& blocks) {
  if (blocks.empty()) return {};
  const bool steadyOnly = anySteadyBlock(blocks);
  ProbeTimes q;
  bool first = true;
  // The smallest measured (> 0) time of each field: 0 is "not recorded".
  auto least = [](double& into, double t) {
    if (t > 0 && (into <= 0 || t < into)) into = t;
  };
  for (const ProbeTimes& b : blocks) {
    if (steadyOnly && !smallRoundsSteady(b)) continue;
    if (first) q = b, first = false;
    least(q.one, b.one);
    least(q.oneBest, b.oneBest);
    least(q.burstTrip, b.burstTrip);
    least(q.burstBest, b.burstBest);
    least(q.midBurstTrip, b.midBurstTrip);
    least(q.midBurstBest, b.midBurstBest);
    least(q.large, b.large);
    least(q.largeBest, b.largeBest);
    least(q.exchange, b.exchange);
  }
  // Each block's own slope (its rounds of the three lengths ran at the same moment; the
  // fastest rounds of different blocks, put together above, did not), the median of them.
  std::vector<double> slopes;
  for (const ProbeTimes& b : blocks)
    if (const std::optional<double> slope = fastestRoundsSlope(b)) slopes.push_back(*slope);
  if (!slopes.empty()) {
    std::sort(slopes.begin(), slopes.end());
    const size_t n = slopes.size();
    q.blocksSlopeUs = n % 2 ? slopes[n / 2] : (slopes[n / 2 - 1] + slopes[n / 2]) / 2;
  }
  return q;
}

namespace {
// Least-squares slope of (length, round trip) points.
double slopeOf(const std::vector<std::pair<double, double>>& points) {
  double meanK = 0, meanT = 0;
  for (const auto& [k, trip] : points) meanK += k, meanT += trip;
  meanK /= points.size(), meanT /= points.size();
  double sKT = 0, sKK = 0;
  for (const auto& [k, trip] : points)
    sKT += (k - meanK) * (trip - meanT), sKK += (k - meanK) * (k - meanK);
  return sKT / sKK;
}

bool hasMidBurst(const ProbeTimes& t) {
  return t.midBurst > 1 && t.midBurst < t.burst && t.midBurstTrip > 0;
}
}  // namespace

std::optional<double> fastestRoundsSlope(const ProbeTimes& t) {
  const bool mid = hasMidBurst(t);
  if (t.burstTrip <= 0 || t.burst < 2 || t.oneBest <= 0 || t.burstBest <= 0 ||
      (mid && t.midBurstBest <= 0))
    return std::nullopt;
  std::vector<std::pair<double, double>> points = {{1, t.oneBest}, {t.burst, t.burstBest}};
  if (mid) points.push_back({t.midBurst, t.midBurstBest});
  return slopeOf(points);
}

BurstOverhead burstOverhead(const ProbeTimes& t, double halfTrip) {
  BurstOverhead fit;
  if (t.burstTrip <= 0 || t.burst < 2) {
    fit.rule = "no burst";
    return fit;
  }
  if (t.blocksSlopeUs) {
    fit.fromFastest = true;
    fit.slopeUs = *t.blocksSlopeUs;
  } else if (const std::optional<double> fastest = fastestRoundsSlope(t)) {
    fit.fromFastest = true;
    fit.slopeUs = *fastest;
  } else {
    // The medians, the single round trip at most the burst's (a median above it waited for
    // cores: linkFromProbe).
    std::vector<std::pair<double, double>> points = {{1, std::min(t.one, t.burstTrip)},
                                                     {t.burst, t.burstTrip}};
    if (hasMidBurst(t)) points.push_back({t.midBurst, t.midBurstTrip});
    fit.slopeUs = slopeOf(points);
  }
  fit.overheadUs = fit.slopeUs;
  if (fit.slopeUs < 0) {
    fit.rule = "negative slope";
    fit.overheadUs = 0;
  } else if (2 * fit.slopeUs > halfTrip - kLatencyFloorUs) {
    // A message in a burst costs more than the single round trip leaves for 2 o (between
    // the bed's nodes the fastest rounds of 1, 4, 8 x 8 B: 75, 153, 255 us, 25.7 us a message
    // against a half round trip of 43.4): all of that half is o, L at its floor, so that
    // L + 2 o stays the measured half trip.
    fit.rule = "slope above the half trip";
    fit.overheadUs = (halfTrip - kLatencyFloorUs) / 2;
    // The rest of the message's cost in a burst is a gap between injections (LogGP's g):
    // a burst of k then costs 2 L + 3 o + (k - 1) g, whose slope is g.
    fit.gapUs = fit.slopeUs;
  }
  return fit;
}

LinkModel linkFromProbe(const ProbeTimes& t, LinkModel link, std::string* note) {
  if (t.one <= 0) return link;  // not measured (no partner)
  // A small round trip whose fastest round took longer than the large one's fastest stalled
  // in every round (np 4 on 2 cores, idle, about one probe in 30: 8 B best 483 us, 8 x 8 B
  // 599 us, 256 KiB best 39.3 us, against 4.8-6 us for 8 B in the others); solved as it was,
  // L = 222 us and 2.6e7 B/us put oneshot and twoshot at 32 KiB-16 MiB, 0.36-0.74 of the
  // best. No figure of the link can come from it: keep the defaults.
  if (smallRoundsStalled(t)) return link;
  // The burst sends `burst` messages where the round trip sends one, so in the model it
  // takes no less. A median round trip above the burst's was stalled waiting for cores,
  // not a figure of the link (np 4 on 2 cores: 687 us against the burst's 259 us, its
  // best round 10.4 us; taken as it was, L = 344 us and o = 0 made oneshot's one step look
  // best up to 32 KiB, where rd ran 1.2-1.8x faster): take the burst's.
  const double one = t.burstTrip > 0 ? std::min(t.one, t.burstTrip) : t.one;
  const BurstOverhead fit = burstOverhead(t, one / 2);
  link.overheadUs = fit.overheadUs;
  link.pairOverheadUs = link.pairOverheadShare = 0;  // `link` may carry another class's
  link.gapUs = fit.gapUs;  // set even when 0: `link` may start from another class's figures
  // The fastest rounds ran with a core throughout; the medians at the ping-pong's share.
  link.overheadShare = fit.fromFastest && t.pingPongShare > 0 ? 1 : t.pingPongShare;
  if (note) {
    char text[160];
    std::snprintf(text, sizeof text, "o %.3g us, g %.3g us: %s (%s rounds' slope %.3g us)",
                  fit.overheadUs, fit.gapUs, fit.rule, fit.fromFastest ? "fastest" : "median",
                  fit.slopeUs);
    *note = text;
  }
  const double halfTrip = one / 2;  // L + 2 o
  if (t.exchangeRanks > 2) {
    // Each rank sends to p - 1 peers and receives from as many: L + 2 (p - 1) o in the
    // replay (the sends' o and the receives' o one after the other on the CPU with
    // cpuSends; without, each incoming message holds the rank's ingress port for its o
    // before its receive's o), so 2 (p - 2) o beyond the round trip's half, L + 2 o. (Solved
    // as L + p o before, which doubled o against the replay: 10.2 us where 5.1 us replays
    // the measured exchange at np 4.)
    const double p = t.exchangeRanks;
    const double exchangeO = (t.exchange - halfTrip) / (2 * (p - 2));
    // At one core each (the shares known) or as measured.
    const bool shares = t.pingPongShare > 0 && t.exchangeShare > 0;
    if (shares ? exchangeO * t.exchangeShare > link.overheadUs * link.overheadShare
               : exchangeO > link.overheadUs) {
      link.pairOverheadUs = link.overheadUs;
      link.pairOverheadShare = link.overheadShare;
      link.overheadUs = exchangeO;
      link.overheadShare = t.exchangeShare;
      if (note) *note += "; the exchange's o, larger at one core";
    }
  }
  link.latencyUs = std::max(kLatencyFloorUs, halfTrip - 2 * link.overheadUs);
  // The per-byte rate from the fastest rounds where they were recorded: the waits for a core
  // are a message's (in o and L above, from the medians), not its bytes'. The 256 KiB
  // round's median stalled in some probes while the 8 B rounds did not (np 4 on 2 cores:
  // 2104 us against a best of 729, 2256 against 245), which put the rate at 230-250 B/us
  // and the tuner on twoshot or rhd at 4 KiB, where rd ran 1.4-1.7x faster.
  const bool fastest = t.oneBest > 0 && t.largeBest > 0;
  const double small = fastest ? t.oneBest : one, large = fastest ? t.largeBest : t.large;
  link.bytesPerUs =
      static_cast<double>(t.largeBytes - t.smallBytes) / std::max((large - small) / 2, 0.01);
  return link;
}

void sendsAtCopyRate(LinkModel& link) {
  if (link.cpuSends) link.bytesPerUs = std::max(link.bytesPerUs, link.copyBytesPerUs);
}

void transportFromProbe(LinkClass transport, const ProbeTimes& t, double coreShare,
                        LinkModel& within, LinkModel* between) {
  double rate = 0;
  if (transport == LinkClass::Tcp && t.one > 0 && !smallRoundsStalled(t)) {
    const bool best = t.oneBest > 0 && t.largeBest > 0;
    const double one = best ? t.oneBest : t.one, large = best ? t.largeBest : t.large;
    rate = std::clamp(coreShare, 0.0, 1.0) * static_cast<double>(t.largeBytes - t.smallBytes) /
           std::max((large - one) / 2, 0.01);
  }
  within.transportBytesPerUs = rate;
  if (between) between->transportBytesPerUs = rate;
}

void nicFromProbe(LinkModel& between, int concurrentRanks, double lineBytesPerUs) {
  double nic = between.bytesPerUs * std::max(concurrentRanks, 1);
  if (lineBytesPerUs > 0) nic = std::min(nic, lineBytesPerUs);
  between.nicBytesPerUs = nic;
  between.bytesPerUs = nic;
}

std::vector<int> exchangeGroup(int local, int localRanks) {
  std::vector<int> group;
  const int first = local - local % kExchangeGroup;
  for (int i = first; i < std::min(localRanks, first + kExchangeGroup); ++i) group.push_back(i);
  return group;
}

}  // namespace chorus
