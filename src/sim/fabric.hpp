// A described GPU cluster for chorus-sim: nodes of GPUs joined by NVLink, NICs on PCIe,
// rails, and a Clos network of leaf groups, pods (spine level) and a core level, each
// level with its oversubscription and its equal-cost uplinks. FabricNetwork
// (sim/fabric_network.hpp) times messages on it.
//
// Fabric file: one `key value` per line, '#' starts a comment. `preset NAME` first starts
// from a preset; every other key overrides one field (names as in the struct below, e.g.
// `nodes 2048`, `nic_gbps 400`, `rails 1`, `core_oversub 7`, `qps 4`). Unknown keys
// and bad values are errors naming the line.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::sim {

struct Fabric {
  std::string name = "custom";
  int nodes = 1;
  int gpusPerNode = 8;
  // Within a node: every GPU has NVLink to a switch at this rate per direction (GB/s).
  double nvlinkGBps = 450;
  // NCCL's latency per NVLink hop for LL128 (NVIDIA/nccl src/graph/tuning.cc: 0.6 / 1.9 /
  // 3.4 us for LL / LL128 / Simple).
  double nvlinkLatencyUs = 1.9;
  double pcieGBps = 64;  // GPU <-> its NIC (PCIe Gen5 x16), per direction
  int nicsPerNode = 8;
  double nicGbps = 400;  // per NIC per direction
  // A token-bucket shaper on each NIC direction (tc tbf: the netns test bed): nic_gbps is
  // its rate, and up to nic_burst_bytes banked while the NIC was idle (the bucket refills
  // at nic_gbps) pass at once, at the speed of the link under it (a veth: no cost but the
  // transport's CPU copies). 0: no shaper (a real NIC).
  double nicBurstBytes = 0;
  // Per-packet framing on the NICs and the switch links: every packet carries
  // nic_packet_payload_bytes of a transfer and nic_packet_header_bytes of headers, trailers
  // and gaps that the link's rate carries too, so a NIC moves payload at nic_gbps x payload /
  // (payload + header) (nicPayloadShare; a message's last, partial packet is not rounded
  // up). 0 / 0: no framing (nic_gbps is the payload rate). The presets' (fabric.cpp): IB
  // 4096 + 26, RoCE v2 4096 + 82; the netns bed's TCP 1448 + 66 (perf/sim_vs_bed.sh).
  double nicPacketPayloadBytes = 0;
  double nicPacketHeaderBytes = 0;
  double nicLatencyUs = 4;    // per message through NICs (NCCL's network hop, LL128, tuning.cc)
  double hopLatencyUs = 0.5;  // per switch on the path
  bool rails = true;          // NIC i of every node of a leaf group on leaf switch i
  int leafNodes = 32;         // nodes under one leaf group
  int podLeaves = 4;          // leaf groups under one pod's spines
  // Uplinks run at the NIC rate, one per `oversub` downlinks: a leaf has
  // downlinks / spineOversub equal-cost paths to the spines, a pod NICs / (spineOversub x
  // coreOversub) to the core; ECMP hashes each flow onto one of them.
  double spineOversub = 1;
  double coreOversub = 1;
  // Payload per byte on the wire: protocol framing (LL128: 120 of every 128 bytes).
  double efficiency = 120.0 / 128.0;
  int qps = 1;              // flows (QPs) one transfer is striped over, each hashed alone
  double overheadUs = 0.2;  // CPU/GPU time per message on each side
  // With host_cores: the share of a core each busy rank had when overhead_us was measured
  // (1: overhead_us is one whole core's); a call, where every rank is busy, pays
  // overhead_us x overhead_share / cpuShare() (LinkModel::callOverheadUs, as the tuner
  // does). 0: overhead_us as given.
  double overheadShare = 0;
  // LogGP's g (LinkModel::gapUs): the least time from a rank's message to its next one on
  // the same link, start to start, within a node (gap_us) and through the NICs (nic_gap_us);
  // measured at overhead_share and charged at the call's share like overhead_us. 0: none.
  double gapUs = 0;
  double nicGapUs = 0;
  // sends_hold_a_core 1 (LinkModel::sendsHoldACore): a sender's overhead_us at a whole core
  // (overhead_us x overhead_share), on its CPU as well as its port. 0: as the receiver's.
  bool sendsHoldACore = false;
  double reduceGBps = 1400;  // local reduction (bytes of result), HBM-bound
  double copyGBps = 2000;    // local copy
  // A test bed rather than a cluster: > 0 when every rank of the fabric runs on this many
  // shared host cores (the netns bed: all nodes' ranks on one machine). Then reduce_gbps
  // and copy_gbps are one core's rates, and each rank gets its share of the cores:
  // rate x min(1, host_cores / ranks). 0: every GPU has its own (the rates as given).
  double hostCores = 0;
  // Other tenants' runnable threads on those cores (the host's load average less the
  // ranks'): a rank's share is then host_cores / (ranks + host_load).
  double hostLoad = 0;
  // core_pool 1 (LinkModel::poolCores): with host_cores fewer than the ranks, the cores are
  // a pool that a rank's CPU work takes one at a time, at a whole core (host_cores / ranks of
  // its cost at the call's share), waiting for one when all are taken: a rank runs at a
  // whole core while few are busy, at the call's share when all are. No compression then.
  // 0 (the default): every rank's CPU its own, at the call's share.
  bool corePool = false;
  // pool_overhead_at_call_share 1 (LinkModel::poolOverheadAtCallShare): with core_pool, a
  // message's o and g stay at the call's share; only the byte work runs at a whole core.
  bool poolOverheadAtCallShare = false;
  // pool_waiters_spin 1 (LinkModel::poolSpinUs): with core_pool, a waiting rank keeps its
  // core for the engine's spin where ranks outnumber cores (kOversubscribedSpin, 200 us),
  // yielding: work on that core gets a fair share of it meanwhile.
  bool poolWaitersSpin = false;
  // What a waiting rank holds its core for (LinkModel::poolSpinUs): the engine's figure with
  // pool_waiters_spin and core_pool, else 0.
  double poolSpinUs() const;
  // pool_bound_cores 1 (LinkModel::poolBoundCores): with core_pool, rank r's work on core
  // r mod host_cores only, as the engine binds ranks that outnumber the cores.
  bool poolBoundCores = false;
  // TCP rather than DMA: a message's bytes cost its sender's CPU (the copy into the
  // kernel) and its receiver's (the copy out) at this rate per core, on the same CPU as
  // the rank's reductions (with host_cores, each rank's share of the cores). So a rank that
  // sends and receives at once, or reduces while it sends, does them one after the other.
  // 0: the transport costs no CPU (GPUs: RDMA and NVLink copy engines).
  double transportGBps = 0;
  unsigned seed = 1;  // ECMP hash seed
  // How a step's flows share the links (sim/fabric_network.hpp): 1 (fluid): max-min fair
  // shares solved again whenever a flow ends, so the others speed up; 0: each flow keeps
  // its first max-min share for its whole message (the model before).
  bool fluid = true;

