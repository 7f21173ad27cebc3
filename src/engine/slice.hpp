// The engine's pipelining grain: the most bytes one step moves per engine pass
// (CHORUS_SLICE_BYTES, whose registry default must equal it: settings_test checks), and the
// slice the cost model's replay pipelines by unless the communicator set another.
#pragma once

#include <cstddef>

namespace chorus {

inline constexpr size_t kPipelineSliceBytes = 256 << 10;
inline constexpr size_t kMinSliceBytes = 4096;  // CHORUS_SLICE_BYTES' lower bound

}  // namespace chorus
