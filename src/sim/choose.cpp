#include "sim/choose.hpp"

#include "algorithms/schedule_rules.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace chorus::sim {

double busyLowerBound(const Schedule& schedule, int rank, int nranks, size_t elementSize,
                      const NetworkModel& net) {
  if (!net.boundsMessages()) return 0;
  const int ports = net.ports();
  // With a pool of host cores a rank's CPU work runs at a whole core: cores / ranks of the
  // call-share figures (sim/replay.hpp), which a bound may not exceed.
  const NetworkModel::CorePool pool = net.corePool(nranks);
  const double scale = pool.cores > 0 ? double(pool.cores) / nranks : 1;
  const double oScale = pool.overheadAtCallShare ? 1 : scale;
  double cpu = 0;
  std::vector<double> egress(ports, 0), ingress(ports, 0);
  for (const Step& s : schedule.steps) {
    const size_t count = rules::elementsOf(s);
    if (count == 0) continue;
    const double bytes = static_cast<double>(count * elementSize);
    // On the wire padded as the replay has it; the call's headers left out (a bound).
    const double wire = static_cast<double>(rules::wireBytes(count * elementSize, false));
    const bool remote = s.peer >= 0 && s.peer < nranks && s.peer != rank;
    switch (s.kind) {
      case StepKind::Send:
        if (remote) {
          const MessageCost c = net.message(rank, s.peer, -1, wire);
          const double o = c.sendOverheadOnCpu() ? c.senderOverheadUs() : c.overheadUs * oScale;
          (c.onCpu ? cpu : egress[c.port]) += o + c.wireUs;
          if (c.sendOverheadOnCpu() && !c.onCpu) cpu += o;
        } else {
          cpu += bytes / net.copyBytesPerUs() * scale;
        }
        break;
      case StepKind::Recv:
      case StepKind::RecvReduce:
        if (remote) {
          const MessageCost c = net.message(s.peer, rank, -1, wire);
          cpu += c.overheadUs * oScale;
          ingress[c.port] += c.overheadUs * oScale + c.intakeUs;
        }
        if (s.kind == StepKind::RecvReduce) cpu += bytes / net.reduceBytesPerUs() * scale;
        break;
      case StepKind::Reduce:
        cpu += bytes / net.reduceBytesPerUs() * scale;
        break;
      case StepKind::PeerWrite:  // the writer moves them, at least its write stream (replay)
        cpu += bytes / 2 / net.copyBytesPerUs() * scale;
        break;
      case StepKind::Copy:
      case StepKind::PeerRead:  // the reader moves the bytes (its Expose's record: left out)
        cpu += bytes / net.copyBytesPerUs() * scale;
        break;
      case StepKind::PeerReduce:
        cpu += bytes / net.reduceBytesPerUs() * scale;
        break;
      case StepKind::Expose:
        break;
    }
  }
  return std::max({cpu, *std::max_element(egress.begin(), egress.end()),
                   *std::max_element(ingress.begin(), ingress.end())});
}

std::vector<Ranked> rankByReplay(std::span<const Algorithm* const> candidates,
                                 Collective collective, int nranks, size_t count,
                                 size_t elementSize, NetworkModel& net, const SimOptions& options) {
  std::vector<Ranked> ranked;
  for (const Algorithm* a : candidates) {
    Ranked r;
    r.algorithm = a;
    // The first and the last rank: a root, a fold or the node's edge sits at one of them.
    for (int rank : {0, nranks - 1}) {
      const Schedule s = a->build({collective, rank, nranks, count, 0, options.layout});
      r.lowerBound = std::max(r.lowerBound, busyLowerBound(s, rank, nranks, elementSize, net));
    }
    ranked.push_back(r);
  }
  std::vector<size_t> order(ranked.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ranked[a].lowerBound < ranked[b].lowerBound; });
  double best = std::numeric_limits<double>::infinity();
  size_t bestIndex = ranked.size();
  for (size_t i : order) {
    Ranked& r = ranked[i];
    // Its time >= its bound: it cannot win (a tie goes to the earlier candidate).
    if (r.lowerBound > best || (r.lowerBound == best && i > bestIndex)) {
      r.micros = r.lowerBound;
      continue;
    }
    SimResult result = simulate(*r.algorithm, collective, nranks, count, elementSize, net, options);
    const size_t equal = (count + nranks - 1) / nranks * nranks;
    if (result.tooLarge && equal != count && count >= kRoundingShare * nranks) {
      result = simulate(*r.algorithm, collective, nranks, equal, elementSize, net, options);
      r.rounded = true;
    }
    if (result.tooLarge) {
      r.tooLarge = true;
      r.micros = r.lowerBound;
      continue;
    }
    r.replayed = true;
    r.micros = result.micros;
    if (r.micros < best || (r.micros == best && i < bestIndex)) best = r.micros, bestIndex = i;
  }
  // ranked is in the given order: a stable sort keeps it among ties.
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.replayed != b.replayed) return a.replayed;
    return a.micros < b.micros;
  });
  return ranked;
}

}  // namespace chorus::sim
