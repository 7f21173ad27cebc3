// The transport interface: a transport connects this rank to its peers and moves bytes,
// nothing else. Each peer is reached through a Channel, an ordered byte stream in each
// direction. Everything is non-blocking; the engine drives progress and sleeps through
// Transport::wait, always with a deadline.
#pragma once

#include "clock.hpp"
#include "errors.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace chorus {

class Store;
struct LocalRegion;
class DirectTransfer;

class Channel {
 public:
  virtual ~Channel() = default;
  // Copies up to `bytes` from `data` into the outgoing stream; returns how many bytes it
  // took (0 when the stream is full for now). Throws PeerError if the peer is gone.
  virtual size_t trySend(const void* data, size_t bytes) = 0;
  // The contiguous incoming bytes available now (possibly empty). The span stays valid
  // until consume(). Throws PeerError if the peer is gone and nothing is left to read.
  virtual std::span<const std::byte> peek() = 0;
  // Releases the first `bytes` of what peek() returned.
  virtual void consume(size_t bytes) = 0;
  // Copies up to `bytes` of the incoming bytes available now into `out`, consuming none,
  // also past where peek() stops (the end of a ring); returns how many it copied. This
  // default copies only what peek() returns.
  virtual size_t peekCopy(std::byte* out, size_t bytes) {
    const std::span<const std::byte> now = peek();
    const size_t n = std::min(bytes, now.size());
    if (n > 0) std::memcpy(out, now.data(), n);
    return n;
  }
  // Zero-copy transfers of large messages between registered buffers beside the stream,
  // or nullptr where this channel has none (verbs has them; ucx with CHORUS_UCX_RNDV_BYTES).
  virtual DirectTransfer* directTransfer() { return nullptr; }
};

// A channel's rendezvous (zero-copy) protocol: a message of at least minBytes() is announced in
// the stream by a RendezvousOffer (engine/rendezvous.hpp) saying whether the sender's
// source is registered. When it is, the receiver answers out of band of the stream:
// offer() with the registered destination (the sender then puts the data straight from its
// buffer into it: RDMA WRITE with immediate, no staging copy on either side) or offer()
// with none (the data follows in the stream as usual). Clear to send: a receiver that
// will take any registered source (its destination registered and free to be written)
// answers with its destination as soon as its step begins, before the offer arrived, so
// the sender can write as soon as its offer is out; if the offer then says the source is
// not registered, the receiver withdraw()s and the data follows in the stream (the sender
// drops that answer). One transfer at a time in each direction, in the order of the steps;
// both ends number them (sending(), receiving()) so an answer is matched to its transfer.
// Calls never block: false/None/0 mean "not yet", and the engine polls again under its
// deadline. Each call throws PeerError naming the peer once the connection failed.
class DirectTransfer {
 public:
  virtual ~DirectTransfer() = default;
  // Messages of at least this many bytes are announced (the same on both ends).
  virtual size_t minBytes() const = 0;
  // Bytes of a registered message's head, and as many of its tail, that the sender may
  // stream instead of writing (engine/rendezvous.hpp's streamedEnd bounds them; the offer
  // says what it chose): the head goes while the answer travels, the tail while the
  // last write completes. 0: every byte is written.
  virtual size_t streamedEnds() const { return 0; }
  // Sender: a transfer is announced (its offer goes out now); answer() and put() are
  // about it until the next. Receiver: a step taking an announced transfer begins, before
  // offer() (which may come before or after its RendezvousOffer is read).
  virtual void sending() = 0;
  virtual void receiving() = 0;
  // Receiver, after an offer() with a destination sent before the RendezvousOffer was
  // read: that offer says the data keeps the stream; forgets the destination.
  virtual void withdraw() = 0;
  // Receiver: answers the peer's announced transfer with [data, data + bytes) of
  // `region` as its destination, or refuses it (region null). false: no room to send
  // the answer yet.
  virtual bool offer(const LocalRegion* region, std::byte* data, size_t bytes) = 0;
  // Receiver: the largest transfer this channel's own registered bounce buffer takes (0:
  // none), and the buffer itself for a transfer of `bytes` (nullptr when larger; taken at
  // the first call, and replaced by a larger one at a call with more bytes than it has:
  // the pointer holds until then). A RecvReduce that cannot fold in its destination (in
  // place, destination unregistered, local operand still being written) lets the peer
  // write there instead and folds from it into the destination: one pass, as the stream's
  // fold, without the sender's staging copy. A Recv into an unregistered destination
  // lets the peer write there too and copies out once (instead of the ring's two copies). One
  // transfer uses it at a time (the receiving direction's, in step order: the next one's answer
  // goes out only once this step completed, so only after its fold).
  virtual size_t bounceBytes() const { return 0; }
  virtual std::byte* bounce(size_t /*bytes*/) { return nullptr; }
  // Receiver: offer() with the bounce buffer as the destination (bounce(bytes) first).
  virtual bool offerBounce(size_t /*bytes*/) { return false; }
  // Receiver: the bytes of the accepted transfer's written middle (from its first byte)
  // that have landed with every byte before them, while later pieces may still be in
  // flight (they land in any order across QPs and rails): the engine may fold or copy
  // them out meanwhile (rendezvous.cpp's kFoldAsPiecesLand, off: measured slower in the
  // Soft-RoCE bed). 0 for a transport that only knows the whole (landed()).
  virtual size_t landedPrefix() { return 0; }
  // Receiver: true once the `bytes` of the accepted transfer that the sender writes (its
  // middle, without the streamed ends) have landed (it is then forgotten).
  virtual bool landed(size_t bytes) = 0;
  // Sender: the peer's answer to this side's oldest announced transfer.
  enum class Answer { None, Accepted, Refused };
  virtual Answer answer() = 0;  // Refused is taken (forgotten) when returned
  // Sender, after Accepted: posts writes of source bytes [from, to) of the transfer to the
  // same offsets of the destination (`data` points at its first byte, inside `region`);
  // returns the end of what is posted now (from while the queues are full).
  virtual size_t put(const LocalRegion& region, const std::byte* data, size_t from, size_t to) = 0;
  // Sender: true once the transfer's bytes up to `bytes` (the end of its written middle)
  // were posted and have completed (the peer has them; the source may be reused); the
  // answer is then forgotten.
  virtual bool putDone(size_t bytes) = 0;
};

