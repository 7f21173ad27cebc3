// What the replay engine (sim/replay.hpp) asks of a network: the cost of one message
// between two ranks, and the rates of a rank's local work. Two models implement it:
// LinkClassNetwork (the tuner's: one or two link classes, per-rank ports) and
// FabricNetwork (chorus-sim's: GPUs, NICs, rails, leaf/spine levels, max-min fair flows).
#pragma once

#include "algorithms/layout.hpp"
#include "tuner/link_model.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace chorus::sim {

struct MessageCost {
  int port = 0;           // egress port of the sender (and ingress port of the receiver)
  double latencyUs = 0;   // first byte sent to last byte usable
  double overheadUs = 0;  // CPU time per message on each side
  double wireUs = 0;      // time the port is busy with the bytes (at the flow's rate)
  // Time the receiver's ingress port takes for the bytes at its own intake (its NVLink in,
  // or its PCIe and NIC down), not at the flow's possibly shared rate: messages that
  // arrive at once at a shared rate drain together, not one after the other at it.
  double intakeUs = 0;
  // Time the bytes take through a NIC that several ranks share (NetworkModel::sharedNic),
  // at the NIC's whole rate, at each end whose NIC is shared; 0 when neither is.
  double nicUs = 0;
  bool onCpu = false;  // the sender's CPU is the port (LinkModel::cpuSends)
  // The least time from this message's start on its port (or CPU) to the sender's next
  // message there (LinkModel::gapUs, LogGP's g); the port is held max(o + wire, gapUs).
  double gapUs = 0;
  // The sender's o where it holds a core for it (LinkModel::sendsHoldACore): charged on the
  // sender's CPU as well as its port. < 0: the sender's o is overheadUs, on the port only.
  double sendOverheadUs = -1;
  double senderOverheadUs() const { return sendOverheadUs >= 0 ? sendOverheadUs : overheadUs; }
  bool sendOverheadOnCpu() const { return sendOverheadUs >= 0; }
};

// Where a rank sits on a NIC it shares with other ranks of its node: the NIC (an id unique
// over the ranks) and the rank's lane on it (0 .. ranks on it - 1; what every symmetry map
// of sim/replay.hpp keeps). nic -1: the rank's NIC (or port) is its own.
struct NicPlace {
  int nic = -1;
  int lane = 0;
};

struct Flow {
  int from, to;
  // The message's wire bytes (what a fluid flow model times, FabricNetwork's); 0: not
  // given (the flows then keep their first max-min shares).
  double bytes = 0;
  auto operator<=>(const Flow&) const = default;
};

// How the ranks that are not replayed map onto the replayed ones (sim/replay.hpp):
// Shift: rank r + m g is rank r shifted by m g (ranks 0..g-1 replayed); Xor: rank r xor m g
// (g and the rank count powers of two); Rotate: within every node of G ranks (a block
// layout) the local index turns by m u: rank n G + l is n G + (l + m u) mod G, and the
// ranks n G + l with l < u (u per node) are the ones replayed.
enum class Symmetry : unsigned char { Shift, Xor, Rotate };

// The messages of the replayed ranks by send ordinal: ordinals[k] holds every replayed
// rank's k-th message (self sends and empty steps are not messages). With compression
// only replayedRanks ranks are replayed and the others send the same flows mapped by
// `symmetry`: Shift: ranks 0..replayedRanks-1, and r + m replayedRanks sends r's flows
// shifted by m replayedRanks; Rotate: ranks n perNode + l (l < u = replayedRanks x perNode /
// nranks), and every node's local indices turned by m u send the flows turned alike.
struct Traffic {
  int nranks = 0;
  int replayedRanks = 0;
  std::vector<std::vector<Flow>> ordinals;
  Symmetry symmetry = Symmetry::Shift;
  int perNode = 0;  // Rotate: ranks a node
};