  int gpus() const { return nodes * gpusPerNode; }
  // The share of a NIC's (and a switch link's) rate that is payload: its packets' framing.
  double nicPayloadShare() const {
    return nicPacketPayloadBytes > 0
               ? nicPacketPayloadBytes / (nicPacketPayloadBytes + nicPacketHeaderBytes)
               : 1.0;
  }
  // The share of its copy and reduce rates each rank gets (hostCores).
  double cpuShare() const {
    return hostCores > 0 ? std::min(1.0, hostCores / (gpus() + hostLoad)) : 1.0;
  }
  // One paragraph: the figures this fabric was built from.
  std::string describe() const;
};

// dgx-h100: a DGX H100 SuperPOD-like cluster: scalable units of 32 nodes, rail-optimized
// leaves, full bisection, NDR 400G IB, NVLink 450 GB/s.
// meta-roce: Llama 3's 24k-GPU RoCE cluster: racks of 2 nodes under one ToR, pods of 192
// racks (3072 GPUs) at full bisection, pods joined with 1:7 oversubscription, 400G.
// meta-ib: the 24k InfiniBand cluster: 400G, full bisection at every level.
// uniform: an idealised network: every GPU 1 NIC, one leaf, no NVLink advantage.
std::vector<std::string> fabricPresets();
// Throws Error(InvalidArgument) for an unknown name. `nodes` 0 keeps the preset's.
Fabric presetFabric(std::string_view name, int nodes = 0);
Fabric parseFabric(std::string_view text, std::string_view source = "fabric file");
Fabric readFabricFile(const std::string& path);

}  // namespace chorus::sim
