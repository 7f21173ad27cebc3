// The store server's side of the wire: frames off a client's stream, parsed into requests
// and applied to a key-value map, as TcpStoreServer does after the handshake.
#include "fuzz_input.hpp"
#include "store/store_wire.hpp"

#include <map>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus::store_wire;
  std::string in(chorus::fuzz::text(data, size));
  std::map<std::string, std::string> store;
  bool hello = false;
  chorus::fuzz::expectOnlyChorusErrors([&] {
    while (auto f = popFrame(in, hello ? kMaxFrame : kMaxHelloFrame)) {
      Request q = parseRequest(*f);
      if (!hello && q.type != kHello) return;  // the server drops such a client
      hello = true;
      if (q.type == kSet) store[q.key] = q.value;
      if (q.type == kAdd) store[q.key] = std::to_string(q.delta);
      if (q.type == kGet) (void)store.count(q.key);
    }
  });
  return 0;
}
