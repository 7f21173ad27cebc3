// The ib transport's connection record (transports/ib/ib_qp.cpp), as a peer publishes it
// in the store: any bytes either decode or throw chorus::Error, and a record that decodes
// encodes back to the same bytes (nothing is read past its end or made up).
#include "fuzz_input.hpp"
#include "transports/ib/ib_qp.hpp"

#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  chorus::fuzz::expectOnlyChorusErrors([&] {
    auto info = chorus::ib::PeerInfo::decode(bytes, 7);
    auto again = info.encode();
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) __builtin_trap();
  });
  return 0;
}
