#include "sim/fabric_network.hpp"

#include "sim/max_min.hpp"

#include "algorithms/schedule.hpp"
#include "errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <queue>

namespace chorus::sim {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int ceilDiv(int a, int b) { return (a + b - 1) / b; }

}  // namespace

LinkClasses tunerLinks(const Fabric& f) {
  LinkModel intra;
  intra.latencyUs = f.nvlinkLatencyUs;
  intra.bytesPerUs = f.nvlinkGBps * 1000 * f.efficiency;
  intra.reduceBytesPerUs = f.reduceGBps * 1000 * f.cpuShare();
  intra.copyBytesPerUs = f.copyGBps * 1000 * f.cpuShare();
  intra.overheadUs = f.overheadUs;
  intra.overheadShare = f.overheadShare;
  intra.callShare = f.cpuShare();
  intra.transportBytesPerUs = f.transportGBps * 1000 * f.cpuShare();  // as FabricNetwork's
  intra.gapUs = f.gapUs;
  intra.sendsHoldACore = f.sendsHoldACore;
  intra.poolCores = f.corePool ? f.hostCores : 0;
  intra.poolOverheadAtCallShare = f.poolOverheadAtCallShare;
  intra.poolSpinUs = f.poolSpinUs();
  intra.poolBoundCores = f.corePool && f.poolBoundCores;
  LinkModel inter = intra;
  inter.gapUs = f.nicGapUs;
  inter.latencyUs = f.nicLatencyUs + 3 * f.hopLatencyUs;
  // A GPU sends through one NIC (at most its PCIe link); the node's NICs, as one, are
  // shared by its GPUs' flows between nodes. The NIC's rate less its packets' framing.
  const double nicPayloadGBps = f.nicGbps / 8 * f.nicPayloadShare();
  inter.bytesPerUs = std::min(nicPayloadGBps, f.pcieGBps) * 1000 * f.efficiency;
  inter.nicBytesPerUs = nicPayloadGBps * f.nicsPerNode * 1000 * f.efficiency;
  // The node's NICs' buckets, as one, in payload bytes (a bucket counts framed bytes).
  inter.nicBurstBytes = f.nicBurstBytes * f.nicsPerNode * f.nicPayloadShare() * f.efficiency;
  return {intra, inter};
}

FabricNetwork::FabricNetwork(Fabric fabric) : fabric_(std::move(fabric)) {
  const Fabric& f = fabric_;
  const LinkClasses classes = tunerLinks(f);
  overheadUs_ = classes.intra.callOverheadUs();  // the tuner's charge, one formula
  gapUs_ = classes.intra.callGapUs();
  sendOverheadUs_ = f.sendsHoldACore ? classes.intra.callSendOverheadUs() : -1;
  nicGapUs_ = classes.inter.callGapUs();
  gpus_ = f.gpus();
  const double eff = f.efficiency;
  const double nic = f.nicGbps / 8 * 1000 * eff * f.nicPayloadShare();  // payload bytes per us
  nicRate_ = nic;
  const int nodesPerLeaf = std::min(f.leafNodes, f.nodes);
  leavesPerGroup_ = f.rails ? f.nicsPerNode : 1;
  nicsPerLeaf_ = nodesPerLeaf * (f.rails ? 1 : f.nicsPerNode);
  groups_ = ceilDiv(f.nodes, f.leafNodes);
  pods_ = ceilDiv(groups_, f.podLeaves);
  spineUp_ = std::max(1, static_cast<int>(std::lround(nicsPerLeaf_ / f.spineOversub)));
  const int nicsPerPod = std::min(f.podLeaves * f.leafNodes, f.nodes) * f.nicsPerNode;
  coreUp_ =
      std::max(1, static_cast<int>(std::lround(nicsPerPod / (f.spineOversub * f.coreOversub))));
  const int leaves = groups_ * leavesPerGroup_;
  const size_t links = 4 * size_t(gpus_) + 2 * size_t(f.nodes) * f.nicsPerNode +
                       2 * size_t(leaves) * spineUp_ + 2 * size_t(pods_) * coreUp_;
  capacity_.assign(links, 0);
  size_t at = 0;
  auto fill = [&](size_t count, double rate) {
    std::fill(capacity_.begin() + at, capacity_.begin() + at + count, rate);
    at += count;
  };
  fill(2 * size_t(gpus_), f.nvlinkGBps * 1000 * eff);
  fill(2 * size_t(gpus_), f.pcieGBps * 1000 * eff);
  fill(2 * size_t(f.nodes) * f.nicsPerNode, nic);
  fill(2 * size_t(leaves) * spineUp_, nic * nicsPerLeaf_ / (f.spineOversub * spineUp_));
  fill(2 * size_t(pods_) * coreUp_, nic * nicsPerPod / (f.spineOversub * f.coreOversub * coreUp_));
}

