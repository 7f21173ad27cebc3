#include "transports/ucx/ucx_peer_memory.hpp"

#include "errors.hpp"
#include "memory/shared_memory.hpp"

#include <cstring>
#include <mutex>

namespace chorus::ucx {
namespace {

struct Blob {
  uint64_t addr;  // the exposed range, in the exposing process
  uint64_t bytes;
  uint8_t keyBytes;
  uint8_t key[UcxPeerMemory::kMaxKeyBytes];  // the region's packed remote key
};
static_assert(sizeof(Blob) == PeerMemory::kMaxBlob);

Blob parse(std::span<const std::byte> blob, int peer) {
  Blob b;
  if (blob.size() != sizeof b)
    throw Error(Result::InternalError,
                "ucx: malformed memory record from rank " + std::to_string(peer));
  std::memcpy(&b, blob.data(), sizeof b);
  if (b.keyBytes == 0 || b.keyBytes > UcxPeerMemory::kMaxKeyBytes)
    throw Error(Result::InternalError,
                "ucx: malformed remote key in the memory record from rank " + std::to_string(peer));
  return b;
}

}  // namespace

UcxPeerMemory::UcxPeerMemory(const Context& context, Progress& progress,
                             std::function<UcxChannel&(int)> channel)
    : context_(context.get()), progress_(progress), channel_(std::move(channel)) {}

// The transport called close() before its workers went; the progress thread is gone.
UcxPeerMemory::~UcxPeerMemory() {
  exposed_.forEach([&](Exposed& e) { unmap(e); });
}

void UcxPeerMemory::close() noexcept {
  if (closed_) return;
  closed_ = true;
  std::lock_guard lock(progress_.mutex());
  // Requests still going complete (cancelled) as their endpoints close; UCX frees them then.
  for (auto& [key, p] : pending_)
    if (p.request) ucp_request_free(p.request);
  // Their landing buffers stay until this object goes, after the workers.
  for (auto& [key, rkey] : keys_) ucp_rkey_destroy(rkey);
  keys_.clear();
}

void UcxPeerMemory::unmap(Exposed& e) noexcept {
  if (e.memh) ucp_mem_unmap(context_, e.memh);
  e.memh = nullptr;
}

// The whole region is mapped once and stays so while this transport lives or until
// forget(): a peer may reach it at any time after describe().
UcxPeerMemory::Exposed& UcxPeerMemory::expose(const LocalRegion& region) {
  if (Exposed* e = exposed_.find(region)) return *e;
  unmapOverlapping(region.base, region.bytes);  // another buffer now at this address
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = const_cast<std::byte*>(region.base);
  params.length = region.bytes;
  Exposed e{nullptr, {}};
  ucs_status_t status = ucp_mem_map(context_, &params, &e.memh);
  if (status != UCS_OK)
    throwStatus("mapping " + std::to_string(region.bytes) + " bytes for peers (ucp_mem_map)",
                status);
  void* packed = nullptr;
  size_t packedBytes = 0;
  status = ucp_rkey_pack(context_, e.memh, &packed, &packedBytes);
  if (status != UCS_OK) {
    unmap(e);
    throwStatus("ucp_rkey_pack", status);
  }
  e.key.assign(static_cast<const char*>(packed), packedBytes);
  ucp_rkey_buffer_release(packed);
  if (e.key.empty() || e.key.size() > kMaxKeyBytes) {
    unmap(e);
    throw Error(Result::InvalidUsage,
                "ucx: the remote key of a registered buffer is " + std::to_string(packedBytes) +
                    " bytes; a one-sided description carries at most " +
                    std::to_string(kMaxKeyBytes) +
                    " (UCX's transports for this memory pack larger keys: use the copy path, "
                    "or CHORUS_NET=ib)");
  }
  return exposed_.insert(region, std::move(e));
}

bool UcxPeerMemory::exposedContaining(const void* data, size_t bytes) const {
  return exposed_.containing(data, bytes) != nullptr;
}

std::vector<std::byte> UcxPeerMemory::describe(const LocalRegion& region, const void* data,
                                               size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  const Exposed& e = expose(region);
  Blob b{reinterpret_cast<uint64_t>(data), bytes, static_cast<uint8_t>(e.key.size()), {}};
  std::memcpy(b.key, e.key.data(), e.key.size());
  std::vector<std::byte> out(sizeof b);
  std::memcpy(out.data(), &b, sizeof b);
  return out;
}

void UcxPeerMemory::forget(const void* data, size_t bytes) {
  std::lock_guard lock(progress_.mutex());
  unmapOverlapping(data, bytes);
}

void UcxPeerMemory::unmapOverlapping(const void* data, size_t bytes) {
  exposed_.eraseOverlapping(data, bytes, [&](Exposed& e) { unmap(e); });
}

ucp_rkey_h UcxPeerMemory::remoteKey(int peer, UcxChannel& channel, const std::string& packed) {
  const auto id = std::make_pair(peer, packed);
  auto it = keys_.find(id);
  if (it != keys_.end()) return it->second;
  ucp_rkey_h rkey = nullptr;
  const ucs_status_t status = ucp_ep_rkey_unpack(channel.oneSidedEndpoint(), packed.data(), &rkey);
  if (status != UCS_OK) channel.oneSidedFailed("unpacking the remote key of", status);
  keys_.emplace(id, rkey);
  return rkey;
}

bool UcxPeerMemory::complete(std::map<Key, Pending>::iterator it, UcxChannel& channel,
                             const char* doing) {
  Pending& p = it->second;
  if (p.request) {
    const ucs_status_t status = ucp_request_check_status(p.request);
    if (status == UCS_INPROGRESS) return false;
    ucp_request_free(p.request);
    p.request = nullptr;
    if (status != UCS_OK) {
      if (p.landing) orphans_.push_back(std::move(p.landing));
      pending_.erase(it);
      channel.oneSidedFailed(doing, status);
    }
  }
  return true;
}

UcxPeerMemory::Landing UcxPeerMemory::landing(size_t bytes) {
  for (auto it = landings_.begin(); it != landings_.end(); ++it) {
    if (it->bytes >= bytes) {
      Landing l = std::move(*it);
      landings_.erase(it);
      return l;
    }
  }
  return Landing{std::make_unique_for_overwrite<std::byte[]>(bytes), bytes};
}

void UcxPeerMemory::release(Landing l) {
  if (l && landings_.size() < 4) landings_.push_back(std::move(l));
}

size_t UcxPeerMemory::read(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
                           size_t bytes) {
  return readInto(peer, blob, offset, dst, bytes, nullptr);
}

size_t UcxPeerMemory::readLanded(int peer, std::span<const std::byte> blob, size_t offset,
                                 std::byte* fallback, size_t bytes, const std::byte** landed) {
  *landed = fallback;
  return readInto(peer, blob, offset, fallback, bytes, landed);
}

size_t UcxPeerMemory::readInto(int peer, std::span<const std::byte> blob, size_t offset, void* dst,
                               size_t bytes, const std::byte** landed) {
  if (bytes == 0) return 0;
  release(std::move(held_));  // the last readLanded's bytes: the caller is done with them
  held_ = Landing{};
  const Blob b = parse(blob, peer);
  checkExposedRange("ucx", peer, "reading", b.bytes, offset, bytes);
  std::lock_guard lock(progress_.mutex());
  UcxChannel& channel = channel_(peer);
  const ucp_ep_h ep = channel.oneSidedEndpoint();  // progresses the workers
  const uint64_t remote = b.addr + offset;
  const Key key{peer, remote, bytes, false};
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    const ucp_rkey_h rkey =
        remoteKey(peer, channel, std::string(reinterpret_cast<const char*>(b.key), b.keyBytes));
    Pending p;
    if (!exposedContaining(dst, bytes)) p.landing = landing(bytes);
    void* into = p.landing ? p.landing.get() : dst;
    ucp_request_param_t param{};
    ucs_status_ptr_t request = ucp_get_nbx(ep, into, bytes, remote, rkey, &param);
    if (UCS_PTR_IS_ERR(request)) channel.oneSidedFailed("reading from", UCS_PTR_STATUS(request));
    p.request = request;
    it = pending_.emplace(key, std::move(p)).first;
  }
  if (!complete(it, channel, "reading from")) return 0;
  Pending& p = it->second;
  if (p.landing && landed) {
    *landed = p.landing.get();
    held_ = std::move(p.landing);
  } else if (p.landing) {
    std::memcpy(dst, p.landing.get(), bytes);
    release(std::move(p.landing));
  }
  pending_.erase(it);
  return bytes;
}

