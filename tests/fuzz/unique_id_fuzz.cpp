// Unique id decoding: any 128 bytes give a Rendezvous or an Error, and a decoded id
// encodes back to one that decodes the same.
#include "bootstrap/bootstrap.hpp"
#include "fuzz_input.hpp"

#include <algorithm>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chorus::UniqueId id;
  std::memcpy(id.bytes.data(), data, std::min(size, id.bytes.size()));
  chorus::fuzz::expectOnlyChorusErrors([&] {
    auto r = chorus::decodeUniqueId(id);
    auto again = chorus::decodeUniqueId(chorus::encodeUniqueId(r));
    if (again.secret != r.secret || again.store.toString() != r.store.toString()) __builtin_trap();
  });
  return 0;
}
