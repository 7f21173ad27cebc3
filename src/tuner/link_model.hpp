// Per link class figures for the cost model: latency per message, wire bandwidth, and the
// rates of the local work (reduction, copy) that goes with that kind of link. These are
// defaults from the published or measured figures cited beside each; the calibration probe
// (CHORUS_TUNE_FILE, chorus-perf --calibrate) replaces them with measured ones.
// Units: microseconds and bytes per microsecond (1 GB/s = 1000 B/us).
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace chorus {

enum class LinkClass : unsigned char { Shm, Tcp, Ib, Ucx, Nvlink };

struct LinkModel {
  double latencyUs = 1;             // one message, first byte sent to last byte usable
  double bytesPerUs = 1000;         // wire rate of one rank's sends (and of its receives)
  double reduceBytesPerUs = 10000;  // local reduction, bytes of the result per us
  double copyBytesPerUs = 20000;    // local copy (also a send to oneself)
  // CPU time per message on each side (LogP's o): posting, polling, matching. It
  // serialises on the rank, which is what makes one step to p-1 peers cost p-1 of it.
  double overheadUs = 0;
  // Rate at which a rank's CPU moves a message's bytes through the transport at each end
  // (TCP's copies into and out of the kernel), serialised with its other CPU work; 0: the
  // transport costs no CPU per byte (shm's copies are the steps' own, RDMA is DMA). Only the
  // probe sets it (probe_figures.hpp, transportFromProbe).
  double transportBytesPerUs = 0;
  // Between nodes: the rate of the node's NIC, which every flow leaving the node (and every
  // one entering it) in the same step shares max-min fairly with the others, each also held
  // to its rank's bytesPerUs; 0: not shared (a port per rank, the defaults). The probe sets
  // it (probe_figures.hpp, nicFromProbe); tunerLinks gives a fabric's.
  double nicBytesPerUs = 0;
  // The sender's CPU moves a message's bytes (shm: the rank's one progress thread copies
  // them into the peer's FIFO), so a send holds the rank's CPU, not a port of its own, for
  // its overhead and wire time, one after the other with the rank's receives and
  // reductions. false: a NIC or copy engine moves them (a port per rank beside the CPU).
  // Without it the replay ran a step's sends beside its receives: a step to p-1 peers
  // (twoshot's, oneshot's) looked as cheap as rd's one exchange at np 4 on 2 cores, where
  // twoshot measured 1.5x slower at 32 KiB (perf/README.md, the tuner's pick).
  bool cpuSends = false;
  // Between nodes, with nicBytesPerUs: a token-bucket shaper on the NIC (tc tbf, the netns
  // test bed) of this many bytes: what the NIC banked while idle passes at once
  // (NetworkModel::nicBurstUs). 0: none; tunerLinks gives a fabric's (nic_burst_bytes).
  double nicBurstBytes = 0;
  // Bytes a message crosses the link in at most (shm: the FIFO between two ranks,
  // CHORUS_SHM_FIFO_BYTES's 1 MiB default); 0: unbounded. A larger message is a hand-over
  // per channel-full: the sender fills the FIFO and waits for the receiver to drain it, so
  // it costs overheadUs at each end per channel-full, as each of a one-sided schedule's
  // records does (perf/README.md, bw11: charged once per message, rhd's 8 MiB sends paid
  // one o where peer_staged's records for the same bytes paid 6).
  double channelBytes = 0;
  // A message's overhead is CPU time, so it takes longer the smaller the share of a core its
  // rank gets. overheadShare: the share each busy rank had when overheadUs was measured (the
  // probe's ping-pong keeps one rank of each pair busy: on the netns bed 2-3 of 6 ranks on 2
  // cores); callShare: the share each rank gets in a call, where every rank of the machine
  // is busy (cores / the machine's ranks, at most 1). A call pays callOverheadUs(). 0 (the
  // defaults, tune files and fabrics without them): overheadUs as given. Charged as measured,
  // the replay made a 3x2 bed's 64 KiB ring 1.6-2.45x faster than measured (docs/sim.md,
  // fifteenth and sixteenth sessions).
  double overheadShare = 0;
  double callShare = 0;
  // Where the exchange's o replaced a ping-pong's (linkFromProbe: ranks outnumber cores, and
  // every rank waits for its turn on one), the ping-pong's o and its share: a pair's cost of
  // a message while both ranks hold a core. The one-sided choice charges its records this
  // (Tuner::chooseOneSided). 0: overheadUs is the pair's.
  double pairOverheadUs = 0;
  double pairOverheadShare = 0;
  // LogGP's g: the least time from one message a rank injects on this link to its next one
  // on the same link (start to start). It overlaps the next message's o and L, not the
  // previous message's own injection: a send holds its port (its CPU with cpuSends) for at
  // least g. Only matters above o + the wire time. The probe sets it where a burst's
  // per-message cost (the slope of the round trip over the burst's length) exceeds what the
  // single round trip leaves o (probe_figures.hpp, burstOverhead): between the 3x2 bed's
  // nodes in 17 of 25 probes (docs/sim.md, eighteenth session); 0: no gap beyond o.
  // Measured at overheadShare like o, and charged at the call's share like it (the bed's
  // gap is the kernel's per-segment work on the same shared cores).
  double gapUs = 0;
  // The sender holds a core for its o: its sends run back to back on a whole core, not at
  // the call's share, and that o is CPU time, so it also takes the sender's CPU (one after
  // the other with the rank's receives and reductions) as well as its port. The receiver's
  // o stays at the call's share. On the netns bed (SCHED_FIFO ranks, 6 on 2 cores) a Send
  // step takes 10-14 us at 256 B-16 KiB where the call's share charges 71 (docs/sim.md,
  // twentieth session); false (the default): the sender's o is the receiver's, on its port.
  bool sendsHoldACore = false;
  // The host's cores as a pool (the netns bed: every rank of the communicator on one
  // machine's cores): with this many cores, at least 1 and fewer than the ranks, a rank's CPU
  // work (o, g, reductions, copies, transport copies: the figures at the call's share) runs
  // at cores / ranks of its call-share cost, a whole core, once it holds one of the cores,
  // which the replay hands out first come first served (sim/replay.hpp): a rank runs at a
  // whole core while few ranks are busy and at the call's share when all are. The bed's
  // ranks wait for a core's turn (docs/sim.md, twentieth session). 0: each rank's CPU its
  // own at the call's share. Not compressible (NetworkModel::poolCores).
  double poolCores = 0;
  // With poolCores: a message's o and g stay at the call's share (holding a core that long),
  // only the byte work (reductions, copies, transport copies) runs at a whole core. The
  // netns bed's small sizes ran 1.5-2.3x faster than measured with o at a whole core
  // (docs/sim.md, twenty-first session).
  bool poolOverheadAtCallShare = false;
  // With poolCores: a rank that waits keeps the core its last CPU work ran on this long,
  // polling with sched_yield (the engine's wait where ranks outnumber cores: no pause, then
  // yielding for CHORUS_SPIN_US, kOversubscribedSpin in engine/wait_figures.hpp, then it
  // sleeps). A yielding rank is runnable, so work that takes a core where k such ranks wait
  // gets the kernel's fair share of it, 1 / (1 + k), until their spins end: a waiting rank's
  // core is shared, not free. 0: a waiting rank frees its core at once (docs/sim.md,
  // twenty-second session).
  double poolSpinUs = 0;
  // With poolCores: rank r's CPU work runs on core r mod poolCores only, as the engine binds
  // a rank where the machine's ranks outnumber its cores (CHORUS_BIND_CORE: its rank among
  // the machine's modulo the cores; comm_impl.cpp, bindToCore). false: any core that frees.
  bool poolBoundCores = false;
  // What a call's share of a core makes of a figure measured at overheadShare.
  double atCallShare(double us) const {
    return overheadShare > 0 && callShare > 0 ? us * overheadShare / callShare : us;
  }
  double callOverheadUs() const { return atCallShare(overheadUs); }
  double callGapUs() const { return atCallShare(gapUs); }
  // The sender's o in a call: a whole core's (measured at overheadShare) with
  // sendsHoldACore, else the receiver's.
  double callSendOverheadUs() const {
    if (!sendsHoldACore) return callOverheadUs();
    return overheadShare > 0 ? overheadUs * overheadShare : overheadUs;
  }
  bool operator==(const LinkModel&) const = default;
};

// The share of a core each of `busyRanks` ranks running at once on `cores` cores gets: at
// most 1, and 1 when none is busy.
inline double coreShareOf(double cores, double busyRanks) {
  return busyRanks > cores ? cores / busyRanks : 1.0;
}

namespace detail {
// clang-format off
inline constexpr std::array<LinkModel, 5> kDefaultLinks = {{
    // Overheads (last figure): a guess per class, replaced by the probe's measurement.
    // Shm (measured on a 2-core machine, fork'd ranks, float sum, np=4: Open MPI 4.1
    // all-reduce 8 B in 3.7 us; memcpy 18-20 GB/s, DRAM-bound; CMA 6-9 GB/s on 4 KiB pages):
    //  1.8 us: Open MPI's 8 B all-reduce at np=4 takes 3.7 us in log2(4) = 2 steps;
    //  6000 B/us: staging costs two copies at memcpy's 18-20 GB/s (~9.5 GB/s) and CMA on
    //   4 KiB pages runs 6-9 GB/s; the ranks share 2 cores, so take the low end;
    //  12000 B/us: fused reduce reads two streams and writes one, ~2/3 of memcpy;
    //  19000 B/us: memcpy, DRAM-bound (18-20 GB/s).
    //  1 MiB: the FIFO's default size (CHORUS_SHM_FIFO_BYTES).
    {1.8, 6000, 12000, 19000, 0.5, 0, 0, true, 0, 1 << 20},
    // Tcp (loopback or a 10G-class NIC): Gloo measured 270-390 us for an 8 B all-reduce
    //  (~10 steps) and 0.4-0.95 GB/s at 64 MiB: 25 us and 1 GB/s. Local work as shm.
    {25, 1000, 12000, 19000, 3},
    // Ib (400G NDR): NCCL's per network hop latency is 2.7/4/14 us (LL/LL128/Simple);
    //  our engine streams slices like LL128: 4 us. 48 GB/s: published 46-49 GB/s per
    //  NIC. Local work on host memory as shm.
    {4, 48000, 12000, 19000, 0.5},
    // Ucx (over the same RDMA NICs): UCX adds its protocol layer: 5 us, 45 GB/s.
    {5, 45000, 12000, 19000, 0.7},
    // Nvlink (H100/H200, 8 GPUs): NCCL per NVLink hop 0.6/1.9/3.4 us: 1.9 us (LL128).
    //  370 GB/s: published ring all-reduce busbw (the rate each GPU sends at). Local
    //  work in HBM3e (4.8 TB/s): reduce reads 2 writes 1 (~1.6 TB/s of result), copy
    //  reads 1 writes 1 (~2.4 TB/s); take ~85% of those.
    {1.9, 370000, 1.4e6, 2.0e6, 0.2},
}};
// clang-format on
}  // namespace detail

constexpr LinkModel defaultLinkModel(LinkClass link) {
  return detail::kDefaultLinks[static_cast<size_t>(link)];
}

constexpr const char* toString(LinkClass link) {
  constexpr const char* kNames[] = {"shm", "tcp", "ib", "ucx", "nvlink"};
  return kNames[static_cast<size_t>(link)];
}

inline std::optional<LinkClass> parseLinkClass(std::string_view name) {
  for (int i = 0; i < 5; ++i)
    if (name == toString(static_cast<LinkClass>(i))) return static_cast<LinkClass>(i);
  return std::nullopt;
}

}  // namespace chorus
