#include "transports/exposed_regions.hpp"

#include "errors.hpp"

#include <string>

namespace chorus {

void checkExposedRange(const char* transport, int peer, const char* doing, uint64_t exposedBytes,
                       size_t offset, size_t bytes) {
  // Written so that a huge offset cannot wrap around.
  if (offset <= exposedBytes && bytes <= exposedBytes - offset) return;
  throw Error(Result::InternalError,
              std::string(transport) + ": " + doing + " bytes [" + std::to_string(offset) + ", " +
                  std::to_string(offset + bytes) + ") of the " + std::to_string(exposedBytes) +
                  " bytes rank " + std::to_string(peer) + " exposed");
}

}  // namespace chorus
