#pragma once

#include <optional>

namespace perf {

// Handles `--calibrate FILE` (see the .cpp); nullopt when the flag is absent.
std::optional<int> runCalibrate(int argc, char** argv);

}  // namespace perf
