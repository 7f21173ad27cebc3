#include "sim/max_min.hpp"
#include "sim/network.hpp"

#include <algorithm>
#include <cmath>

namespace chorus::sim {

void LinkClassNetwork::prepare(const Traffic& traffic) {
  ordinals_.clear();
  std::vector<Flow> reps;
  for (const std::vector<Flow>& flows : traffic.ordinals) {
    reps.clear();
    for (const Flow& f : flows)
      if (!layout_->sameNode(f.from, f.to)) reps.push_back(f);
    ordinals_.push_back(reps.empty() ? nullptr : share(traffic, reps));
  }
}

std::shared_ptr<const LinkClassNetwork::Rates> LinkClassNetwork::share(
    const Traffic& traffic, const std::vector<Flow>& reps) {
  std::vector<int64_t> key = {traffic.nranks, traffic.replayedRanks};
  for (const Flow& f : reps) key.push_back(int64_t(f.from) << 32 | uint32_t(f.to));
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  // Each flow crosses its rank's port, its node's NIC out and its peer node's NIC in. With
  // compression (g < n: a block layout, whole nodes replayed) the copies of a flow have its
  // rate (max-min's allocation is unique, so it has the network's symmetry), every node is
  // alike, and a node's NIC in carries one copy of each replayed flow whose peer's node is
  // in its class (node mod the replayed nodes): the sharing of the replayed flows over the
  // replayed nodes' NICs, with the NICs in taken by class, is the whole traffic's, exactly.
  // Its cost is the replayed flows', whatever the rank count.
  const int n = traffic.nranks, g = traffic.replayedRanks;
  const int nodes = g < n ? g / layout_->uniformLocalSize() : layout_->nodes();
  std::vector<double> capacity(g, inter_.bytesPerUs);
  capacity.resize(g + 2 * size_t(nodes), inter_.nicBytesPerUs);
  std::vector<int> links;
  std::vector<size_t> begin = {0};
  for (const Flow& f : reps) {
    links.insert(links.end(),
                 {f.from, g + layout_->nodeOf(f.from), g + nodes + layout_->nodeOf(f.to) % nodes});
    begin.push_back(links.size());
  }
  const std::vector<double> rates = maxMinRates(links, begin, capacity);
  auto table = std::make_shared<Rates>(g, 0.0);
  for (size_t i = 0; i < reps.size(); ++i) (*table)[reps[i].from] = rates[i];
  if (memo_.size() > 4096) memo_.clear();
  memo_.emplace(std::move(key), table);
  return table;
}

MessageCost LinkClassNetwork::message(int from, int to, int ordinal, double bytes) const {
  const bool crosses = layout_ && !layout_->sameNode(from, to);
  const LinkModel& l = crosses ? inter_ : link_;
  double rate = l.bytesPerUs;
  if (crosses && ordinal >= 0 && static_cast<size_t>(ordinal) < ordinals_.size() &&
      ordinals_[ordinal] && static_cast<size_t>(from) < ordinals_[ordinal]->size())
    rate = (*ordinals_[ordinal])[from];
  // The receiver takes the bytes at its port's rate, at most its node's NIC when shared.
  const bool nic = crosses && wantsTraffic();
  const double intake = nic ? std::min(l.bytesPerUs, l.nicBytesPerUs) : l.bytesPerUs;
  // A message beyond the channel's capacity hands over about once per channel-full, each
  // an overhead at both ends (LinkModel::channelBytes; rounded, so that the call's header
  // and padding on a message of whole channel-fulls add none).
  const double handOvers =
      l.channelBytes > 0 ? std::max(1.0, std::round(bytes / l.channelBytes)) : 1.0;
  return {
      crosses ? 1 : 0, l.latencyUs,    l.callOverheadUs() * handOvers,
      bytes / rate,    bytes / intake, nic ? bytes / l.nicBytesPerUs : 0,
      l.cpuSends,      l.callGapUs(),  l.sendsHoldACore ? l.callSendOverheadUs() * handOvers : -1};
}

NicPlace LinkClassNetwork::sharedNic(int rank) const {
  const int node = layout_ ? layout_->nodeOf(rank) : 0;
  if (!wantsTraffic() || layout_->ranksOf(node).size() < 2) return {};
  return {node, layout_->localIndex(rank)};
}

}  // namespace chorus::sim
