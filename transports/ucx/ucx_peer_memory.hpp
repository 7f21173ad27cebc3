// One-sided access over UCX (transport.hpp's PeerMemory): UCP's RMA, the same three calls
// verbs and shm offer, so every one-sided Schedule (peer_oneshot, peer_twoshot, peer_push,
// ...) runs over ucx too.
//
// - describe() maps the whole registered region with every rail's context once
//   (ucp_mem_map, kept until forget() or the transport closes) and hands the peer the
//   range's address and the region's packed remote keys, one per rail, in the blob itself
//   (kKeyBytes for all of them, each after its length: with UCX 1.13 a key is 10-12 bytes
//   over tcp, shared memory and cma, 20 over rc_verbs and tcp, so four rails fit). Rail 0's
//   key must fit (else describe() fails saying so); the other rails' go while they fit, and
//   a rail whose key did not is not used for this range (logged once at INFO). The reader
//   unpacks each key once per endpoint (cached by its bytes: equal bytes mean the same
//   key).
// - Striped as the channel's stream: read() and write() cut a range into pieces (at least
//   kMinPiece bytes, about two per usable path) and give each to the endpoint the channel's
//   path scheduler picks (UcxChannel::pickOneSided) among the paths of the rails the blob
//   has keys for, so a peer reached over two NICs is read over both and a slow one gets
//   fewer pieces; completions feed the scheduler's rates and the channel's per-path
//   read/written counters. read() is ucp_get_nbx per piece; write() ucp_put_nbx per piece,
//   then a flush of each endpoint used (ucp_ep_flush_nbx): a put's completion only says its
//   source may be reused, the flush's that the data is in the peer's memory, so the
//   writer's "written" message, which may take another endpoint, never overtakes its data.
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
// (PeerError naming it); its pieces still in flight are let go at close(), and their
// landing buffer with this object. Every call takes the progress mutex, as the channels do.
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
#include <string_view>
#include <tuple>
#include <vector>

namespace chorus::ucx {

class UcxPeerMemory final : public PeerMemory {
 public:
  // The blob: address and length of the range (16 bytes), then the rails' keys, each its
  // length (1 byte) and its bytes, a zero length (or the end) after the last.
  static constexpr size_t kKeyBytes = PeerMemory::kMaxBlob - 16;
  // Ranges shorter than two of these go whole on one path.
  static constexpr size_t kMinPiece = 64 << 10;

  // contexts: one per rail, rail 0 first; channel(peer) gives the peer's channel.
  UcxPeerMemory(std::vector<ucp_context_h> contexts, Progress& progress,
                std::function<UcxChannel&(int)> channel);
  // After close(), with the workers gone: unmaps the exposed regions (the contexts live).
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
  struct Exposed {  // a region's mappings with the rails' contexts, while peers may reach it
    std::vector<ucp_mem_h> memh;    // per rail
    std::vector<std::string> keys;  // packed remote keys, per rail
  };
  struct Landing {  // a buffer of this object's, which UCX may still fill after an aborted op
    std::unique_ptr<std::byte[]> data;
    size_t bytes = 0;
    std::byte* get() const { return data.get(); }
    explicit operator bool() const { return data != nullptr; }
  };
  struct Piece {              // a get, or the flush of an endpoint's puts, in flight
    void* request = nullptr;  // null once complete
    int path = 0;
    size_t bytes = 0;  // the bytes it moved on its path
  };
  struct Pending {  // a read or write of a range: its pieces
    std::vector<Piece> pieces;
    Clock::time_point posted;
    Landing landing;  // where it lands (a write: its source) if not in place
    bool failed = false;
  };
  using Key = std::tuple<int, uint64_t, size_t, bool>;  // peer, remote address, bytes, write

  Exposed& expose(const LocalRegion& region);
  void unmapOverlapping(const void* data, size_t bytes);
  bool exposedContaining(const void* data, size_t bytes) const;
  void unmap(Exposed& e) noexcept;
  ucp_rkey_h remoteKey(int peer, int path, UcxChannel& channel, std::string_view packed);
  // Posts a range's pieces (get, or put and the endpoints' flushes) from/into `local`.
  void post(Pending& p, int peer, UcxChannel& channel, const std::vector<std::string_view>& keys,
            uint64_t remote, std::byte* local, size_t bytes, bool write);
  // Polls the pieces (mutex held): true once all completed; a failure fails the channel to
  // the peer and throws, the entry kept (marked failed) until close().
  bool complete(Pending& p, UcxChannel& channel, const char* doing, bool read);
  size_t readInto(int peer, std::span<const std::byte> blob, size_t offset, void* dst, size_t bytes,
                  const std::byte** landed);

  std::vector<ucp_context_h> contexts_;
  Progress& progress_;
  std::function<UcxChannel&(int)> channel_;
  ExposedRegions<Exposed> exposed_;
  // peer, path, packed key; looked up by a view of the key (std::less<>: no copy)
  std::map<std::tuple<int, int, std::string>, ucp_rkey_h, std::less<>> keys_;
  std::map<Key, Pending> pending_;
  Landing landing(size_t bytes);  // a free one of at least `bytes`, or a new one
  void release(Landing l);        // kept for reuse (a few), else freed

  Landing held_;                   // what readLanded handed out last
  std::vector<Landing> landings_;  // free for reuse: no allocation (and page faults) per read
  bool closed_ = false;
  bool toldRails_ = false;  // logged that some rails' keys do not fit a description
};

}  // namespace chorus::ucx
