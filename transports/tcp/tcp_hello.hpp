// The tcp transport's connection framing, apart from the sockets so that it can be fuzzed
// (tests/fuzz/tcp_hello_fuzz.cpp): the hello each connection carries as the context of its
// authenticated handshake, where an accepted connection goes, and the address list a rank
// publishes in the store.
#pragma once

#include "errors.hpp"
#include "transports/tcp/tcp_listen.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace chorus::tcp {

constexpr uint64_t kHelloMagic = 0x3170637453524843ull;  // "CHRStcp1"

// The context of every connection's handshake (security/handshake.hpp), keyed by the
// acceptor's random key, known only through the job's store. Carries the striping
// parameters so that ranks started with different settings fail loudly, not silently.
// On the wire: these 32 bytes as laid out in memory (both ends are the same build).
struct Hello {
  uint64_t magic;
  int32_t rank;
  int32_t stream;
  int32_t streams;
  int32_t nranks;
  uint64_t block;
};
static_assert(sizeof(Hello) == 32);

std::vector<uint8_t> encodeHello(const Hello& hello);
// A hello is exactly sizeof(Hello) bytes with the magic; anything else is not one.
std::optional<Hello> decodeHello(std::span<const uint8_t> context);

// Where an accepted connection goes, by its hello: slots[p][s] is stream s from rank p
// (any other rank may connect to us: connections are made on first use, by either side);
// rank p's first sane hello sizes slots[p]. Returns the slot, or nullptr to drop the
// connection (not another rank of this job, a stream out of range, a duplicate: the first
// one stays). Throws Error(InvalidUsage) when the peer's nranks,
// stream count or block differ from ours. Slot: a connection, false while empty.
template <typename Slot>
Slot* slotFor(const Hello& h, int rank, int nranks, const TcpConfig& config,
              std::vector<std::vector<Slot>>& slots) {
  if (h.magic != kHelloMagic || h.rank < 0 || h.rank >= nranks || h.rank == rank || h.stream < 0)
    return nullptr;
  // Connections for this pair: config.streams per NIC of the side with more NICs, as
  // the connecting side counted them; its first hello sizes the slots.
  auto& mine = slots[size_t(h.rank)];
  const bool sane = h.streams >= config.streams && h.streams <= 64 * config.streams &&
                    h.streams % config.streams == 0;
  if (mine.empty() && sane) mine.resize(static_cast<size_t>(h.streams));
  const int expected = static_cast<int>(mine.size());
  if (h.streams != expected || h.block != config.block || h.nranks != nranks) {
    throw Error(Result::InvalidUsage,
                "tcp: rank " + std::to_string(h.rank) + " uses nranks=" + std::to_string(h.nranks) +
                    " CHORUS_TCP_STREAMS=" + std::to_string(h.streams) +
                    " CHORUS_TCP_BLOCK=" + std::to_string(h.block) + " but rank " +
                    std::to_string(rank) + " uses " + std::to_string(nranks) + ", " +
                    std::to_string(expected ? expected : config.streams) + ", " +
                    std::to_string(config.block) + " (connections: CHORUS_TCP_STREAMS per NIC)");
  }
  if (h.stream >= expected) return nullptr;
  auto& slot = mine[size_t(h.stream)];
  return slot ? nullptr : &slot;
}

// A rank's listening NICs as published under "tcp/<rank>/nics":
// "rail0=10.77.0.1:4000,rail1=10.77.1.1:4001". Throws Error(InvalidArgument) on a
// malformed list.
struct Nic {
  std::string name;
  std::string address;  // host:port
};
std::vector<Nic> parseNics(const std::string& text);
// "host:port" (IPv6 without brackets: the last colon splits) into host and port; the
// port must be 1..65535. Throws Error(InvalidArgument) otherwise.
std::pair<std::string, uint16_t> splitHostPort(const std::string& text);
// The same, resolved (SocketAddress::parse: a literal, or a name looked up).
net::SocketAddress parseAddress(const std::string& text);

}  // namespace chorus::tcp
