// Copies for large destinations that nobody reads soon: non-temporal stores.
#pragma once

#include <cstddef>

namespace chorus::kernels {

// Destinations from this size on are written by copyStreaming where the engine copies a
// peer's range into the user's buffer: a 4 MiB range no longer fits this machine's 2 MiB
// L2, so caching stores only add a read of every destination line (perf/README.md,
// "Streaming stores").
inline constexpr size_t kStreamingCopyFromBytes = 2 << 20;

// memcpy(dst, src, bytes) with non-temporal stores: the destination lines go to memory
// without being read first (a cached store reads each line before writing it). Ends with
// a store fence, so the bytes are visible in order with whatever the caller stores next
// (the flag that tells a peer the range is ready). dst and src must not overlap.
void copyStreaming(void* dst, const void* src, size_t bytes);

}  // namespace chorus::kernels
