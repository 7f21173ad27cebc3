// The ucx transport's connection record, apart from UCX so that it can be fuzzed
// (tests/fuzz/ucx_record_fuzz.cpp): what each rank publishes under "ucx/<rank>" in the
// store, its settings followed by its UCP worker address.
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
};

// magic[8] | block u64 | window i32 | nranks i32 | peerErrors i32 | paths i32 | address:
// the fields as laid out in memory (both ends are the same build).
std::vector<std::byte> encodeRecord(const RecordSettings& ours, std::string_view workerAddress);
// The worker address in rank `peer`'s record. Throws Error(InternalError) for a record
// that is not one (bad magic or reserved field, no address), Error(InvalidUsage) naming
// both ranks' settings when they differ from `ours`.
std::string decodeRecord(std::span<const std::byte> record, int peer, int rank,
                         const RecordSettings& ours);

}  // namespace chorus::ucx