// The source is copied into a landing buffer once, when the write is first asked for
// (unless it lies in an exposed buffer); later calls only look at the flush.
size_t UcxPeerMemory::write(int peer, std::span<const std::byte> blob, size_t offset,
                            const void* src, size_t bytes) {
  if (bytes == 0) return 0;
  const Blob b = parse(blob, peer);
  checkExposedRange("ucx", peer, "writing", b.bytes, offset, bytes);
  std::lock_guard lock(progress_.mutex());
  UcxChannel& channel = channel_(peer);
  const ucp_ep_h ep = channel.oneSidedEndpoint();
  const uint64_t remote = b.addr + offset;
  const Key key{peer, remote, bytes, true};
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    const ucp_rkey_h rkey =
        remoteKey(peer, channel, std::string(reinterpret_cast<const char*>(b.key), b.keyBytes));
    Pending p;
    const void* from = src;
    if (!exposedContaining(src, bytes)) {
      p.landing = landing(bytes);
      std::memcpy(p.landing.get(), src, bytes);
      from = p.landing.get();
    }
    ucp_request_param_t param{};
    ucs_status_ptr_t put = ucp_put_nbx(ep, from, bytes, remote, rkey, &param);
    if (UCS_PTR_IS_ERR(put)) channel.oneSidedFailed("writing to", UCS_PTR_STATUS(put));
    if (put) ucp_request_free(put);  // the flush below completes after it
    ucs_status_ptr_t flush = ucp_ep_flush_nbx(ep, &param);
    if (UCS_PTR_IS_ERR(flush)) {
      if (p.landing) orphans_.push_back(std::move(p.landing));  // the put may still read it
      channel.oneSidedFailed("writing to", UCS_PTR_STATUS(flush));
    }
    p.request = flush;
    it = pending_.emplace(key, std::move(p)).first;
  }
  if (!complete(it, channel, "writing to")) return 0;
  release(std::move(it->second.landing));
  pending_.erase(it);
  return bytes;
}

}  // namespace chorus::ucx
