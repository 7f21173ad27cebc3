// One-sided access over UCX (transport.hpp's PeerMemory): UCP's RMA, the same three calls
// verbs and shm offer, so every one-sided Schedule (peer_oneshot, peer_twoshot, peer_push,
// ...) runs over ucx too.
//
// - describe() maps the whole registered region with rail 0's context once (ucp_mem_map,
//   kept until forget() or the transport closes) and hands the peer the range's address
//   and the region's packed remote key. The key travels in the blob itself (at most
//   kMaxKeyBytes: 10-12 bytes with UCX 1.13's tcp, shared-memory and cma transports
//   here); a key that does not fit fails describe() with an error saying so. The reader
//   unpacks each key once per peer (cached by its bytes: equal bytes mean the same key).
// - read() is ucp_get_nbx, write() ucp_put_nbx followed by a flush of the endpoint
//   (ucp_ep_flush_nbx): a put's completion only says its source may be reused, the flush's
//   that the data is in the peer's memory, so the writer's "written" message, which may
//   take another endpoint, never overtakes its data. Both on the peer's first endpoint
//   on rail 0: one-sided transfers are not striped over paths or rails (nor is the
//   channel's rendezvous, ucx_channel.hpp).
// - Where a read lands: straight in the destination when it lies in a buffer this rank
//   exposes, else in a landing buffer of this object, copied out (or, for readLanded,
//   folded from in place) once complete; a write's source likewise. Memory this transport
//   cannot know (the engine's bounce slice, freed after an aborted op) is never what UCX
//   still writes into or reads from.
// - Over UCX's tcp transport RMA is emulated with active messages that the peer's worker
//   answers when it progresses: the engine while in a collective, the progress thread
//   (ucx_progress.hpp) otherwise. Measured in perf/README.md ("one-sided over ucx"); the
//   tuner never picks a one-sided algorithm over the network, CHORUS_ALGO forces one.
//
// A read or write that cannot finish at once returns 0; the engine calls again for the
// same range under its deadline. A failed operation fails the channel to that peer
// (PeerError naming it). Every call takes the progress mutex, as the channels do.
#pragma once

#include "transports/exposed_regions.hpp"
#include "transports/transport.hpp"
#include "transports/ucx/ucx_channel.hpp"
#include "transports/ucx/ucx_progress.hpp"
#include "transports/ucx/ucx_resources.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace chorus::ucx {

class UcxPeerMemory final : public PeerMemory {
 public:
  // The blob: address and length of the range (16 bytes), the key's length (1), the key.
  static constexpr size_t kMaxKeyBytes = PeerMemory::kMaxBlob - 17;

  // context: rail 0's; channel(peer) gives the peer's channel (its endpoint).
  UcxPeerMemory(const Context& context, Progress& progress,
                std::function<UcxChannel&(int)> channel);
  // After close(), with the workers gone: unmaps the exposed regions (the context lives).
  ~UcxPeerMemory() override;
  UcxPeerMemory(const UcxPeerMemory&) = delete;
  UcxPeerMemory& operator=(const UcxPeerMemory&) = delete;

  std::vector<std::byte> describe(const LocalRegion& region, const void* data,
                                  size_t bytes) override;
  const std::byte* map(int, std::span<const std::byte>) override { return nullptr; }
  size_t read(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
              size_t bytes) override;
  size_t readLanded(int peer, std::span<const std::byte> blob, size_t offset, std::byte* fallback,
                    size_t bytes, const std::byte** landed) override;
  bool writes() const override { return true; }
  size_t write(int peer, std::span<const std::byte> blob, size_t offset, const void* src,
               size_t bytes) override;
  void forget(const void* data, size_t bytes) override;

  // Before the endpoints close (the progress thread stopped): lets go of the requests in
  // flight and destroys the unpacked keys. Idempotent.
  void close() noexcept;

 private:
  struct Exposed {  // a region's mapping with the context, while peers may reach it
    ucp_mem_h memh;
    std::string key;  // packed remote key
  };
  struct Landing {  // a buffer of this object's, which UCX may still fill after an aborted op
    std::unique_ptr<std::byte[]> data;
    size_t bytes = 0;
    std::byte* get() const { return data.get(); }
    explicit operator bool() const { return data != nullptr; }
  };
  struct Pending {            // a get, or a put and its flush, in flight
    void* request = nullptr;  // the get's or the flush's; null once complete
    Landing landing;          // where it lands (a write: its source) if not in place
  };
  using Key = std::tuple<int, uint64_t, size_t, bool>;  // peer, remote address, bytes, write

  Exposed& expose(const LocalRegion& region);
  void unmapOverlapping(const void* data, size_t bytes);
  bool exposedContaining(const void* data, size_t bytes) const;
  void unmap(Exposed& e) noexcept;
  ucp_rkey_h remoteKey(int peer, UcxChannel& channel, const std::string& packed);
  // Polls `it` (mutex held): true once its request completed; a failure fails the channel
  // to the peer and throws, with `it` forgotten.
  bool complete(std::map<Key, Pending>::iterator it, UcxChannel& channel, const char* doing);
  size_t readInto(int peer, std::span<const std::byte> blob, size_t offset, void* dst, size_t bytes,
                  const std::byte** landed);

  ucp_context_h context_;
  Progress& progress_;
  std::function<UcxChannel&(int)> channel_;
  ExposedRegions<Exposed> exposed_;
  std::map<std::pair<int, std::string>, ucp_rkey_h> keys_;
  std::map<Key, Pending> pending_;
  Landing landing(size_t bytes);  // a free one of at least `bytes`, or a new one
  void release(Landing l);        // kept for reuse (a few), else freed

  Landing held_;                   // what readLanded handed out last
  std::vector<Landing> landings_;  // free for reuse: no allocation (and page faults) per read
  // Landing buffers of operations that failed while UCX may still use them (a put behind
  // a failed flush): freed with this object, after the workers.
  std::vector<Landing> orphans_;
  bool closed_ = false;
};

}  // namespace chorus::ucx
