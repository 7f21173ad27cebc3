#include "transports/ib/ib_peer_memory.hpp"

#include "errors.hpp"
#include "memory/shared_memory.hpp"

#include <algorithm>
#include <cstring>

namespace chorus::ib {
namespace {

struct Blob {
  uint64_t addr;  // the exposed range, in the exposing process
  uint64_t bytes;
  uint32_t rkey[kRendezvousRails];  // its key on rail i's device (both sides have as many rails)
};
static_assert(sizeof(Blob) <= PeerMemory::kMaxBlob);

Blob parse(std::span<const std::byte> blob, int peer) {
  Blob b;
  if (blob.size() != sizeof b)
    throw Error(Result::InternalError,
                "ib: malformed memory record from rank " + std::to_string(peer));
  std::memcpy(&b, blob.data(), sizeof b);
  return b;
}

}  // namespace

IbPeerMemory::IbPeerMemory(const std::vector<IbDevice*>& rails, size_t piece,
                           std::function<IbChannel&(int)> channel)
    : rails_(rails.begin(), rails.begin() + std::min<size_t>(rails.size(), kRendezvousRails)),
      piece_(piece),
      channel_(std::move(channel)) {}

// Reads still in flight (an aborted op) land in registered memory this object owns, or
// in an exposed buffer whose registration goes with it.
IbPeerMemory::~IbPeerMemory() = default;

// The whole region is registered once (one MR per registered buffer) and stays pinned while
// this transport lives or until forget(): a peer may read it at any time after describe().
IbPeerMemory::Exposed& IbPeerMemory::expose(const LocalRegion& region) {
  if (Exposed* e = exposed_.find(region)) return *e;
  // Another buffer now at this address (the old one freed): its registration maps the old
  // pages, so it must go, with any other entry overlapping the new range.
  forget(region.base, region.bytes);
  Exposed e;
  for (IbDevice* rail : rails_) e.regs.push_back(rail->cache().acquire(region.base, region.bytes));
  return exposed_.insert(region, std::move(e));
}

const IbPeerMemory::Exposed* IbPeerMemory::exposedContaining(const void* data, size_t bytes) const {
  return exposed_.containing(data, bytes);
}

std::vector<std::byte> IbPeerMemory::describe(const LocalRegion& region, const void* data,
                                              size_t bytes) {
  const Exposed& e = expose(region);
  Blob b{reinterpret_cast<uint64_t>(data), bytes, {}};
  for (size_t r = 0; r < e.regs.size(); ++r) b.rkey[r] = e.regs[r].rkey();
  std::vector<std::byte> out(sizeof b);
  std::memcpy(out.data(), &b, sizeof b);
  return out;
}

void IbPeerMemory::forget(const void* data, size_t bytes) {
  exposed_.eraseOverlapping(data, bytes);
  for (IbDevice* rail : rails_) rail->cache().forget(data, bytes);
}

void IbPeerMemory::postPieces(IbChannel& channel, Pending& p, bool write, std::byte* local,
                              const IbChannel::ReadKeys* keys, uint64_t remote, size_t bytes) {
  while (p.posted < bytes) {
    const auto len = static_cast<uint32_t>(std::min(piece_, bytes - p.posted));
    const uint32_t ticket = nextTicket_++;
    int qp = -1;
    const bool posted = write ? channel.postPeerWrite(local + p.posted, remote + p.posted, keys,
                                                      rails_.size(), len, ticket, &qp)
                              : channel.postRead(local + p.posted, remote + p.posted, keys,
                                                 rails_.size(), len, ticket);
    if (!posted) return;  // every QP is full: the next call posts the rest
    p.tickets.push_back(ticket);
    p.posted += len;
    if (write && std::find(p.unflushed.begin(), p.unflushed.end(), qp) == p.unflushed.end())
      p.unflushed.push_back(qp);
  }
}

// One READ per QP that carried a piece, posted behind the pieces (not after their
// completions): the write costs about one round trip either way.
void IbPeerMemory::postFlushes(IbChannel& channel, Pending& p, const uint32_t* rkeys,
                               uint64_t remote) {
  if (p.unflushed.empty()) return;  // posted already: later polls only collect
  if (!flush_.data()) flush_ = newLanding(64);
  IbChannel::ReadKeys keys[kRendezvousRails];
  for (size_t r = 0; r < rails_.size(); ++r)
    keys[r] = {r == 0 ? flush_.buffer.lkey() : flush_.others[r - 1]->lkey, rkeys[r]};
  while (!p.unflushed.empty()) {
    const uint32_t ticket = nextTicket_++;
    if (!channel.postFlushRead(p.unflushed.back(), flush_.data(), remote, keys, ticket)) return;
    p.tickets.push_back(ticket);
    p.unflushed.pop_back();
    ++flushes_;
  }
}

void IbPeerMemory::keysFor(const uint32_t* rkeys, const Exposed* direct, const Pending& p,
                           IbChannel::ReadKeys* keys) const {
  for (size_t r = 0; r < rails_.size(); ++r) {
    keys[r].rkey = rkeys[r];
    keys[r].lkey = direct   ? direct->regs[r].lkey()
                   : r == 0 ? p.landing.buffer.lkey()
                            : p.landing.others[r - 1]->lkey;
  }
}

bool IbPeerMemory::postAndCollect(IbChannel& channel, std::map<Key, Pending>::iterator it,
                                  bool write, std::byte* local, const uint32_t* rkeys,
                                  const Exposed* direct, uint64_t remote, size_t bytes) {
  Pending& p = it->second;
  IbChannel::ReadKeys keys[kRendezvousRails];
  keysFor(rkeys, direct, p, keys);
  try {
    postPieces(channel, p, write, local, keys, remote, bytes);
    if (write && p.posted == bytes) postFlushes(channel, p, rkeys, remote);
    std::erase_if(p.tickets, [&](uint32_t t) { return channel.oneSidedDone(t); });
  } catch (...) {
    finish(it);
    throw;
  }
  return p.posted == bytes && p.unflushed.empty() && p.tickets.empty();
}

IbPeerMemory::Landing IbPeerMemory::landing(size_t bytes) {
  for (auto it = landings_.begin(); it != landings_.end(); ++it) {
    if (it->buffer.size() >= bytes) {
      Landing b = std::move(*it);
      landings_.erase(it);
      return b;
    }
  }
  return newLanding(bytes);
}

IbPeerMemory::Landing IbPeerMemory::newLanding(size_t bytes) {
  Landing l{rails_[0]->pool().get(bytes), {}};
  for (size_t r = 1; r < rails_.size(); ++r) {
    ibv_mr* mr =
        ibv_reg_mr(rails_[r]->pd(), l.buffer.data(), l.buffer.size(), IBV_ACCESS_LOCAL_WRITE);
    if (!mr)
      throwSystemError("ib: registering a " + std::to_string(l.buffer.size()) +
                       "-byte landing buffer on " + rails_[r]->name());
    l.others.emplace_back(mr);
  }
  return l;
}

void IbPeerMemory::finish(std::map<Key, Pending>::iterator it) {
  if (it->second.landing.data() && landings_.size() < 4)
    landings_.push_back(std::move(it->second.landing));
  pending_.erase(it);
}

size_t IbPeerMemory::read(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
                          size_t bytes) {
  return readInto(peer, blob, offset, dst, bytes, nullptr);
}

size_t IbPeerMemory::readLanded(int peer, std::span<const std::byte> blob, size_t offset,
                                std::byte* fallback, size_t bytes, const std::byte** landed) {
  *landed = fallback;
  return readInto(peer, blob, offset, fallback, bytes, landed);
}

size_t IbPeerMemory::readInto(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
                              size_t bytes, const std::byte** landed) {
  if (bytes == 0) return 0;
  if (held_.data()) {  // the last readLanded's bytes: the caller is done with them
    if (landings_.size() < 4) landings_.push_back(std::move(held_));
    held_ = Landing{};
  }
  const Blob b = parse(blob, peer);
  checkExposedRange("ib", peer, "reading", b.bytes, offset, bytes);
  IbChannel& channel = channel_(peer);
  const uint64_t remote = b.addr + offset;
  const Key key{peer, remote, bytes, false};
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    Pending p;
    if (!exposedContaining(dst, bytes)) p.landing = landing(bytes);
    it = pending_.emplace(key, std::move(p)).first;
  }
  Pending& p = it->second;
  const Exposed* direct = p.landing.data() ? nullptr : exposedContaining(dst, bytes);
  if (!p.landing.data() && !direct)
    throw Error(Result::InternalError, "ib: the destination of a read in flight from rank " +
                                           std::to_string(peer) + " is no longer registered");
  std::byte* into = direct ? static_cast<std::byte*>(dst) : p.landing.data();
  if (!postAndCollect(channel, it, false, into, b.rkey, direct, remote, bytes)) return 0;
  if (!direct && landed) {
    *landed = into;
    held_ = std::move(p.landing);
  } else if (!direct) {
    std::memcpy(dst, into, bytes);
  }
  finish(it);
  return bytes;
}

