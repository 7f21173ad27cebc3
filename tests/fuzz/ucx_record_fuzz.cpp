// The ucx transport's connection record (transports/ucx/ucx_record.hpp), as a peer
// publishes it in the store: any bytes either decode or throw chorus::Error, and a record
// that decodes encodes back to the same bytes (nothing is read past its end or made up).
#include "fuzz_input.hpp"
#include "transports/ucx/ucx_record.hpp"

#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus::ucx;
  const RecordSettings ours{256 << 10, 8, 4, true};
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  chorus::fuzz::expectOnlyChorusErrors([&] {
    std::vector<std::string> hosts;
    std::vector<std::string> addresses = decodeRecord(bytes, 3, 0, ours, &hosts);
    if (addresses.empty()) __builtin_trap();
    for (const std::string& a : addresses)
      if (a.empty()) __builtin_trap();
    for (const std::string& h : hosts)
      if (h.empty() || h.size() > kLongestHostAddress) __builtin_trap();
    auto again = encodeRecord(ours, addresses, hosts);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) __builtin_trap();
  });
  return 0;
}
