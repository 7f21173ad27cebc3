// Copies for large destinations that nobody reads soon: non-temporal stores.
#pragma once

#include <cstddef>

namespace chorus::kernels {

// Destinations from this size on are written by copyStreaming where the engine copies a
// peer's range into the user's buffer: such a range is far beyond this machine's 2 MiB L2,
// so caching stores only add a read of every destination line (perf/README.md, "Streaming
// stores"). Not from 2 MiB: at np 4, 8 MiB in place (all four ranks' buffers in the last
// level cache, the result read again by the next call) ran 0.83x with it.
inline constexpr size_t kStreamingCopyFromBytes = 4 << 20;

// memcpy(dst, src, bytes) with non-temporal stores: the destination lines go to memory
// without being read first (a cached store reads each line before writing it). Ends with
// a store fence, so the bytes are visible in order with whatever the caller stores next
// (the flag that tells a peer the range is ready). dst and src must not overlap.
void copyStreaming(void* dst, const void* src, size_t bytes);

}  // namespace chorus::kernels