// One-sided access to peers' memory, the second kind of data movement beside the Channel:
// a rank describes part of a buffer it registered (an opaque blob it sends the peer, e.g.
// over the Channel), the peer reaches that memory from the blob: mapped into its own
// address space when the transport can (shm: the memfd; CUDA IPC: the device pointer), or
// read into a local buffer (shm: CMA; verbs: RDMA READ). Every transport offers the same
// three calls; a read that cannot finish at once (an RDMA read) returns 0 until it has,
// and the engine polls it again under its deadline.
class PeerMemory {
 public:
  virtual ~PeerMemory() = default;
  // Describes [data, data + bytes), which lies in `region`, for `peer`. At most kMaxBlob
  // bytes (room for UCX's remote keys of four rails: 20 bytes each with rc_verbs and tcp).
  // Throws Error if this transport cannot expose such memory.
  static constexpr size_t kMaxBlob = 112;
  virtual std::vector<std::byte> describe(const LocalRegion& region, const void* data,
                                          size_t bytes) = 0;
  // The described memory in this process's address space, or nullptr when it can only be
  // read (then read() reaches it). Mappings are cached; throws PeerError if the peer is gone.
  virtual const std::byte* map(int peer, std::span<const std::byte> blob) = 0;
  // Copies bytes [offset, offset + bytes) of the described memory into `dst`; returns the
  // bytes now complete (all of them, or 0 while a posted read is in flight). Throws
  // PeerError naming the peer if it is gone.
  virtual size_t read(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
                      size_t bytes) = 0;
  // As read(), for a caller that only reads the bytes (a PeerReduce folds them): they may
  // stay where the transport landed them (verbs: its registered landing buffer), saving a
  // copy. *landed points at them once complete, valid until this object's next read;
  // `fallback` (bytes long) is where they go otherwise.
  virtual size_t readLanded(int peer, std::span<const std::byte> blob, size_t offset,
                            std::byte* fallback, size_t bytes, const std::byte** landed) {
    *landed = fallback;
    return read(peer, blob, offset, fallback, bytes);
  }
  // Writing into the described memory (PeerWrite). The memory in this process's address
  // space, writable, or nullptr when it can only be written through write(); mappings are
  // cached as map()'s. Throws PeerError if the peer is gone.
  virtual std::byte* mapWritable(int /*peer*/, std::span<const std::byte> /*blob*/) {
    return nullptr;
  }
  // Whether write() can write into peers' memory (PeerWrite steps run over this transport).
  virtual bool writes() const { return false; }
  // Copies `bytes` from `src` to bytes [offset, offset + bytes) of the described memory;
  // returns the bytes now complete (all, or 0 while a posted write is in flight). Throws
  // Error where this transport cannot write into peers' memory, PeerError naming the peer
  // if it is gone.
  virtual size_t write(int peer, std::span<const std::byte> /*blob*/, size_t /*offset*/,
                       const void* /*src*/, size_t /*bytes*/) {
    throw Error(Result::InvalidUsage, "this transport cannot write into rank " +
                                          std::to_string(peer) +
                                          "'s memory (one-sided writes: shm, ib and ucx)");
  }
  // [data, data + bytes) is no longer registered (deregister): drop what describe() keeps
  // for it (verbs: the memory registration, which would map the old pages if the address
  // were reused).
  virtual void forget(const void* /*data*/, size_t /*bytes*/) {}
  // After this rank read through map(): throws Error if the mapping is no longer the
  // peer's memory (it was replaced while the read ran), so such a read is never reported
  // as a success. Transports without mappings have nothing to check.
  virtual void checkMapped(int /*peer*/, std::span<const std::byte> /*blob*/) {}
};

