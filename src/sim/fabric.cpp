#include "sim/fabric.hpp"

#include "engine/wait_figures.hpp"

#include "errors.hpp"
#include "tuner/link_model.hpp"

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace chorus::sim {

namespace {

// InfiniBand reliable-connection packets (IBTA Architecture Specification Vol. 1): a path
// MTU of 4096 payload bytes; LRH 8 (7.7), BTH 12 (9.2), ICRC 4 and VCRC 2 (7.8) bytes per
// packet. Left out: a GRH (40, only between subnets) and an RDMA write's RETH (16, first
// packet only); nic_gbps taken as the data rate after line coding.
void ibFraming(Fabric& f) {
  f.nicPacketPayloadBytes = 4096;
  f.nicPacketHeaderBytes = 8 + 12 + 4 + 2;
}

// RoCE v2 (IBTA Vol. 1 Annex A17): the IB transport in UDP/IP over Ethernet: Ethernet
// header 14 and FCS 4, preamble and start delimiter 8 and the inter-frame gap 12 (IEEE
// 802.3: on the wire, in the line rate), IPv4 20, UDP 8, BTH 12, ICRC 4; path MTU 4096
// (RoCE's largest; the Llama 3 paper does not give its MTU: assumed).
void roceV2Framing(Fabric& f) {
  f.nicPacketPayloadBytes = 4096;
  f.nicPacketHeaderBytes = 14 + 4 + 8 + 12 + 20 + 8 + 12 + 4;
}

Fabric dgxH100() {
  // DGX SuperPOD reference architecture (H100): 8 GPUs and 8 ConnectX-7 400G NDR per
  // node, scalable units of 32 nodes with one leaf per rail, 4 SUs per spine group,
  // non-blocking. IB switch hop ~0.13 us; NVLink4 450 GB/s per GPU per direction.
  Fabric f;
  f.name = "dgx-h100";
  f.nodes = 128;
  f.leafNodes = 32;
  f.podLeaves = 4;
  f.rails = true;
  f.hopLatencyUs = 0.13;
  ibFraming(f);
  return f;
}

Fabric metaRoce() {
  // Llama 3 (arXiv 2407.21783 §3.3.1): 24K H100 on RoCE, 400 Gbps per GPU; racks of 16
  // GPUs (2 servers) under one ToR, 192 racks per pod (3072 GPUs, full bisection), 8 pods
  // joined by aggregation switches at 1:7 oversubscription. Not in the paper, assumed:
  // one NIC per GPU on PCIe Gen5, ~1 us per Ethernet switch hop, one uplink per downlink.
  Fabric f;
  f.name = "meta-roce";
  f.nodes = 3072;
  f.rails = false;
  f.leafNodes = 2;
  f.podLeaves = 192;
  f.coreOversub = 7;
  f.hopLatencyUs = 1.0;
  f.nicLatencyUs = 5;
  roceV2Framing(f);
  return f;
}

Fabric metaIb() {
  // Meta's other 24K cluster: NVIDIA Quantum-2 InfiniBand, 400 Gbps per GPU, full
  // bisection. Assumed: 64-port switches (32 down, 32 up): 4 nodes per leaf, 64 leaves
  // per pod, rail-unaware wiring, ~0.13 us per hop.
  Fabric f;
  f.name = "meta-ib";
  f.nodes = 3072;
  f.rails = false;
  f.leafNodes = 4;
  f.podLeaves = 64;
  f.hopLatencyUs = 0.13;
  ibFraming(f);
  return f;
}

Fabric uniform() {
  // One GPU per node, one NIC, every node on one non-blocking switch.
  Fabric f;
  f.name = "uniform";
  f.nodes = 16;
  f.gpusPerNode = 1;
  f.nicsPerNode = 1;
  f.leafNodes = 1 << 20;
  f.podLeaves = 1;
  return f;
}

using Setter = std::function<bool(Fabric&, const std::string&)>;

template <typename T>
bool parseNumber(const std::string& text, T& out) {
  std::istringstream in(text);
  T value{};
  in >> value;
  if (!in || !in.eof()) return false;
  out = value;
  return true;
}

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = [] {
    std::map<std::string, Setter> t;
    auto add = [&](const char* key, auto member) {
      t[key] = [member](Fabric& f, const std::string& v) { return parseNumber(v, f.*member); };
    };
    add("nodes", &Fabric::nodes);
    add("gpus_per_node", &Fabric::gpusPerNode);
    add("nvlink_gbps", &Fabric::nvlinkGBps);
    add("nvlink_latency_us", &Fabric::nvlinkLatencyUs);
    add("pcie_gbps", &Fabric::pcieGBps);
    add("nics_per_node", &Fabric::nicsPerNode);
    add("nic_gbps", &Fabric::nicGbps);
    add("nic_burst_bytes", &Fabric::nicBurstBytes);
    add("nic_packet_payload_bytes", &Fabric::nicPacketPayloadBytes);
    add("nic_packet_header_bytes", &Fabric::nicPacketHeaderBytes);
    add("nic_latency_us", &Fabric::nicLatencyUs);
    add("hop_latency_us", &Fabric::hopLatencyUs);
    add("rails", &Fabric::rails);
    add("leaf_nodes", &Fabric::leafNodes);
    add("pod_leaves", &Fabric::podLeaves);
    add("spine_oversub", &Fabric::spineOversub);
    add("core_oversub", &Fabric::coreOversub);
    add("efficiency", &Fabric::efficiency);
    add("qps", &Fabric::qps);
    add("overhead_us", &Fabric::overheadUs);
    add("overhead_share", &Fabric::overheadShare);
    add("gap_us", &Fabric::gapUs);
    add("nic_gap_us", &Fabric::nicGapUs);
    add("sends_hold_a_core", &Fabric::sendsHoldACore);
    add("reduce_gbps", &Fabric::reduceGBps);
    add("copy_gbps", &Fabric::copyGBps);
    add("host_cores", &Fabric::hostCores);
    add("host_load", &Fabric::hostLoad);
    add("core_pool", &Fabric::corePool);
    add("pool_overhead_at_call_share", &Fabric::poolOverheadAtCallShare);
    add("pool_waiters_spin", &Fabric::poolWaitersSpin);
    add("pool_bound_cores", &Fabric::poolBoundCores);
    add("transport_gbps", &Fabric::transportGBps);
    add("seed", &Fabric::seed);
    add("fluid", &Fabric::fluid);
    t["name"] = [](Fabric& f, const std::string& v) {
      f.name = v;
      return !v.empty();
    };
    return t;
  }();
  return table;
}

void validate(const Fabric& f, const std::string& where) {
  auto fail = [&](const char* what) { throwInvalid(where + ": " + what); };
  if (f.nodes < 1 || f.gpusPerNode < 1 || f.nicsPerNode < 1) fail("nodes, GPUs, NICs must be >= 1");
  if (f.leafNodes < 1 || f.podLeaves < 1 || f.qps < 1)
    fail("leaf_nodes, pod_leaves, qps must be >= 1");
  if (!(f.nvlinkGBps > 0 && f.pcieGBps > 0 && f.nicGbps > 0 && f.reduceGBps > 0 && f.copyGBps > 0))
    fail("rates must be > 0");
  if (!(f.spineOversub >= 1 && f.coreOversub >= 1)) fail("oversubscription must be >= 1");
  if (!(f.efficiency > 0 && f.efficiency <= 1)) fail("efficiency must be in (0, 1]");
  if (!(f.hostCores >= 0 && f.hostLoad >= 0)) fail("host_cores, host_load must be >= 0");
  if (!(f.transportGBps >= 0)) fail("transport_gbps must be >= 0");
  if (!(f.overheadShare >= 0 && f.overheadShare <= 1)) fail("overhead_share must be in [0, 1]");
  if (!(f.nicBurstBytes >= 0)) fail("nic_burst_bytes must be >= 0");
  if (!(f.nicPacketPayloadBytes >= 0 && f.nicPacketHeaderBytes >= 0) ||
      (f.nicPacketHeaderBytes > 0 && f.nicPacketPayloadBytes <= 0))
    fail("nic_packet_payload_bytes must be > 0 with nic_packet_header_bytes, both >= 0");
  if (f.nvlinkLatencyUs < 0 || f.nicLatencyUs < 0 || f.hopLatencyUs < 0 || f.overheadUs < 0 ||
      f.gapUs < 0 || f.nicGapUs < 0)
    fail("latencies, overhead_us, gap_us, nic_gap_us must be >= 0");
  if (static_cast<long long>(f.nodes) * f.gpusPerNode > (1 << 24)) fail("too many GPUs");
}

}  // namespace