FabricNetwork::Path FabricNetwork::pathOf(int from, int to, int qp) const {
  const Fabric& f = fabric_;
  const size_t G = gpus_, N = f.nodes, I = f.nicsPerNode;
  const size_t leaves = size_t(groups_) * leavesPerGroup_;
  Path path;
  auto add = [&](size_t link) { path.links[path.count++] = static_cast<int>(link); };
  const int nodeA = from / f.gpusPerNode, nodeB = to / f.gpusPerNode;
  if (nodeA == nodeB) {
    add(from);    // NVLink out
    add(G + to);  // NVLink in
    path.latencyUs = f.nvlinkLatencyUs;
    return path;
  }
  const int nicA = nicOf(from % f.gpusPerNode), nicB = nicOf(to % f.gpusPerNode);
  const int groupA = nodeA / f.leafNodes, groupB = nodeB / f.leafNodes;
  const int leafA = f.rails ? groupA * int(I) + nicA : groupA;
  const int leafB = f.rails ? groupB * int(I) + nicB : groupB;
  const int podA = groupA / f.podLeaves, podB = groupB / f.podLeaves;
  const size_t leafBase = 4 * G + 2 * N * I, podBase = leafBase + 2 * leaves * spineUp_;
  auto hash = [&](int level) {
    return mix(f.seed ^
               mix((uint64_t(from) << 32 | uint32_t(to)) ^ mix(uint64_t(qp) << 8 | level)));
  };
  add(2 * G + from);                      // PCIe up
  add(4 * G + size_t(nodeA) * I + nicA);  // NIC up
  int switches = 1;
  if (leafA != leafB) {
    const int up = static_cast<int>(hash(1) % spineUp_);
    add(leafBase + size_t(leafA) * spineUp_ + up);
    int down = up;  // within a pod the spine that took the flow up brings it down
    switches = 3;
    if (podA != podB) {
      const int core = static_cast<int>(hash(2) % coreUp_);
      add(podBase + size_t(podA) * coreUp_ + core);
      add(podBase + size_t(pods_) * coreUp_ + size_t(podB) * coreUp_ + core);
      down = static_cast<int>(hash(3) % spineUp_);
      switches = 5;
    }
    add(leafBase + leaves * spineUp_ + size_t(leafB) * spineUp_ + down);
  }
  add(4 * G + N * I + size_t(nodeB) * I + nicB);  // NIC down
  add(3 * G + to);                                // PCIe down
  path.latencyUs = f.nicLatencyUs + switches * f.hopLatencyUs;
  return path;
}

std::vector<FabricNetwork::FlowRate> FabricNetwork::shareLinks(std::span<const Flow> flows) const {
  // Sub-flows (one per QP between nodes) and the links they cross, densely numbered.
  std::vector<Path> subs;
  std::vector<int> owner;
  // Whether the fluid can differ from the first shares: messages of different sizes.
  bool dynamic = false, sized = false;
  for (size_t i = 0; i < flows.size(); ++i) {
    const Flow& fl = flows[i];
    if (fl.from < 0 || fl.to < 0 || fl.from >= gpus_ || fl.to >= gpus_ || fl.from == fl.to)
      throwInvalid("fabric flow " + std::to_string(fl.from) + " -> " + std::to_string(fl.to) +
                   " outside the fabric's " + std::to_string(gpus_) + " GPUs");
    const bool sameNode = fl.from / fabric_.gpusPerNode == fl.to / fabric_.gpusPerNode;
    dynamic = dynamic || fl.bytes != flows[0].bytes;
    sized = sized || fl.bytes > 0;
    for (int q = 0; q < (sameNode ? 1 : fabric_.qps); ++q) {
      subs.push_back(pathOf(fl.from, fl.to, q));
      owner.push_back(static_cast<int>(i));
    }
  }
  std::vector<int> links;
  std::vector<size_t> begin = {0};
  for (const Path& p : subs) {
    links.insert(links.end(), p.links, p.links + p.count);
    begin.push_back(links.size());
  }
  std::vector<FlowRate> result(flows.size(), {0, 0});
  for (size_t s = 0; s < subs.size(); ++s)
    result[owner[s]].latencyUs = std::max(result[owner[s]].latencyUs, subs[s].latencyUs);
  if (fabric_.fluid && dynamic && sized) {
    // As a fluid: each message's bytes over its QPs, shares solved again as messages end;
    // its rate is what it averaged (bytes / finish). With one size (or none given) the
    // first shares hold to the end (sim/max_min.hpp): one solve. (Not quite with QPs: a
    // message's QPs may speed up as other messages' end; one solve there too.)
    std::vector<double> bytes(flows.size());
    for (size_t i = 0; i < flows.size(); ++i) bytes[i] = flows[i].bytes;
    const std::vector<double> finish = maxMinFinish(links, begin, capacity_, owner, bytes);
    for (size_t i = 0; i < flows.size(); ++i)
      result[i].bytesPerUs =
          finish[i] > 0 ? bytes[i] / finish[i] : std::numeric_limits<double>::infinity();
    return result;
  }
  const std::vector<double> rate = maxMinRates(links, begin, capacity_);
  for (size_t s = 0; s < subs.size(); ++s) result[owner[s]].bytesPerUs += rate[s];
  return result;
}

