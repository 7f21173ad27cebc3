// One-sided access over verbs (transport.hpp's PeerMemory), the pull model: describe()
// registers the exposed buffer (the whole registered region, on every rail's device
// through its RegCache, pinned while exposed) and hands the peer its address and an rkey
// per rail; the peer's read() cuts the range into pieces and gives each to the QP the
// channel's striping scheduler picks, on any rail (IbChannel::postRead), so a node with
// two rails reads over both and a slow rail gets fewer pieces. The exposing rank's CPU
// does nothing and nothing is staged on its side.
//
// Where a read lands: straight in the destination when it lies in a buffer this rank
// exposes (its registration serves: two-shot's all-gather phase reads into its exposed
// output); else (the engine's bounce slice for PeerReduce, memory this transport cannot
// know stays allocated) in a registered landing buffer of this object, copied to the
// destination when the read completes. A landing buffer comes from rail 0's pool and is
// registered on the other rails while this object keeps it. Registering arbitrary destinations
// through the shared cache would leave registrations of freed memory behind (a later buffer at the
// same address would get the old pages). A PeerReduce folds straight from the landing
// buffer (readLanded): no copy on this side either.
//
// Writes (PeerWrite, the push model) mirror reads: RDMA WRITE of the range into the peer's
// exposed range, from the source itself when it lies in a buffer this rank exposes
// (peer_push writes its folded part of its own exposed output), else from a landing
// buffer it is copied into first. The writer's next message tells the peer the bytes are
// there, and it may take another QP (or rail) than the pieces. A WRITE's acknowledgement
// does not promise its data is in the peer's memory (an HCA with PCIe relaxed ordering may
// still be placing it), but the IB ordering rules answer an RDMA READ only after every
// earlier WRITE of its QP is placed. So behind its pieces a write posts a one-byte READ on
// each QP that carried one (a flush, as NCCL's), and write() reports it complete only once
// every piece and every flush has completed: about one round trip, as the
// acknowledgements alone. Soft-RoCE places data before it acknowledges, so no test here
// can see a write without its flush go wrong; chorus_ib_verbs_test counts the flushes.
// The tuner never picks a writing algorithm over the network; CHORUS_ALGO forces one.
//
// A read that cannot finish at once returns 0; the engine calls read() again for the same
// range under its deadline until the completion has arrived (a write too). A failed read
// or write fails the
// connection to that peer (PeerError naming it), as a failed send does. map() returns
// nullptr: a peer's memory is never in this address space.
#pragma once

#include "transports/exposed_regions.hpp"
#include "transports/ib/ib_channel.hpp"
#include "transports/ib/ib_device.hpp"
#include "transports/transport.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace chorus::ib {

class IbPeerMemory final : public PeerMemory {
 public:
  // Reads are cut into pieces of at most `piece` bytes, spread over the peer's QPs on
  // every rail (rails[0] is the one whose pool lends the landing buffers; at most
  // kRendezvousRails are used, as for the rendezvous).
  IbPeerMemory(const std::vector<IbDevice*>& rails, size_t piece,
               std::function<IbChannel&(int)> channel);
  ~IbPeerMemory() override;

  std::vector<std::byte> describe(const LocalRegion& region, const void* data,
                                  size_t bytes) override;
  const std::byte* map(int, std::span<const std::byte>) override { return nullptr; }
  size_t read(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
              size_t bytes) override;
  // The landing buffer itself, kept until the next read (no copy out of it).
  size_t readLanded(int peer, std::span<const std::byte> blob, size_t offset, std::byte* fallback,
                    size_t bytes, const std::byte** landed) override;
  // RDMA WRITE into the peer's exposed range (see above).
  bool writes() const override { return true; }
  size_t write(int peer, std::span<const std::byte> blob, size_t offset, const void* src,
               size_t bytes) override;
  void forget(const void* data, size_t bytes) override;
  uint64_t flushReads() const { return flushes_; }

 private:
  struct Exposed {  // a registered region's registrations, pinned while peers may read it
    std::vector<RegCache::Handle> regs;  // per rail
  };
  struct MrDeleter {
    void operator()(ibv_mr* mr) const { ibv_dereg_mr(mr); }
  };
  struct Landing {  // a buffer of rail 0's pool, registered on the other rails too
    BufferPool::Buffer buffer;
    std::vector<std::unique_ptr<ibv_mr, MrDeleter>> others;  // rails 1, 2, ...: freed first
    std::byte* data() const { return buffer.data(); }
  };
  struct Pending {                  // a read or write in flight
    std::vector<uint32_t> tickets;  // pieces (and flush reads) posted, not yet complete
    size_t posted = 0;              // bytes posted so far (the rest waits for room)
    Landing landing;                // where it lands (a write: its source) when not in place
    std::vector<int> unflushed;     // a write's QPs that carried pieces, no flush read yet
  };
  using Key = std::tuple<int, uint64_t, size_t, bool>;  // peer, remote address, bytes, write
  Exposed& expose(const LocalRegion& region);
  const Exposed* exposedContaining(const void* data, size_t bytes) const;
  // Posts what is left of p's pieces (reads into `local`, or writes from it).
  void postPieces(IbChannel& channel, Pending& p, bool write, std::byte* local,
                  const IbChannel::ReadKeys* keys, uint64_t remote, size_t bytes);
  // Each rail's keys: the peer's rkeys[r] (from its record), the local side's lkey from
  // `direct` (a buffer this rank exposes) or else from p's landing buffer.
  void keysFor(const uint32_t* rkeys, const Exposed* direct, const Pending& p,
               IbChannel::ReadKeys* keys) const;
  // Posts a write's flush reads (one byte at `remote`, on each QP in p.unflushed).
  void postFlushes(IbChannel& channel, Pending& p, const uint32_t* rkeys, uint64_t remote);
  Landing landing(size_t bytes);  // a free landing buffer, or a new one (newLanding)
  Landing newLanding(size_t bytes);
  void finish(std::map<Key, Pending>::iterator it);
  // Posts what is left of `it`'s pieces and collects their completions (keysFor's keys);
  // true once all of them are complete. A failure finishes `it` and throws.
  bool postAndCollect(IbChannel& channel, std::map<Key, Pending>::iterator it, bool write,
                      std::byte* local, const uint32_t* rkeys, const Exposed* direct,
                      uint64_t remote, size_t bytes);
  // read() and readLanded(): with `landed`, the bytes stay in the landing buffer.
  size_t readInto(int peer, std::span<const std::byte> blob, size_t offset, void* dst, size_t bytes,
                  const std::byte** landed);

  std::vector<IbDevice*> rails_;  // at most kRendezvousRails
  size_t piece_;
  std::function<IbChannel&(int)> channel_;
  ExposedRegions<Exposed> exposed_;
  std::map<Key, Pending> pending_;
  std::vector<Landing> landings_;  // landing buffers not in use
  Landing held_;                   // what readLanded handed out last
  Landing flush_;                  // where flush reads land (their byte is never looked at)
  uint32_t nextTicket_ = 0;
  uint64_t flushes_ = 0;  // flush reads posted (flushReads(), for tests)
};

}  // namespace chorus::ib
