// Copies for large destinations that nobody reads soon: non-temporal stores.
#pragma once

#include <cstddef>

namespace chorus::kernels {

// Steps from this size on may be written by copyStreaming where the engine copies a peer's
// range into the user's buffer (beyond this machine's 2 MiB L2, caching stores only add a
// read of every destination line), if the op is large too (EngineConfig::streamFromBytes,
// CHORUS_STREAM_FROM_BYTES: 64 MiB of message x ranks). Below that, with all ranks'
// buffers in the last-level cache and the result read again by the next call, in place
// lost: np 4 8 MiB 0.83x, np 2 8 and 16 MiB (perf/README.md, "Streaming stores").
inline constexpr size_t kStreamingCopyFromBytes = 1 << 20;

// memcpy(dst, src, bytes) with non-temporal stores: the destination lines go to memory
// without being read first (a cached store reads each line before writing it). Ends with
// a store fence, so the bytes are visible in order with whatever the caller stores next
// (the flag that tells a peer the range is ready). dst and src must not overlap.
void copyStreaming(void* dst, const void* src, size_t bytes);

}  // namespace chorus::kernels