// Rank n G + l turned within its node by k: n G + (l + k) mod G (k may be negative).
inline int rotateLocal(int rank, int k, int perNode) {
  const int local = rank % perNode;
  return rank - local + ((local + k) % perNode + perNode) % perNode;
}

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  // Egress ports per rank (each a resource of its own, as is the rank's CPU).
  virtual int ports() const = 0;
  virtual double reduceBytesPerUs() const = 0;
  virtual double copyBytesPerUs() const = 0;
  // Rate at which a rank's CPU moves a message's bytes through its transport, at the
  // sender (into the kernel) and again at the receiver (out of it): TCP's copies. 0: the
  // transport costs no CPU per byte (DMA: RDMA, NVLink copy engines).
  virtual double transportBytesPerUs() const { return 0; }
  // Flow-level models see the whole traffic before any message is timed.
  virtual bool wantsTraffic() const { return false; }
  virtual void prepare(const Traffic&) {}
  // The `ordinal`-th message of `from`, to `to` (never from itself).
  virtual MessageCost message(int from, int to, int ordinal, double bytes) const = 0;
  // The NIC `rank` shares with other ranks of its node (between-node messages, port 1).
  // The flow sharing sees one ordinal's messages at a time; the replay also drains every
  // message through a shared NIC, out and in, in arrival order at MessageCost::nicUs each,
  // whatever their ordinals (a step's messages to p - 1 peers are p - 1 ordinals). Ranks
  // on one NIC must map onto ranks on one NIC under the symmetry maps the network allows.
  virtual NicPlace sharedNic(int /*rank*/) const { return {}; }
  // A token-bucket shaper on every NIC that sharedNic places (tc tbf, as on the netns test
  // bed): the bucket holds this much drain time (its burst / the NIC's rate). A NIC's idle
  // time refills it, up to that, and a message through the NIC takes what it holds at once
  // (the line under the shaper is the flows' limit then) and the rest at the NIC's rate.
  // The replay times the call in steady state, as one of many back to back (sim::replay).
  // 0: no shaper.
  virtual double nicBurstUs() const { return 0; }
  // Whether message(from, to, -1, bytes), asked before or without prepare, costs no more
  // than any ordinal's message (what a lower bound may use): flow-level models don't say.
  virtual bool boundsMessages() const { return !wantsTraffic(); }
  // Smallest g dividing nranks such that shifting every rank by g maps the network onto
  // itself (what compressed replay needs); nranks when there is none.
  virtual int period(int nranks) const { return nranks; }
  // Whether r -> r xor m g (every m with m g < nranks) maps the network onto itself; g a
  // multiple of period(nranks). Only asked when g and nranks are powers of two.
  virtual bool xorSymmetric(int /*g*/, int /*nranks*/) const { return false; }
  // Smallest u > 0 such that turning every node's local index by any multiple of u
  // (Symmetry::Rotate; nodes of G = period(nranks) < nranks ranks, u divides G) maps the
  // network onto itself: message(R from, R to) costs what message(from, to) does. 0: none.
  virtual int rotationUnit(int /*nranks*/) const { return 0; }
  // The host's cores as a pool shared by all nranks ranks (LinkModel::poolCores, fabric key
  // core_pool): 1 .. nranks - 1 cores, which a rank's CPU work takes one at a time, first
  // come first served, at nranks / cores the speed its figures (at the call's share) say;
  // 0: none (each rank's CPU its own). A pool couples every rank to every other, so no
  // symmetry map keeps it: a network with one says so in period (nranks), xorSymmetric and
  // rotationUnit (none), and the replay refuses to compress it.
  // overheadAtCallShare: o and g stay at the call's share (LinkModel::poolOverheadAtCallShare).
  // spinUs: how long a waiting rank keeps its core, yielding (LinkModel::poolSpinUs; 0: it
  // frees it at once).
  struct CorePool {
    int cores = 0;
    bool overheadAtCallShare = false;
    double spinUs = 0;
    bool bound = false;  // rank r on core r mod cores only (LinkModel::poolBoundCores)
  };
  virtual CorePool corePool(int /*nranks*/) const { return {}; }
  int poolCores(int nranks) const { return corePool(nranks).cores; }
};

