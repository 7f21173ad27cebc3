#include "transports/ucx/ucx_peer_memory.hpp"

#include "errors.hpp"
#include "log.hpp"
#include "memory/shared_memory.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace chorus::ucx {
namespace {

struct Blob {
  uint64_t addr;  // the exposed range, in the exposing process
  uint64_t bytes;
  uint8_t keys[UcxPeerMemory::kKeyBytes];  // the rails' packed remote keys, length-prefixed
};
static_assert(sizeof(Blob) == PeerMemory::kMaxBlob);

// How many of the rails' keys, rail 0's first, fit a description (each after its length
// byte).
size_t keysThatFit(const std::vector<std::string>& keys) {
  size_t fit = 0, at = 0;
  for (const std::string& key : keys) {
    if ((at += 1 + key.size()) > UcxPeerMemory::kKeyBytes) break;
    ++fit;
  }
  return fit;
}

void packKeys(Blob& b, const std::vector<std::string>& keys) {
  const size_t fit = keysThatFit(keys);
  size_t at = 0;
  for (size_t rail = 0; rail < fit; ++rail) {
    const std::string& key = keys[rail];
    b.keys[at++] = static_cast<uint8_t>(key.size());
    std::memcpy(b.keys + at, key.data(), key.size());
    at += key.size();
  }
}

// Views into `b`'s bytes: valid while it is.
std::vector<std::string_view> unpackKeys(const Blob& b, int peer) {
  std::vector<std::string_view> keys;
  size_t at = 0;
  while (at < sizeof b.keys && b.keys[at] != 0) {
    const size_t n = b.keys[at++];
    if (at + n > sizeof b.keys)
      throw Error(
          Result::InternalError,
          "ucx: malformed remote key in the memory record from rank " + std::to_string(peer));
    keys.emplace_back(reinterpret_cast<const char*>(b.keys + at), n);
    at += n;
  }
  if (keys.empty())
    throw Error(Result::InternalError,
                "ucx: no remote key in the memory record from rank " + std::to_string(peer));
  return keys;
}

Blob parse(std::span<const std::byte> blob, int peer) {
  Blob b;
  if (blob.size() != sizeof b)
    throw Error(Result::InternalError,
                "ucx: malformed memory record from rank " + std::to_string(peer));
  std::memcpy(&b, blob.data(), sizeof b);
  return b;
}

}  // namespace

UcxPeerMemory::UcxPeerMemory(std::vector<ucp_context_h> contexts, Progress& progress,
                             std::function<UcxChannel&(int)> channel)
    : contexts_(std::move(contexts)), progress_(progress), channel_(std::move(channel)) {}

// The transport called close() before its workers went; the progress thread is gone.
UcxPeerMemory::~UcxPeerMemory() {
  exposed_.forEach([&](Exposed& e) { unmap(e); });
}

void UcxPeerMemory::close() noexcept {
  if (closed_) return;
  closed_ = true;
  std::lock_guard lock(progress_.mutex());
  // Requests still going complete (cancelled) as their endpoints close; UCX frees them then.
  // Their landing buffers stay until this object goes, after the workers.
  for (auto& [key, p] : pending_)
    for (Piece& piece : p.pieces)
      if (piece.request) ucp_request_free(piece.request);
  for (auto& [key, rkey] : keys_) ucp_rkey_destroy(rkey);
  keys_.clear();
}

void UcxPeerMemory::unmap(Exposed& e) noexcept {
  for (size_t rail = 0; rail < e.memh.size(); ++rail)
    if (e.memh[rail]) ucp_mem_unmap(contexts_[rail], e.memh[rail]);
  e.memh.clear();
}