double Fabric::poolSpinUs() const {
  return corePool && poolWaitersSpin
             ? std::chrono::duration<double, std::micro>(kOversubscribedSpin).count()
             : 0;
}

std::string Fabric::describe() const {
  char text[512];
  std::snprintf(text, sizeof(text),
                "# fabric %s: %d nodes x %d GPUs = %d; NVLink %.0f GB/s/dir; %d NICs/node "
                "%.0f Gb/s%s; leaf %d nodes, pod %d leaves, oversub spine %.1f core %.1f; "
                "hop %.2f us, NIC %.1f us; efficiency %.3f; %d QP(s) per transfer\n",
                name.c_str(), nodes, gpusPerNode, gpus(), nvlinkGBps, nicsPerNode, nicGbps,
                rails ? " (rails)" : "", leafNodes, podLeaves, spineOversub, coreOversub,
                hopLatencyUs, nicLatencyUs, efficiency, qps);
  std::string line = text;
  if (nicPacketPayloadBytes > 0) {
    std::snprintf(text, sizeof(text),
                  "# NIC packets: %g payload + %g header bytes: payload at %.4f of %g Gb/s\n",
                  nicPacketPayloadBytes, nicPacketHeaderBytes, nicPayloadShare(), nicGbps);
    line += text;
  }
  if (hostCores > 0) {
    std::snprintf(text, sizeof(text),
                  "# host: %g cores shared by all %d ranks and a load of %g (x %.3f of one core's "
                  "reduce %.2f, copy %.2f GB/s)\n",
                  hostCores, gpus(), hostLoad, cpuShare(), reduceGBps, copyGBps);
    line += text;
  }
  if (overheadShare > 0) {
    LinkModel charged;
    charged.overheadUs = overheadUs;
    charged.overheadShare = overheadShare;
    charged.callShare = cpuShare();
    std::snprintf(text, sizeof(text),
                  "# per-message overhead %.3f us measured at %.3f of a core: %.3f us in a call\n",
                  overheadUs, overheadShare, charged.callOverheadUs());
    line += text;
  }
  if (corePool && hostCores > 0) {
    std::snprintf(
        text, sizeof(text),
        "# the host's %g cores a pool: a rank's CPU work at a whole core%s, waiting "
        "for one while all are taken%s\n",
        hostCores, poolOverheadAtCallShare ? " (o and g at the call's share)" : "",
        poolWaitersSpin ? "; a waiting rank keeps its core, yielding, for the engine's spin" : "");
    line += text;
  }
  if (sendsHoldACore) {
    LinkModel charged;
    charged.overheadUs = overheadUs;
    charged.overheadShare = overheadShare;
    charged.sendsHoldACore = true;
    std::snprintf(text, sizeof(text),
                  "# a sender holds a core for its overhead: %.3f us a message, on its CPU too\n",
                  charged.callSendOverheadUs());
    line += text;
  }
  if (gapUs > 0 || nicGapUs > 0) {
    std::snprintf(text, sizeof(text),
                  "# gap between a rank's messages on a link: %.3f us within a node, %.3f us "
                  "through the NICs (at the overhead's share of a core)\n",
                  gapUs, nicGapUs);
    line += text;
  }
  if (transportGBps > 0) {
    std::snprintf(text, sizeof(text),
                  "# transport on the CPU (TCP): %.3f GB/s a core at each end (x %.3f)\n",
                  transportGBps, cpuShare());
    line += text;
  }
  if (nicBurstBytes > 0) {
    std::snprintf(
        text, sizeof(text),
        "# NICs shaped (token bucket, tc tbf): %.0f bytes of burst, refilled at %g Gb/s\n",
        nicBurstBytes, nicGbps);
    line += text;
  }
  return line;
}