// The tuner's model: messages within a node over `link`, between nodes (with a layout
// and `inter`) over `inter` with a port of their own. Port 0: within the node, port 1:
// between nodes. With inter.nicBytesPerUs > 0 the node's ranks share one NIC: the
// between-node messages of a step (every rank's k-th message, as the fabric model takes
// steps) share their nodes' NICs, out and in, max-min fairly (sim/max_min.hpp), each at
// most inter.bytesPerUs; patterns repeat, so each distinct one is solved once. Cheap enough
// for the tuner at communicator creation (up to 128 ranks: one small sharing per pattern).
class LinkClassNetwork final : public NetworkModel {
 public:
  LinkClassNetwork(int nranks, const LinkModel& link, const Layout* layout = nullptr,
                   const LinkModel* inter = nullptr)
      : link_(link),
        inter_(inter && layout && layout->nranks() == nranks ? *inter : link),
        layout_(inter && layout && layout->nranks() == nranks ? layout : nullptr) {}

  int ports() const override { return 2; }
  double reduceBytesPerUs() const override { return link_.reduceBytesPerUs; }
  double copyBytesPerUs() const override { return link_.copyBytesPerUs; }
  // One transport carries both classes (tcp over loopback within a node), so one figure.
  double transportBytesPerUs() const override { return link_.transportBytesPerUs; }
  bool wantsTraffic() const override { return layout_ && inter_.nicBytesPerUs > 0; }
  void prepare(const Traffic& traffic) override;
  // Ordinal -1 (a bound): the rank's port alone, the NIC unshared, which no sharing beats.
  MessageCost message(int from, int to, int ordinal, double bytes) const override;
  // With nicBytesPerUs > 0 a node's ranks share its one NIC; lane: the local index.
  NicPlace sharedNic(int rank) const override;
  // inter.nicBurstBytes at the NIC's rate, when the NIC is shared.
  double nicBurstUs() const override {
    return wantsTraffic() ? inter_.nicBurstBytes / inter_.nicBytesPerUs : 0;
  }
  // Not with a shaper: a burst passes at once, faster than the unshared port.
  bool boundsMessages() const override { return nicBurstUs() <= 0; }
  // Without two classes every rank is alike; with them, a block layout (node = rank /
  // per node) repeats every node.
  int period(int nranks) const override {
    if (poolCores(nranks) > 0) return nranks;
    if (!layout_) return 1;
    const int perNode = layout_->uniformLocalSize();
    if (perNode == 0 || nranks % perNode != 0) return nranks;
    for (int r = 0; r < nranks; ++r)
      if (layout_->nodeOf(r) != r / perNode) return nranks;
    return perNode;
  }
  // Nodes of a power-of-two size: r xor m g stays on r's node exactly when r does, so
  // every message keeps its link class.
  bool xorSymmetric(int g, int nranks) const override {
    const int p = period(nranks);
    return p < nranks && (p & (p - 1)) == 0 && g % p == 0;
  }
  // A block layout's nodes: turning a node's local indices keeps every pair on or off
  // its node, so every message keeps its link class and port. Not with a shared NIC:
  // prepare() solves the sharing over whole replayed nodes (a turn replays one rank a
  // node, whose node-mates' flows it would have to add; it indexed ports by replayed rank
  // and overran them).
  int rotationUnit(int nranks) const override {
    const int p = period(nranks);
    return layout_ && !wantsTraffic() && p > 1 && p < nranks ? 1 : 0;
  }
  // link.poolCores, when at least 1 and fewer than the ranks.
  CorePool corePool(int nranks) const override {
    if (!(link_.poolCores >= 1 && link_.poolCores < nranks)) return {};
    return {static_cast<int>(link_.poolCores), link_.poolOverheadAtCallShare, link_.poolSpinUs,
            link_.poolBoundCores};
  }

 private:
  using Rates = std::vector<double>;  // by replayed rank: its between-node message's rate
  std::shared_ptr<const Rates> share(const Traffic& traffic, const std::vector<Flow>& reps);

  const LinkModel link_;
  const LinkModel inter_;
  const Layout* layout_;
  std::vector<std::shared_ptr<const Rates>> ordinals_;  // of the traffic prepared
  std::map<std::vector<int64_t>, std::shared_ptr<const Rates>> memo_;
};

}  // namespace chorus::sim
