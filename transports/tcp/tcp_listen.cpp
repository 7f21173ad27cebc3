#include "transports/tcp/tcp_listen.hpp"

#include "errors.hpp"
#include "security/handshake.hpp"
#include "settings/settings.hpp"
#include "store/store.hpp"
#include "transports/tcp/tcp_hello.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <string>

namespace chorus::tcp {
namespace {

size_t roundUp8(size_t n) { return (n + 7) & ~size_t{7}; }

std::vector<std::byte> published(const TransportContext& ctx, int peer, const std::string& what,
                                 Deadline deadline) {
  try {
    return ctx.store->get("tcp/" + std::to_string(peer) + what, deadline);
  } catch (const Error& e) {
    // Keeps the code (Timeout stays Timeout) and adds who we were trying to reach.
    throw Error(e.code(),
                "tcp: rank " + std::to_string(ctx.rank) + " got no address from rank " +
                    std::to_string(peer) + " (rank " + std::to_string(peer) +
                    " never started?): " + e.what(),
                {peer});
  }
}

}  // namespace

TcpConfig TcpConfig::fromEnv() {
  TcpConfig c;
  c.streams = static_cast<int>(std::clamp<size_t>(settings::bytes("CHORUS_TCP_STREAMS"), 1, 16));
  c.block = std::clamp<size_t>(roundUp8(settings::bytes("CHORUS_TCP_BLOCK")), 8, 1 << 30);
  // The ring holds only what the engine has not consumed yet (the sockets buffer what is
  // in flight), so 1 MiB is plenty; it needs room for a block per stream to fill them
  // in parallel, and at least one block to make progress at all.
  size_t ring = std::max<size_t>(1 << 20, 2 * static_cast<size_t>(c.streams) * c.block);
  c.buffer = std::max(roundUp8(settings::bytes("CHORUS_TCP_BUFFER", ring)), c.block);
  c.socketBuffer = settings::bytes("CHORUS_TCP_SOCKBUF");
  c.unansweredLimit = settings::duration("CHORUS_KEEPALIVE");
  return c;
}

void tune(net::Socket& socket, const TcpConfig& config) {
  socket.setNoDelay();
  socket.setUnansweredLimit(config.unansweredLimit);
  if (config.socketBuffer > 0) {
    int size = static_cast<int>(std::min<size_t>(config.socketBuffer, 1 << 30));
    ::setsockopt(socket.fd(), SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    ::setsockopt(socket.fd(), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  socket.setNonBlocking(true);
}

std::vector<Nic> peerNics(const TransportContext& ctx, int peer, Deadline deadline) {
  auto value = published(ctx, peer, "/nics", deadline);
  return parseNics(std::string(reinterpret_cast<const char*>(value.data()), value.size()));
}

std::vector<std::byte> peerKey(const TransportContext& ctx, int peer, Deadline deadline) {
  return published(ctx, peer, "/token", deadline);
}

int pathCount(const TcpConfig& config, size_t localNics, size_t remoteNics) {
  return config.streams * static_cast<int>(std::max(localNics, remoteNics));
}

Listening listenAndPublish(const TransportContext& ctx, const TcpConfig& config) {
  Listening out;
  if (ctx.nranks <= 1) return out;
  if (ctx.store == nullptr) throwInvalid("tcp: no store to rendezvous through");

  const char* spec = settings::cstr("CHORUS_SOCKET_IFNAME");
  auto interfaces = net::findInterfaces(spec ? spec : "");
  if (interfaces.empty()) {
    throw Error(Result::SystemError, std::string("tcp: no network interface matches "
                                                 "CHORUS_SOCKET_IFNAME='") +
                                         (spec ? spec : "") + "'");
  }
  // Several NICs only when named: by default the same address may exist on every host
  // (docker bridges), so only the first interface is used.
  if (spec == nullptr || *spec == '\0') interfaces.resize(1);
  // One address per NIC (the first: IPv4 before IPv6).
  for (auto& i : interfaces) {
    if (std::none_of(out.nics.begin(), out.nics.end(), [&](auto& n) { return n.name == i.name; }))
      out.nics.push_back(i);
  }
  int backlog = std::clamp(ctx.nranks * config.streams, 128, 4096);
  std::string nicList;  // "name=host:port,..."
  for (const auto& nic : out.nics) {
    out.sockets.push_back(net::Socket::listen(nic.address, backlog));
    out.sockets.back().setNonBlocking(true);
    nicList += (nicList.empty() ? "" : ",") + nic.name + "=" +
               out.sockets.back().localAddress().toString();
  }
  const std::string me = "tcp/" + std::to_string(ctx.rank);
  ctx.store->set(me + "/nics", std::as_bytes(std::span(nicList.data(), nicList.size())));
  std::string address = out.sockets[0].localAddress().toString();
  ctx.store->set(me, std::as_bytes(std::span(address.data(), address.size())));
  // Only a process that can read the job's store (it knows the job secret) learns the
  // token, so a stray local process cannot take a peer's connection slot.
  out.key = security::randomKey();
  ctx.store->set(me + "/token", std::as_bytes(std::span(out.key)));
  return out;
}

}  // namespace chorus::tcp