// The source is copied into the landing buffer once, when the write is first asked for;
// later calls for the same range only post what is left and collect completions.
size_t IbPeerMemory::write(int peer, std::span<const std::byte> blob, size_t offset,
                           const void* src, size_t bytes) {
  if (bytes == 0) return 0;
  const Blob b = parse(blob, peer);
  checkExposedRange("ib", peer, "writing", b.bytes, offset, bytes);
  IbChannel& channel = channel_(peer);
  const uint64_t remote = b.addr + offset;
  const Key key{peer, remote, bytes, true};
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    Pending p;
    if (!exposedContaining(src, bytes)) {
      p.landing = landing(bytes);
      std::memcpy(p.landing.data(), src, bytes);
    }
    it = pending_.emplace(key, std::move(p)).first;
  }
  Pending& p = it->second;
  const Exposed* direct = p.landing.data() ? nullptr : exposedContaining(src, bytes);
  if (!p.landing.data() && !direct)
    throw Error(Result::InternalError, "ib: the source of a write in flight to rank " +
                                           std::to_string(peer) + " is no longer registered");
  std::byte* from =
      direct ? const_cast<std::byte*>(static_cast<const std::byte*>(src)) : p.landing.data();
  if (!postAndCollect(channel, it, true, from, b.rkey, direct, remote, bytes)) return 0;
  finish(it);
  return bytes;
}

}  // namespace chorus::ib