int FabricNetwork::nicOf(int local) const {
  return local * fabric_.nicsPerNode / fabric_.gpusPerNode;
}

double FabricNetwork::intake(int to, bool sameNode) const {
  const size_t G = gpus_, N = fabric_.nodes, I = fabric_.nicsPerNode;
  if (sameNode) return capacity_[G + to];  // NVLink in
  const size_t nicDown = 4 * G + N * I + size_t(to / fabric_.gpusPerNode) * I +
                         size_t(nicOf(to % fabric_.gpusPerNode));
  return std::min(capacity_[3 * G + to], capacity_[nicDown]);  // PCIe down, NIC down
}

NicPlace FabricNetwork::sharedNic(int rank) const {
  const int G = fabric_.gpusPerNode, local = rank % G, nic = nicOf(local);
  int first = local, last = local;
  while (first > 0 && nicOf(first - 1) == nic) --first;
  while (last + 1 < G && nicOf(last + 1) == nic) ++last;
  if (first == last && fabric_.nicBurstBytes <= 0) return {};
  return {rank / G * fabric_.nicsPerNode + nic, local - first};
}

int FabricNetwork::nodePeriod(int nranks) const {
  return nranks % fabric_.gpusPerNode == 0 && nranks > fabric_.gpusPerNode ? fabric_.gpusPerNode
                                                                           : nranks;
}

int FabricNetwork::nodeRotationUnit(int nranks) const {
  const int G = fabric_.gpusPerNode, I = fabric_.nicsPerNode;
  if (nodePeriod(nranks) != G || G == 1) return 0;
  const int unit = I % G == 0 ? 1 : G % I == 0 ? G / I : G;
  return unit < G ? unit : 0;
}

int FabricNetwork::period(int nranks) const {
  return poolCores(nranks) > 0 ? nranks : nodePeriod(nranks);
}

int FabricNetwork::rotationUnit(int nranks) const {
  return poolCores(nranks) > 0 ? 0 : nodeRotationUnit(nranks);
}

NetworkModel::CorePool FabricNetwork::corePool(int nranks) const {
  const double cores = fabric_.corePool ? fabric_.hostCores : 0;
  if (!(cores >= 1 && cores < nranks)) return {};
  return {static_cast<int>(cores), fabric_.poolOverheadAtCallShare, fabric_.poolSpinUs(),
          fabric_.poolBoundCores};
}

// With whole nodes: (local index mod the rotation unit, node distance, local distance),
// invariant under shifts by whole nodes and turns by whole units; with the unit G it is
// (local index, rank distance) by other names. Otherwise one class per flow.
uint64_t FabricNetwork::classKey(int from, int to) const {
  if (classPeriod_ == nranks_)
    return uint64_t(from % classPeriod_) << 32 | uint32_t(wrapRank(to - from, nranks_));
  const int G = classPeriod_, nodes = nranks_ / G, lf = from % G, lt = to % G;
  const uint64_t nodeDistance = uint64_t(wrapRank(to / G - from / G, nodes));
  return (uint64_t(lf % unit_) * uint64_t(nodes) + nodeDistance) * uint64_t(G) +
         uint64_t(wrapRank(lt - lf, G));
}

