#include "transports/tcp/tcp_mesh.hpp"

#include "bootstrap/bootstrap.hpp"

#include "errors.hpp"
#include "security/connection_auth.hpp"
#include "settings/settings.hpp"
#include "store/store.hpp"
#include "transports/tcp/tcp_connect.hpp"
#include "transports/tcp/tcp_hello.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace chorus::tcp {
namespace {

size_t roundUp8(size_t n) { return (n + 7) & ~size_t{7}; }

// Keeps the code (Timeout stays Timeout) and adds who we were trying to reach.
[[noreturn]] void rethrowNaming(const Error& e, const std::string& what) {
  throw Error(e.code(), what + ": " + e.what());
}

void tune(net::Socket& socket, const TcpConfig& config) {
  socket.setNoDelay();
  if (config.socketBuffer > 0) {
    int size = static_cast<int>(std::min<size_t>(config.socketBuffer, 1 << 30));
    ::setsockopt(socket.fd(), SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    ::setsockopt(socket.fd(), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  socket.setNonBlocking(true);
}

std::vector<Nic> peerNics(const TransportContext& ctx, int peer) {
  try {
    auto value = ctx.store->get("tcp/" + std::to_string(peer) + "/nics", ctx.deadline);
    return parseNics(std::string(reinterpret_cast<const char*>(value.data()), value.size()));
  } catch (const Error& e) {
    rethrowNaming(e, "tcp: rank " + std::to_string(ctx.rank) + " got no address from rank " +
                         std::to_string(peer) + " (rank " + std::to_string(peer) +
                         " never started?)");
  }
}

// Connections of a peer pair: config.streams per NIC of the side with more NICs.
int pathCount(const TcpConfig& config, size_t localNics, size_t remoteNics) {
  return config.streams * static_cast<int>(std::max(localNics, remoteNics));
}

// Connects to `peer`, spreading the connections over our NICs (each bound to its NIC's
// address, to the peer's NIC of the same name when it has one: rails stay apart) and
// sending the hello on each; `auth` gets the handshakes to finish once we have accepted
// from below.
std::vector<net::Socket> connectTo(const TransportContext& ctx, const TcpConfig& config, int peer,
                                   const std::vector<net::Interface>& local,
                                   std::vector<security::ConnectingAuth>& auth) {
  auto remote = peerNics(ctx, peer);
  auto key = ctx.store->get("tcp/" + std::to_string(peer) + "/token", ctx.deadline);
  const int count = pathCount(config, local.size(), remote.size());
  std::vector<net::Socket> sockets;
  for (int s = 0; s < count; ++s) {
    const net::Interface& from = local[size_t(s) % local.size()];
    const Nic* to = &remote[size_t(s) % remote.size()];
    for (const Nic& n : remote) {
      if (n.name == from.name) to = &n;
    }
    const std::string& text = to->address;
    try {
      // One NIC: routing chooses, as before; several: leave through this one.
      auto socket =
          connectFrom(parseAddress(text), local.size() > 1 ? &from.address : nullptr, ctx.deadline);
      auto hello = encodeHello({kHelloMagic, ctx.rank, s, count, ctx.nranks, config.block});
      auth.emplace_back(socket, security::asBytes(key), hello, ctx.deadline);
      tune(socket, config);
      sockets.push_back(std::move(socket));
    } catch (const Error& e) {
      rethrowNaming(e, "tcp: rank " + std::to_string(ctx.rank) + " could not connect to rank " +
                           std::to_string(peer) + " at " + text);
    }
  }
  return sockets;
}

// A connection accepted but whose hello is not complete yet.
struct Pending {
  net::Socket socket;
  security::AcceptedConnection auth;
};

// Accepts the connections of every lower rank on any of our listeners (one per NIC);
// each rank's first hello says how many it opens. Strangers, garbage and duplicates are
// dropped; a silent connection never blocks the others, and hellos are answered while we
// wait (nothing here waits on the store).
void acceptFromLower(std::vector<net::Socket>& listeners, security::Bytes key,
                     const TransportContext& ctx, const TcpConfig& config,
                     std::vector<std::vector<net::Socket>>& mesh) {
  auto incomplete = [&](int p) {
    return mesh[p].empty() ||
           std::any_of(mesh[p].begin(), mesh[p].end(), [](auto& s) { return !s; });
  };
  auto anyIncomplete = [&] {
    for (int p = 0; p < ctx.rank; ++p)
      if (incomplete(p)) return true;
    return false;
  };
  std::vector<Pending> pending;
  std::vector<pollfd> fds;
  while (anyIncomplete()) {
    auto left = ctx.deadline - Clock::now();
    if (left <= Clock::duration::zero()) {
      std::string who;
      for (int p = 0; p < ctx.rank; ++p)
        if (incomplete(p)) who += (who.empty() ? "" : ", ") + std::to_string(p);
      throw Error(Result::Timeout, "tcp: rank " + std::to_string(ctx.rank) +
                                       " timed out waiting for rank(s) " + who +
                                       " to connect (never started, or died during set-up?)");
    }
    fds.clear();
    for (auto& l : listeners) fds.push_back(pollfd{l.fd(), POLLIN, 0});
    const size_t L = listeners.size();
    for (auto& p : pending) fds.push_back(pollfd{p.socket.fd(), POLLIN, 0});
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (n < 0 && errno != EINTR) throwSystemError("tcp: poll while accepting");
    if (n <= 0) continue;

    // Hellos first: fds[L + i] belongs to pending[i]; the listeners may append below.
    size_t keep = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      bool drop = false;
      if (fds[L + i].revents != 0) {
        using Status = security::AcceptedConnection::Status;
        auto status = p.auth.step(p.socket.fd());
        drop = status == Status::Refused;
        if (status == Status::Accepted) {
          auto hello = decodeHello(p.auth.context());
          if (net::Socket* slot =
                  hello ? slotFor(*hello, ctx.rank, ctx.nranks, config, mesh) : nullptr) {
            tune(p.socket, config);
            *slot = std::move(p.socket);
          }
          drop = true;  // done with it either way
        }
      }
      if (!drop && keep++ != i) pending[keep - 1] = std::move(p);  // never a self-move
    }
    pending.erase(pending.begin() + ptrdiff_t(keep), pending.end());

    for (size_t l = 0; l < L; ++l) {
      if (fds[l].revents == 0) continue;
      for (;;) {
        int fd = ::accept4(listeners[l].fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or a connection aborted before we got to it
        pending.push_back(Pending{net::Socket(fd),
                                  security::AcceptedConnection(
                                      key, ctx.deadline, "tcp: rank " + std::to_string(ctx.rank))});
      }
    }
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
  return c;
}

std::vector<std::vector<net::Socket>> connectMesh(const TransportContext& ctx,
                                                  const TcpConfig& config) {
  std::vector<std::vector<net::Socket>> mesh(ctx.nranks);
  if (ctx.nranks <= 1) return mesh;
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
  std::vector<net::Interface> nics;
  for (auto& i : interfaces) {
    if (std::none_of(nics.begin(), nics.end(), [&](auto& n) { return n.name == i.name; }))
      nics.push_back(i);
  }
  interfaces = std::move(nics);
  int backlog = std::clamp(ctx.nranks * config.streams, 128, 4096);
  std::vector<net::Socket> listeners;
  std::string nicList;  // "name=host:port,..."
  for (const auto& nic : interfaces) {
    listeners.push_back(net::Socket::listen(nic.address, backlog));
    listeners.back().setNonBlocking(true);
    nicList +=
        (nicList.empty() ? "" : ",") + nic.name + "=" + listeners.back().localAddress().toString();
  }
  ctx.store->set("tcp/" + std::to_string(ctx.rank) + "/nics",
                 std::as_bytes(std::span(nicList.data(), nicList.size())));
  std::string address = listeners[0].localAddress().toString();
  ctx.store->set("tcp/" + std::to_string(ctx.rank),
                 std::as_bytes(std::span(address.data(), address.size())));
  // Only a process that can read the job's store (it knows the job secret) learns the
  // token, so a stray local process cannot take a peer's connection slot.
  const auto key = security::randomKey();
  ctx.store->set("tcp/" + std::to_string(ctx.rank) + "/token", std::as_bytes(std::span(key)));

  // Connect upwards, then accept from below: the kernel completes connections in the
  // backlog before accept(), and the highest rank only accepts, so nothing waits in a
  // cycle. Acceptors answer hellos as they come, so our handshakes upwards finish last.
  std::vector<std::vector<security::ConnectingAuth>> auth(ctx.nranks);
  for (int p = ctx.rank + 1; p < ctx.nranks; ++p)
    mesh[p] = connectTo(ctx, config, p, interfaces, auth[p]);
  acceptFromLower(listeners, key, ctx, config, mesh);
  for (int p = ctx.rank + 1; p < ctx.nranks; ++p)
    for (size_t s = 0; s < auth[p].size(); ++s)
      auth[p][s].finish(mesh[p][s], ctx.deadline, "tcp: rank " + std::to_string(p));
  return mesh;
}

}  // namespace chorus::tcp
