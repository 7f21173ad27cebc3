#include "tuner/probe_figures.hpp"

#include <algorithm>

namespace chorus {

LinkModel linkFromProbe(const ProbeTimes& t, LinkModel link) {
  if (t.one <= 0) return link;  // not measured (no partner)
  link.overheadUs = std::max(0.0, (t.burstTrip - t.one) / std::max(1, t.burst - 1));
  const double halfTrip = t.one / 2;  // L + 2 o
  if (t.exchangeRanks > 2) {
    const double p = t.exchangeRanks;
    link.overheadUs = std::max(link.overheadUs, (t.exchange - halfTrip) / (p - 2));
  }
  link.latencyUs = std::max(0.05, halfTrip - 2 * link.overheadUs);
  link.bytesPerUs =
      static_cast<double>(t.largeBytes - t.smallBytes) / std::max((t.large - t.one) / 2, 0.01);
  return link;
}

void transportFromProbe(LinkClass transport, bool withinMeasured, LinkModel& within,
                        LinkModel* between) {
  const double rate = transport == LinkClass::Tcp && withinMeasured ? within.bytesPerUs : 0;
  within.transportBytesPerUs = rate;
  if (between) between->transportBytesPerUs = rate;
}

std::vector<int> exchangeGroup(int local, int localRanks) {
  std::vector<int> group;
  const int first = local - local % kExchangeGroup;
  for (int i = first; i < std::min(localRanks, first + kExchangeGroup); ++i) group.push_back(i);
  return group;
}

}  // namespace chorus