// Small messages without a queue (transports that share memory: shm): each rank owns two
// slots that every peer reads in place. Message `seq` (1, 2, ... per rank, in step on
// every rank) goes to slot seq % 2, so a rank may post message seq + 2 only once it has
// taken every peer's message seq + 1 (the peers posted that after taking its message seq).
// transports/shm/mailbox.hpp says how a slot is written (data and sequence flag together,
// or data then flag).
class Mailbox {
 public:
  virtual ~Mailbox() = default;
  virtual size_t capacity() const = 0;  // most bytes one message holds
  // Publishes this rank's message `seq` and wakes peers asleep in Transport::wait.
  virtual void post(uint32_t seq, const void* data, size_t bytes) = 0;
  // Copies `peer`'s message `seq` into `out` when all of it is there; false otherwise.
  // `bytes` is what this rank expects. A message of another length (the peer made a call
  // of another size) may be taken as posted, cut to `bytes` or followed by zeros, so that
  // its fingerprint shows the difference; where it is not, the peer's take of ours is.
  virtual bool tryTake(int peer, uint32_t seq, void* out, size_t bytes) = 0;
};

// Data sent to a peer that its host has not acknowledged (Transport::silence).
struct PeerSilence {
  // Resends (200 ms apart at first, doubling) or probes (1 s apart) in a row that went
  // unanswered, after which a silent host is named as such: one lost segment is resent once.
  static constexpr int kUnansweredInARow = 3;
  std::chrono::milliseconds since{0};  // since the host last acknowledged anything
  int unanswered = 0;  // resends of data or keepalive probes in a row that went unanswered
  bool cutOff() const { return unanswered >= kUnansweredInARow; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual Channel& channel(int peer) = 0;
  // Two-phase sleep without lost wake-ups: call prepareWait(), make one more progress
  // pass, and if it did nothing call wait(token, deadline). wait returns when a peer may
  // have made progress on any channel, or at the deadline.
  virtual uint64_t prepareWait() = 0;
  virtual void wait(uint64_t token, Deadline deadline) = 0;
  // Non-blocking check that every peer is still there, for transports that can tell (shm:
  // the peers' processes); throws PeerError naming a dead one. The engine calls it every
  // ~100 ms while ops are in flight, from polling and from waiting alike.
  virtual void checkPeers() {}
  // For a stall's diagnosis, whether `peer`'s host still answers: while probing (from
  // half the deadline), the transport asks it for an answer even when the link is idle;
  // silence() says what went unanswered (a host down or cut off; a stopped process's kernel
  // still answers), empty where all was answered or the transport cannot tell.
  virtual void probe(int /*peer*/, bool /*on*/) {}
  virtual std::optional<PeerSilence> silence(int /*peer*/) { return std::nullopt; }
  // One-sided access to peers' memory, or nullptr where this transport has none (yet).
  virtual PeerMemory* peerMemory() { return nullptr; }
  // The small-message mailbox, or nullptr when this transport has none.
  virtual Mailbox* mailbox() { return nullptr; }
};

// Everything a transport needs to connect: who we are and where to rendezvous.
struct TransportContext {
  int rank = 0;
  int nranks = 1;
  Store* store = nullptr;  // keys are already scoped to this communicator
  std::string hostId;      // ranks with equal hostId share a machine
  Deadline deadline;       // connection set-up must finish by then
  // How long a peer may take to answer a connection made on first use (tcp); 0: what is
  // left of `deadline` at set-up.
  std::chrono::milliseconds timeout{0};
};

std::unique_ptr<Transport> makeShmTransport(const TransportContext& ctx);
std::unique_ptr<Transport> makeTcpTransport(const TransportContext& ctx);
// By name: "shm", "tcp", and "ib" / "ucx" when built (transport_factory.cpp). Throws
// Error(InvalidArgument) for a name that is unknown or not built.
std::unique_ptr<Transport> makeTransport(std::string_view kind, const TransportContext& ctx);
// The transport between nodes when CHORUS_NET is not set: "ib" when an active RDMA device
// exists, else "tcp".
std::string defaultNetTransport();

}  // namespace chorus
