// The tcp transport's connection framing (transports/tcp/tcp_hello.hpp) as an accepting
// rank meets it: hellos from the connections of lower ranks, and the address lists ranks
// publish in the store. The first byte picks the mode and the settings:
//   raw: the input cut into 32-byte hellos; structured: 4 input bytes make a hello with the
//   right magic (so the fuzzer reaches the slot logic quickly); text: an address list.
// A hello fills at most one empty slot of a lower rank, within that rank's stream count;
// settings that differ throw chorus::Error and nothing else; a decoded hello encodes back
// to the same bytes; a parsed port is 1..65535.
#include "fuzz_input.hpp"
#include "transports/tcp/tcp_hello.hpp"

#include <cstring>
#include <vector>

namespace {

using namespace chorus::tcp;

struct Taken {
  bool on = false;
  explicit operator bool() const { return on; }
};

void hellos(const uint8_t* data, size_t size, bool structured, int nranks,
            const TcpConfig& config) {
  const int rank = nranks - 1;  // accepts from every other rank
  std::vector<std::vector<Taken>> slots(static_cast<size_t>(nranks));
  auto offer = [&](const Hello& h) {
    Taken* slot = slotFor(h, rank, nranks, config, slots);
    if (!slot) return;
    // The slot must be an empty one of rank h.rank < rank, at index h.stream.
    if (h.rank < 0 || h.rank >= rank) __builtin_trap();
    auto& mine = slots[size_t(h.rank)];
    if (h.stream < 0 || size_t(h.stream) >= mine.size() || slot != &mine[size_t(h.stream)])
      __builtin_trap();
    if (slot->on) __builtin_trap();
    slot->on = true;
  };
  chorus::fuzz::expectOnlyChorusErrors([&] {
    if (structured) {
      for (size_t at = 0; at + 4 <= size; at += 4) {
        const uint8_t* f = data + at;
        Hello h{kHelloMagic,
                int8_t(f[0]) % (nranks + 1),
                int8_t(f[1]) % 9,
                f[2] % 2 ? config.streams * (1 + f[2] % 5) : int8_t(f[2]),
                f[3] % 4 ? nranks : f[3],
                f[3] % 8 ? config.block : f[3]};
        offer(h);
      }
    } else {
      for (size_t at = 0; at + sizeof(Hello) <= size; at += sizeof(Hello)) {
        std::span<const uint8_t> bytes(data + at, sizeof(Hello));
        auto h = decodeHello(bytes);
        if (!h) continue;
        auto again = encodeHello(*h);
        if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), bytes.size()))
          __builtin_trap();
        offer(*h);
      }
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 3;
  TcpConfig config;
  config.streams = 1 + (data[0] >> 2) % 4;
  config.block = 8u << ((data[0] >> 4) % 4);
  const int nranks = 2 + (data[0] >> 6);
  if (mode == 2) {
    chorus::fuzz::expectOnlyChorusErrors([&] {
      for (const Nic& nic : parseNics(std::string(chorus::fuzz::text(data + 1, size - 1)))) {
        if (nic.name.find(',') != std::string::npos || nic.name.find('=') != std::string::npos)
          __builtin_trap();
        chorus::fuzz::expectOnlyChorusErrors([&] {
          auto [host, port] = splitHostPort(nic.address);
          if (port == 0 || host.size() >= nic.address.size()) __builtin_trap();
        });
      }
    });
    return 0;
  }
  hellos(data + 1, size - 1, mode == 1, nranks, config);
  return 0;
}
