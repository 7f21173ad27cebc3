// One-sided access over verbs (transport.hpp's PeerMemory), the pull model: describe()
// registers the exposed buffer (through the device's RegCache, pinned while exposed) and
// hands the peer its address and rkey; the peer's read() posts an RDMA READ straight
// from there into its destination, which it registers for the duration of the read. No
// staging ring on either side, and the exposing rank's CPU does nothing. map() returns
// nullptr: a peer's memory is never in this address space.
//
// A read that cannot finish at once returns 0; the engine calls read() again with the
// same arguments under its deadline until the completion has arrived. A failed read fails
// the connection to that peer (PeerError naming it), as a failed send does.
#pragma once

#include "transports/ib/ib_channel.hpp"
#include "transports/ib/ib_device.hpp"
#include "transports/transport.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

namespace chorus::ib {

class IbPeerMemory final : public PeerMemory {
 public:
  // Reads are cut into pieces of at most `piece` bytes, spread over the peer's QPs.
  IbPeerMemory(IbDevice& device, size_t piece, std::function<IbChannel&(int)> channel)
      : device_(device), piece_(piece), channel_(std::move(channel)) {}
  ~IbPeerMemory() override;

  std::vector<std::byte> describe(const LocalRegion& region, const void* data,
                                  size_t bytes) override;
  const std::byte* map(int, std::span<const std::byte>) override { return nullptr; }
  size_t read(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
              size_t bytes) override;
  void forget(const void* data, size_t bytes) override;

 private:
  struct Exposed {  // a registered region, pinned while peers may read it
    size_t bytes;
    uint64_t serial;
    RegCache::Handle reg;
  };
  struct Pending {  // a read in flight: its pieces' tickets and the pinned destination
    std::vector<uint32_t> tickets;  // posted, not yet complete
    size_t posted = 0;              // bytes posted so far (the rest waits for room)
    RegCache::Handle reg;
    bool transient;  // dst registered only for this read: forgotten when it is done
  };
  using Key = std::tuple<int, const void*, uint64_t, size_t>;  // peer, dst, remote, bytes
  Exposed& expose(const LocalRegion& region);
  const Exposed* exposedContaining(const void* data, size_t bytes) const;
  void postPieces(IbChannel& channel, Pending& p, std::byte* dst, uint64_t remote,
                  uint32_t rkey, size_t bytes);

  IbDevice& device_;
  size_t piece_;
  std::function<IbChannel&(int)> channel_;
  std::map<uintptr_t, Exposed> exposed_;  // by start address
  std::map<Key, Pending> pending_;
  uint32_t nextTicket_ = 0;
};

}  // namespace chorus::ib
