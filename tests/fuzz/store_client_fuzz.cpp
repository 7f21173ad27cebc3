// The store client's side of the wire: answers and rank-dead notices as they arrive.
#include "fuzz_input.hpp"
#include "store/store_wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus::store_wire;
  std::string in(chorus::fuzz::text(data, size));
  chorus::fuzz::expectOnlyChorusErrors([&] {
    while (auto f = popFrame(in, kMaxFrame)) {
      Answer a = parseAnswer(*f);
      if (a.type == kValue && a.value.size() > size) __builtin_trap();  // came from nowhere
    }
  });
  return 0;
}
