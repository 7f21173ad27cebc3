// Unique ids (the store's address and the job secret in 128 bytes) and the per-process
// store servers behind them.
#include "bootstrap/bootstrap.hpp"

#include "errors.hpp"
#include "store/store.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace chorus {
namespace {

// Layout (little-endian): magic[8] | u16 version | u16 family | u16 port | u16 zero |
// address[16] | u32 IPv6 scope | secret[32] | host[8] | zeros up to 128 bytes. `host`
// tells a loopback store's host (and network namespace) apart from another's.
constexpr char kMagic[8] = {'C', 'H', 'O', 'R', 'U', 'S', 'I', 'D'};
constexpr uint16_t kVersion = 2;
constexpr size_t kFamily = 10, kPort = 12, kAddress = 16, kScope = 32, kSecret = 36, kHost = 68;
static_assert(kHost + 8 <= sizeof(UniqueId::bytes));

// The first 8 bytes of HMAC(hostIdentity): boot id, hostname and network namespace.
std::array<uint8_t, 8> hostFingerprint() {
  auto mac = security::hmacSha256(security::asBytes("chorus host"),
                                  {security::asBytes(hostIdentity())});
  std::array<uint8_t, 8> out;
  std::copy_n(mac.begin(), out.size(), out.begin());
  return out;
}

bool isLoopback(const net::SocketAddress& a) {
  if (a.family() == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr) >> 24) == 127;
  return a.family() == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr);
}

void put(UniqueId& id, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) id.bytes[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get(const UniqueId& id, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<uint8_t>(id.bytes[at + i])) << (8 * i);
  return v;
}

}  // namespace

UniqueId encodeUniqueId(const Rendezvous& rendezvous) {
  UniqueId id;
  std::memcpy(id.bytes.data(), kMagic, sizeof(kMagic));
  put(id, 8, kVersion, 2);
  const auto& s = rendezvous.store;
  put(id, kFamily, uint64_t(s.family()), 2);
  put(id, kPort, s.port(), 2);
  if (s.family() == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&s.storage);
    std::memcpy(&id.bytes[kAddress], &in->sin_addr, 4);
  } else if (s.family() == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&s.storage);
    std::memcpy(&id.bytes[kAddress], &in6->sin6_addr, 16);
    put(id, kScope, in6->sin6_scope_id, 4);
  } else {
    throwInvalid("encodeUniqueId: the store address is neither IPv4 nor IPv6");
  }
  std::memcpy(&id.bytes[kSecret], rendezvous.secret.bytes.data(), rendezvous.secret.bytes.size());
  auto host = hostFingerprint();
  std::memcpy(&id.bytes[kHost], host.data(), host.size());
  return id;
}

Rendezvous decodeUniqueId(const UniqueId& id) {
  if (std::memcmp(id.bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throwInvalid("not a Chorus unique id (bad magic): was it made by chorus::getUniqueId()?");
  if (uint64_t v = get(id, 8, 2); v != kVersion) {
    throwInvalid("Chorus unique id of version " + std::to_string(v) + "; this library reads " +
                 std::to_string(kVersion));
  }
  Rendezvous r;
  auto family = static_cast<int>(get(id, kFamily, 2));
  auto port = static_cast<uint16_t>(get(id, kPort, 2));
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&r.store.storage);
    in->sin_family = AF_INET;
    std::memcpy(&in->sin_addr, &id.bytes[kAddress], 4);
    r.store.length = sizeof(sockaddr_in);
  } else if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&r.store.storage);
    in6->sin6_family = AF_INET6;
    std::memcpy(&in6->sin6_addr, &id.bytes[kAddress], 16);
    in6->sin6_scope_id = static_cast<uint32_t>(get(id, kScope, 4));
    r.store.length = sizeof(sockaddr_in6);
  } else {
    throwInvalid("Chorus unique id with an unknown address family " + std::to_string(family));
  }
  r.store.setPort(port);
  std::memcpy(r.secret.bytes.data(), &id.bytes[kSecret], r.secret.bytes.size());
  auto host = hostFingerprint();
  if (isLoopback(r.store) && std::memcmp(&id.bytes[kHost], host.data(), host.size()) != 0) {
    throwInvalid("the Chorus unique id's store listens on loopback (" + r.store.toString() +
                 ") of another host or network namespace: set CHORUS_SOCKET_IFNAME (e.g. "
                 "=eth0) in the process that calls getUniqueId() for a job across hosts");
  }
  return r;
}

Rendezvous startProcessStore(int hostRank, bool singleHost) {
  // Servers live until exit; each call makes a new one with its own secret.
  static std::mutex mutex;
  static std::vector<std::unique_ptr<TcpStoreServer>> servers;

  const char* spec = std::getenv("CHORUS_SOCKET_IFNAME");
  net::SocketAddress address = net::SocketAddress::parse("127.0.0.1", 0);
  if (spec != nullptr && *spec != '\0' && !singleHost) {
    auto interfaces = net::findInterfaces(spec);
    if (interfaces.empty()) {
      throwInvalid("no usable network interface for the rendezvous store matches "
                   "CHORUS_SOCKET_IFNAME='" + std::string(spec) + "'");
    }
    address = interfaces.front().address;
  }
  Rendezvous r;
  r.secret = security::JobSecret::random();
  auto server = std::make_unique<TcpStoreServer>(address, r.secret, hostRank);
  r.store = server->address();
  std::lock_guard lock(mutex);
  servers.push_back(std::move(server));
  return r;
}

UniqueId getUniqueId() { return encodeUniqueId(startProcessStore(-1, false)); }

}  // namespace chorus