// The whole region is mapped once per rail and stays so while this transport lives or until
// forget(): a peer may reach it at any time after describe().
UcxPeerMemory::Exposed& UcxPeerMemory::expose(const LocalRegion& region) {
  if (Exposed* e = exposed_.find(region)) return *e;
  unmapOverlapping(region.base, region.bytes);  // another buffer now at this address
  Exposed e;
  for (ucp_context_h context : contexts_) {
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = const_cast<std::byte*>(region.base);
    params.length = region.bytes;
    ucp_mem_h memh = nullptr;
    ucs_status_t status = ucp_mem_map(context, &params, &memh);
    if (status != UCS_OK) {
      unmap(e);
      throwStatus("mapping " + std::to_string(region.bytes) + " bytes for peers (ucp_mem_map)",
                  status);
    }
    e.memh.push_back(memh);
    void* packed = nullptr;
    size_t packedBytes = 0;
    status = ucp_rkey_pack(context, memh, &packed, &packedBytes);
    if (status != UCS_OK) {
      unmap(e);
      throwStatus("ucp_rkey_pack", status);
    }
    e.keys.emplace_back(static_cast<const char*>(packed), packedBytes);
    ucp_rkey_buffer_release(packed);
  }
  const size_t fit = keysThatFit(e.keys);
  if (fit == 0 || e.keys[0].empty()) {
    const size_t packedBytes = e.keys.empty() ? 0 : e.keys[0].size();
    unmap(e);
    throw Error(Result::InvalidUsage,
                "ucx: the remote key of a registered buffer is " + std::to_string(packedBytes) +
                    " bytes; a one-sided description carries at most " +
                    std::to_string(kKeyBytes - 1) +
                    " (UCX's transports for this memory pack larger keys: use the copy path, "
                    "or CHORUS_NET=ib)");
  }
  if (fit < e.keys.size() && !toldRails_) {
    toldRails_ = true;
    std::string sizes;
    for (const std::string& key : e.keys)
      sizes += (sizes.empty() ? "" : " + ") + std::to_string(key.size());
    logf(LogLevel::Info,
         "ucx: one-sided transfers take the paths of %zu of %zu rails: the rails' remote keys "
         "are %s bytes, a one-sided description carries %zu",
         fit, e.keys.size(), sizes.c_str(), kKeyBytes);
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
  Blob b{reinterpret_cast<uint64_t>(data), bytes, {}};
  packKeys(b, e.keys);
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

ucp_rkey_h UcxPeerMemory::remoteKey(int peer, int path, UcxChannel& channel,
                                    std::string_view packed) {
  auto it = keys_.find(std::make_tuple(peer, path, packed));  // no copy of the key to look
  if (it != keys_.end()) return it->second;
  ucp_rkey_h rkey = nullptr;
  const ucs_status_t status = ucp_ep_rkey_unpack(channel.endpoint(path), packed.data(), &rkey);
  if (status != UCS_OK) channel.oneSidedFailed("unpacking the remote key of", status);
  keys_.emplace(std::make_tuple(peer, path, std::string(packed)), rkey);
  return rkey;
}

void UcxPeerMemory::post(Pending& p, int peer, UcxChannel& channel,
                         const std::vector<std::string_view>& keys, uint64_t remote,
                         std::byte* local, size_t bytes, bool write) {
  const int rails = std::min(static_cast<int>(keys.size()), channel.rails());
  const int paths = rails * channel.endpointsPerRail();
  const size_t piece =
      paths <= 1 || bytes < 2 * kMinPiece ? bytes : std::max(kMinPiece, bytes / (2 * paths) + 1);
  const char* doing = write ? "writing to" : "reading from";
  p.posted = Clock::now();
  p.failed = true;            // until every piece is posted: a throw below leaves it so
  std::vector<size_t> putOn;  // write: bytes put on each path, flushed below
  for (size_t at = 0; at < bytes; at += piece) {
    const size_t n = std::min(piece, bytes - at);
    const int path = channel.pickOneSided(n, rails);
    const ucp_rkey_h rkey =
        remoteKey(peer, path, channel, keys[static_cast<size_t>(channel.railOf(path))]);
    ucp_request_param_t param{};
    if (write) {
      ucs_status_ptr_t put =
          ucp_put_nbx(channel.endpoint(path), local + at, n, remote + at, rkey, &param);
      if (UCS_PTR_IS_ERR(put)) channel.oneSidedFailed(doing, UCS_PTR_STATUS(put));
      if (put) ucp_request_free(put);  // the endpoint's flush completes after it
      if (putOn.size() <= static_cast<size_t>(path)) putOn.resize(static_cast<size_t>(path) + 1);
      putOn[static_cast<size_t>(path)] += n;
      continue;
    }
    ucs_status_ptr_t get =
        ucp_get_nbx(channel.endpoint(path), local + at, n, remote + at, rkey, &param);
    if (UCS_PTR_IS_ERR(get)) channel.oneSidedFailed(doing, UCS_PTR_STATUS(get));
    p.pieces.push_back({get, path, n});
  }
  for (size_t path = 0; path < putOn.size(); ++path) {
    if (putOn[path] == 0) continue;
    ucp_request_param_t param{};
    ucs_status_ptr_t flush = ucp_ep_flush_nbx(channel.endpoint(static_cast<int>(path)), &param);
    if (UCS_PTR_IS_ERR(flush)) channel.oneSidedFailed(doing, UCS_PTR_STATUS(flush));
    p.pieces.push_back({flush, static_cast<int>(path), putOn[path]});
  }
  p.failed = false;
}

bool UcxPeerMemory::complete(Pending& p, UcxChannel& channel, const char* doing, bool read) {
  if (p.failed) {  // it failed before, and so did the channel
    channel.oneSidedCheck();
    throw Error(Result::InternalError, std::string("ucx: a failed one-sided transfer ") + doing +
                                           " a peer asked for again");
  }
  bool done = true;
  for (Piece& piece : p.pieces) {
    if (piece.path < 0) continue;  // completed and counted
    if (piece.request) {
      const ucs_status_t status = ucp_request_check_status(piece.request);
      if (status == UCS_INPROGRESS) {
        done = false;
        continue;
      }
      ucp_request_free(piece.request);
      piece.request = nullptr;
      if (status != UCS_OK) {
        p.failed = true;
        channel.oneSidedFailed(doing, status);
      }
    }
    channel.oneSidedDone(piece.path, piece.bytes, p.posted, read);
    piece.path = -1;
  }
  return done;
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
  channel.oneSidedCheck();  // progresses the workers
  const Key key{peer, b.addr + offset, bytes, false};
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    const std::vector<std::string_view> keys = unpackKeys(b, peer);
    it = pending_.emplace(key, Pending{}).first;
    Pending& p = it->second;
    if (!exposedContaining(dst, bytes)) p.landing = landing(bytes);
    std::byte* into = p.landing ? p.landing.get() : static_cast<std::byte*>(dst);
    post(p, peer, channel, keys, b.addr + offset, into, bytes, /*write=*/false);
  }
  if (!complete(it->second, channel, "reading from", /*read=*/true)) return 0;
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
// (unless it lies in an exposed buffer); later calls only look at the flushes.
size_t UcxPeerMemory::write(int peer, std::span<const std::byte> blob, size_t offset,
                            const void* src, size_t bytes) {
  if (bytes == 0) return 0;
  const Blob b = parse(blob, peer);
  checkExposedRange("ucx", peer, "writing", b.bytes, offset, bytes);
  std::lock_guard lock(progress_.mutex());
  UcxChannel& channel = channel_(peer);
  channel.oneSidedCheck();
  const Key key{peer, b.addr + offset, bytes, true};
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    const std::vector<std::string_view> keys = unpackKeys(b, peer);
    it = pending_.emplace(key, Pending{}).first;
    Pending& p = it->second;
    auto* from = static_cast<std::byte*>(const_cast<void*>(src));  // UCX only reads it
    if (!exposedContaining(src, bytes)) {
      p.landing = landing(bytes);
      std::memcpy(p.landing.get(), src, bytes);
      from = p.landing.get();
    }
    post(p, peer, channel, keys, b.addr + offset, from, bytes, /*write=*/true);
  }
  if (!complete(it->second, channel, "writing to", /*read=*/false)) return 0;
  release(std::move(it->second.landing));
  pending_.erase(it);
  return bytes;
}

}  // namespace chorus::ucx