std::vector<std::string> fabricPresets() { return {"dgx-h100", "meta-roce", "meta-ib", "uniform"}; }

Fabric presetFabric(std::string_view name, int nodes) {
  Fabric f;
  if (name == "dgx-h100")
    f = dgxH100();
  else if (name == "meta-roce")
    f = metaRoce();
  else if (name == "meta-ib")
    f = metaIb();
  else if (name == "uniform")
    f = uniform();
  else
    throwInvalid("unknown fabric preset '" + std::string(name) +
                 "' (dgx-h100, meta-roce, meta-ib, uniform)");
  if (nodes > 0) f.nodes = nodes;
  validate(f, "preset " + f.name);
  return f;
}

Fabric parseFabric(std::string_view text, std::string_view source) {
  Fabric f;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string key, value, extra;
    if (!(words >> key)) continue;
    const std::string where = std::string(source) + ":" + std::to_string(number);
    if (!(words >> value) || (words >> extra))
      throwInvalid(where + ": expected 'key value', got '" + line + "'");
    if (key == "preset") {
      f = presetFabric(value);
      continue;
    }
    auto it = setters().find(key);
    if (it == setters().end()) throwInvalid(where + ": unknown key '" + key + "'");
    if (!it->second(f, value)) throwInvalid(where + ": bad value '" + value + "' for " + key);
  }
  validate(f, std::string(source));
  return f;
}

Fabric readFabricFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throwInvalid("cannot read fabric file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parseFabric(text.str(), path);
}

}  // namespace chorus::sim
