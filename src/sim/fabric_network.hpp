// Flow-level timing on a described Fabric (sim/fabric.hpp), for the replay engine.
//
// - Paths: within a node GPU -> NVLink -> GPU; between nodes GPU -> PCIe -> NIC -> leaf
//   [-> spine [-> core -> spine]] -> leaf -> NIC -> PCIe -> GPU. Latency: NVLink's, or the
//   NIC's plus one hop per switch on the path.
// - Sharing: the messages with the same send ordinal (every rank's k-th message: one step
//   of the collective) are the flows of that step. They share every link max-min fairly
//   (progressive filling), as a fluid (Fabric::fluid, the default): the messages start
//   together, each with its bytes, and whenever some end the others' shares are solved
//   again, so a message that shared a link with a shorter one speeds up when it ends; a
//   message's rate is what it averaged (bytes / its finish). Sizes within kSizeTolerance
//   count as one, and with one size the first shares hold to the end (one solve). ECMP hashes each
//   flow (each of its `qps` sub-flows when a transfer is striped) onto one of the equal-cost
//   uplinks, so flows collide.
// - A step's flows of one class (the same node distance and local-index distance, from a
//   GPU whose local index is the same modulo the rotation unit: the same transfer shifted
//   by whole nodes, or turned within the nodes by whole NICs) run at the class's slowest
//   rate and largest latency: such a step is as fast as its slowest copy (a ring waits on
//   its slowest hop), and it makes every node alike, and every GPU of a node alike up to
//   its NIC's place, which is what the compressed replay needs (period: one node; rotation
//   unit: the GPUs a NIC serves, 1 on the presets).
// - Patterns repeat (every ring step has the same flows): each distinct pattern is solved
//   once and kept.
#pragma once

#include "sim/fabric.hpp"
#include "sim/network.hpp"

#include <map>
#include <memory>
#include <span>
#include <unordered_map>

namespace chorus::sim {

// The tuner's view of a fabric (its two link classes): within a node NVLink (rate x
// efficiency, NVLink latency), between nodes one NIC per GPU's port (no more than its PCIe
// link, x efficiency) and the node's NICs together as the NIC its GPUs' flows share
// (nicBytesPerUs), and the latency of a path through leaf, spine, leaf; local rates and the
// transport's CPU cost as the fabric gives them (shared host). The finer flow-level
// effects (which GPU uses which NIC, ECMP collisions, oversubscription) are the
// simulator's alone.
struct LinkClasses {
  LinkModel intra, inter;
};
LinkClasses tunerLinks(const Fabric& fabric);

class FabricNetwork final : public NetworkModel {
 public:
  explicit FabricNetwork(Fabric fabric);

  // Message sizes of one step within this fraction below a larger one are taken as that
  // one by the fluid solve (Fabric::fluid).
  static constexpr double kSizeTolerance = 1.0 / 64;

  const Fabric& fabric() const { return fabric_; }
  int ports() const override { return 2; }  // 0: NVLink, 1: the NIC
  double reduceBytesPerUs() const override {
    return fabric_.reduceGBps * 1000 * fabric_.cpuShare();
  }
  double copyBytesPerUs() const override { return fabric_.copyGBps * 1000 * fabric_.cpuShare(); }
  double transportBytesPerUs() const override {
    return fabric_.transportGBps * 1000 * fabric_.cpuShare();
  }
  bool wantsTraffic() const override { return true; }
  void prepare(const Traffic& traffic) override;
  MessageCost message(int from, int to, int ordinal, double bytes) const override;
  int period(int nranks) const override;
  // GPUs / NICs when the NICs divide the GPUs evenly (a turn by whole NICs maps GPUs that
  // share a NIC onto GPUs that share one), 1 when every GPU has NICs of its own; 0 when
  // neither (no rotation) or nranks is not whole nodes.
  int rotationUnit(int nranks) const override;
  // host_cores with core_pool 1, when at least 1 and fewer than the ranks (then no period
  // but nranks and no rotation: the pool couples every rank).
  CorePool corePool(int nranks) const override;
  // The NIC a GPU uses when other GPUs of its node use it too (lane: the GPU's place among
  // them, GPUs on one NIC being consecutive local indices).
  NicPlace sharedNic(int rank) const override;
  // With a shaper (nic_burst_bytes) every NIC is placed, shared or not: the replay's NIC
  // drains are the shapers' buckets (the flows still share the NIC at nic_gbps).
  // The bucket's bytes are framed bytes at nic_gbps (as tunerLinks' nicBurstBytes).
  double nicBurstUs() const override {
    return fabric_.nicBurstBytes * fabric_.nicPayloadShare() * fabric_.efficiency / nicRate_;
  }

  struct FlowRate {
    double bytesPerUs;
    double latencyUs;
  };
  // Max-min fair rates of these flows sharing the fabric at once (each on its own, no
  // class minimum), in the order given.
  std::vector<FlowRate> shareLinks(std::span<const Flow> flows) const;
  // Distinct patterns solved so far (tests: repeated steps are solved once).
  size_t patternsSolved() const { return solved_; }

 private:
  using ClassTable = std::unordered_map<uint64_t, FlowRate>;
  struct Path {
    int links[8];
    int count = 0;
    double latencyUs = 0;
  };
  Path pathOf(int from, int to, int qp) const;
  int nicOf(int local) const;  // which of its node's NICs a GPU uses
  // Bytes per us a GPU takes in: its NVLink in, or its PCIe and NIC down.
  double intake(int to, bool sameNode) const;
  std::shared_ptr<const ClassTable> solve(const Traffic& traffic, int ordinal);
  uint64_t classKey(int from, int to) const;
  // The fabric's own period and rotation unit (one node, its NICs' turn), which its flow
  // classes use whatever a core pool does to the replay's.
  int nodePeriod(int nranks) const;
  int nodeRotationUnit(int nranks) const;

  Fabric fabric_;
  int gpus_;
  int nicsPerLeaf_, leavesPerGroup_, groups_, pods_, spineUp_, coreUp_;
  std::vector<double> capacity_;     // bytes per us of every directed link
  double nicRate_ = 0;               // bytes per us of a NIC (its shaper's, when shaped)
  double overheadUs_ = 0;            // a message's overhead in a call (Fabric::overheadShare)
  double gapUs_ = 0, nicGapUs_ = 0;  // the gaps in a call, within a node and through NICs
  double sendOverheadUs_ = -1;       // MessageCost::sendOverheadUs (sends_hold_a_core)
  int nranks_ = 0;                   // of the traffic being timed
  int classPeriod_ = 1;
  int unit_ = 0;  // rotationUnit of the fabric's node (GPUs per node: no rotation)
  std::vector<std::shared_ptr<const ClassTable>> ordinals_;
  std::map<std::vector<int64_t>, std::shared_ptr<const ClassTable>> memo_;
  size_t solved_ = 0;
};

}  // namespace chorus::sim
