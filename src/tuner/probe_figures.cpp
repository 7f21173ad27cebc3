#include "tuner/probe_figures.hpp"

#include <algorithm>

namespace chorus {

LinkModel linkFromProbe(const ProbeTimes& t, LinkModel link) {
  if (t.one <= 0) return link;  // not measured (no partner)
  link.overheadUs = std::max(0.0, (t.burstTrip - t.one) / std::max(1, t.burst - 1));
  const double halfTrip = t.one / 2;  // L + 2 o
  if (t.exchangeRanks > 2) {
    // Each rank sends to p - 1 peers and receives from as many: L + 2 (p - 1) o in the
    // replay (the sends' o and the receives' o one after the other on the CPU with
    // cpuSends; without, each incoming message holds the rank's ingress port for its o
    // before its receive's o), so 2 (p - 2) o beyond the round trip's half, L + 2 o. (Solved
    // as L + p o before, which doubled o against the replay: 10.2 us where 5.1 us replays
    // the measured exchange at np 4.)
    const double p = t.exchangeRanks;
    link.overheadUs = std::max(link.overheadUs, (t.exchange - halfTrip) / (2 * (p - 2)));
  }
  link.latencyUs = std::max(0.05, halfTrip - 2 * link.overheadUs);
  link.bytesPerUs =
      static_cast<double>(t.largeBytes - t.smallBytes) / std::max((t.large - t.one) / 2, 0.01);
  return link;
}

void transportFromProbe(LinkClass transport, const ProbeTimes& t, double coreShare,
                        LinkModel& within, LinkModel* between) {
  double rate = 0;
  if (transport == LinkClass::Tcp && t.one > 0) {
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
