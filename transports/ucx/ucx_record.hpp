// The ucx transport's connection record, apart from UCX so that it can be fuzzed
// (tests/fuzz/ucx_record_fuzz.cpp): what each rank publishes under "ucx/<rank>" in the
// store, its settings followed by the address of each of its UCP workers (one per device,
// CHORUS_UCX_NET_DEVICES).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::ucx {

// The settings every rank must share, published next to the worker address, so that
// ranks started with different settings fail loudly instead of truncating blocks.
struct RecordSettings {
  uint64_t block = 0;  // CHORUS_UCX_BLOCK
  int window = 0;      // CHORUS_UCX_WINDOW
  int nranks = 0;
  bool peerErrors = false;  // CHORUS_UCX_ERR_MODE=peer
  int paths = 1;            // CHORUS_UCX_PATHS
  uint64_t rendezvous = 0;  // CHORUS_UCX_RNDV_BYTES
};

// Most workers (devices) a rank publishes.
inline constexpr int kMostDevices = 64;

// Most host addresses (net::hostAddresses) a rank publishes, and the longest one.
inline constexpr int kMostHostAddresses = 64;
inline constexpr size_t kLongestHostAddress = 64;

// magic[8] | block u64 | rendezvous u64 | window i32 | nranks i32 | peerErrors i32 | paths i32 |
// devices i32 | hosts i32 | devices x (length u32 | address) | hosts x (length u32 | host address):
// the fields as laid out in memory (both ends are the same build). Ranks may differ in their device
// count (a pair uses the smaller), not in the settings above. The host addresses (this host's,
// text) let a peer find its connections to this rank's host (Transport::probe).
std::vector<std::byte> encodeRecord(const RecordSettings& ours,
                                    std::span<const std::string> workerAddresses,
                                    std::span<const std::string> hostAddresses = {});
// The worker addresses in rank `peer`'s record, one per device (at least one), and its host
// addresses into *hostAddresses where given. Throws Error(InternalError) for a record that is
// not one (bad magic, too many host addresses, no or empty worker address, an empty or too
// long host address, bytes left over), Error(InvalidUsage) naming both ranks' settings when
// they differ from `ours`.
std::vector<std::string> decodeRecord(std::span<const std::byte> record, int peer, int rank,
                                      const RecordSettings& ours,
                                      std::vector<std::string>* hostAddresses = nullptr);

}  // namespace chorus::ucx