std::shared_ptr<const FabricNetwork::ClassTable> FabricNetwork::solve(const Traffic& traffic,
                                                                      int ordinal) {
  std::vector<Flow> reps = traffic.ordinals[ordinal];
  // Sizes within kSizeTolerance below a larger one count as that one (its bytes; each
  // message then takes its own bytes at the rate found): a ring step's chunks of c and
  // c + 1 elements are one size, so the step is one solve, and one pattern for every such
  // step. Groups from the largest size down; the replayed flows carry every size there is.
  if (fabric_.fluid) {
    std::vector<double> sizes;
    for (const Flow& f : reps) sizes.push_back(f.bytes);
    std::sort(sizes.begin(), sizes.end(), std::greater<>());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    std::vector<double> group(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i)
      group[i] = i > 0 && sizes[i] >= group[i - 1] * (1 - kSizeTolerance) ? group[i - 1] : sizes[i];
    for (Flow& f : reps) {
      const auto at = std::lower_bound(sizes.begin(), sizes.end(), f.bytes, std::greater<>());
      f.bytes = group[at - sizes.begin()];
    }
    if (group.size() <= 1 || group.back() == group.front())
      for (Flow& f : reps) f.bytes = 0;  // one size: the first shares hold, whatever it is
  }
  std::sort(reps.begin(), reps.end());
  std::vector<int64_t> key = {traffic.nranks, traffic.replayedRanks,
                              static_cast<int64_t>(traffic.symmetry)};
  for (const Flow& f : reps) {
    key.push_back(int64_t(f.from) << 32 | uint32_t(f.to));
    if (f.bytes > 0) {  // fluid shares depend on the bytes
      int64_t bits;
      std::memcpy(&bits, &f.bytes, sizeof bits);
      key.push_back(bits);
    }
  }
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  // Every rank's flow: the replayed ranks' and their shifted (turned) copies, in one order.
  std::vector<Flow> flows;
  const int copies = traffic.nranks / traffic.replayedRanks;
  flows.reserve(reps.size() * copies);
  if (traffic.symmetry == Symmetry::Xor) throwInvalid("fabric: no xor symmetry");
  const bool turn = traffic.symmetry == Symmetry::Rotate && copies > 1;
  if (turn && unit_ * copies != classPeriod_)
    throwInvalid("fabric: replayed ranks do not match the rotation unit");
  for (int m = 0; m < copies; ++m) {
    if (turn) {
      const int k = m * unit_, G = traffic.perNode;
      for (const Flow& f : reps)
        flows.push_back({rotateLocal(f.from, k, G), rotateLocal(f.to, k, G), f.bytes});
      continue;
    }
    const int shift = m * traffic.replayedRanks;
    for (const Flow& f : reps)
      flows.push_back({f.from + shift, wrapRank(f.to + shift, nranks_), f.bytes});
  }
  std::sort(flows.begin(), flows.end());
  const std::vector<FlowRate> rates = shareLinks(flows);
  auto table = std::make_shared<ClassTable>();
  for (size_t i = 0; i < flows.size(); ++i) {
    auto [it, fresh] = table->try_emplace(classKey(flows[i].from, flows[i].to), rates[i]);
    if (!fresh) {
      it->second.bytesPerUs = std::min(it->second.bytesPerUs, rates[i].bytesPerUs);
      it->second.latencyUs = std::max(it->second.latencyUs, rates[i].latencyUs);
    }
  }
  ++solved_;
  if (memo_.size() > 4096) memo_.clear();
  memo_.emplace(std::move(key), table);
  return table;
}

void FabricNetwork::prepare(const Traffic& traffic) {
  if (traffic.nranks > gpus_)
    throwInvalid("fabric " + fabric_.name + " has " + std::to_string(gpus_) + " GPUs, not " +
                 std::to_string(traffic.nranks));
  nranks_ = traffic.nranks;
  // The flow classes are the fabric's own (a pool of host cores changes no flow).
  classPeriod_ = nodePeriod(nranks_);
  unit_ = nodeRotationUnit(nranks_);
  if (unit_ == 0) unit_ = classPeriod_;  // no turn: classes by the local index itself
  ordinals_.clear();
  for (size_t k = 0; k < traffic.ordinals.size(); ++k)
    ordinals_.push_back(solve(traffic, static_cast<int>(k)));
}

MessageCost FabricNetwork::message(int from, int to, int ordinal, double bytes) const {
  const FlowRate& r = ordinals_.at(ordinal)->at(classKey(from, to));
  const bool sameNode = from / fabric_.gpusPerNode == to / fabric_.gpusPerNode;
  // Through a NIC its GPUs share (or a shaped one), the bytes take the NIC's whole rate.
  const double nic = nicRate_;
  const bool shared = !sameNode && (sharedNic(from).nic >= 0 || sharedNic(to).nic >= 0);
  return {sameNode ? 0 : 1,
          r.latencyUs,
          overheadUs_,
          bytes / r.bytesPerUs,
          bytes / intake(to, sameNode),
          shared ? bytes / nic : 0,
          false,
          sameNode ? gapUs_ : nicGapUs_,
          sendOverheadUs_};
}

}  // namespace chorus::sim
