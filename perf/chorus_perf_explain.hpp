#pragma once

#include <optional>

namespace perf {

// Handles `--explain` (see the .cpp); nullopt when the flag is absent.
std::optional<int> runExplain(int argc, char** argv);

}  // namespace perf
