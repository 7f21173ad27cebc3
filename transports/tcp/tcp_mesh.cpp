#include "transports/tcp/tcp_mesh.hpp"

#include "bootstrap/bootstrap.hpp"

#include "errors.hpp"
#include "store/store.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace chorus::tcp {
namespace {

constexpr uint64_t kMagic = 0x3170637453524843ull;  // "CHRStcp1"

// First bytes on every connection, connector to acceptor. Carries the striping
// parameters so that ranks started with different settings fail loudly, not silently.
struct Hello {
  uint64_t magic;
  uint64_t token;  // the acceptor's random token, known only through the job's store
  int32_t rank;
  int32_t stream;
  int32_t streams;
  int32_t nranks;
  uint64_t block;
};

// Reads a size from the environment: "131072", "128K", "4MiB", "1G".
size_t envSize(const char* name, size_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  std::string unit = end;
  const std::pair<const char*, int> units[] = {{"", 0},     {"B", 0},   {"K", 10},  {"KB", 10},
                                               {"KiB", 10}, {"M", 20},  {"MB", 20}, {"MiB", 20},
                                               {"G", 30},   {"GB", 30}, {"GiB", 30}};
  for (auto [suffix, shift] : units) {
    if (end != text && unit == suffix) return static_cast<size_t>(value << shift);
  }
  throwInvalid(std::string(name) + "='" + text + "' is not a size");
}

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

net::SocketAddress parseAddress(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) throwInvalid("tcp: bad address '" + text + "' in the store");
  return net::SocketAddress::parse(text.substr(0, colon),
                                   static_cast<uint16_t>(std::stoul(text.substr(colon + 1))));
}

// Connects config.streams times to `peer`, sending the hello on each.
std::vector<net::Socket> connectTo(const TransportContext& ctx, const TcpConfig& config, int peer) {
  std::string text;
  try {
    auto value = ctx.store->get("tcp/" + std::to_string(peer), ctx.deadline);
    text.assign(reinterpret_cast<const char*>(value.data()), value.size());
  } catch (const Error& e) {
    rethrowNaming(e, "tcp: rank " + std::to_string(ctx.rank) + " got no address from rank " +
                         std::to_string(peer) + " (rank " + std::to_string(peer) +
                         " never started?)");
  }
  auto address = parseAddress(text);
  uint64_t token = 0;
  auto tokenBytes = ctx.store->get("tcp/" + std::to_string(peer) + "/token", ctx.deadline);
  if (tokenBytes.size() == sizeof(token)) std::memcpy(&token, tokenBytes.data(), sizeof(token));
  std::vector<net::Socket> sockets;
  for (int s = 0; s < config.streams; ++s) {
    try {
      auto socket = net::Socket::connect(address, ctx.deadline);
      Hello hello{kMagic, token, ctx.rank, s, config.streams, ctx.nranks, config.block};
      socket.sendAll(&hello, sizeof(hello), ctx.deadline);
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
  Hello hello{};
  size_t got = 0;
};

// Checks a complete hello; returns the slot it fills or nullptr to drop the connection.
net::Socket* slotFor(const Hello& h, uint64_t token, const TransportContext& ctx,
                     const TcpConfig& config, std::vector<std::vector<net::Socket>>& mesh) {
  if (h.magic != kMagic || h.token != token || h.rank < 0 || h.rank >= ctx.rank || h.stream < 0 ||
      h.stream >= config.streams)
    return nullptr;
  if (h.streams != config.streams || h.block != config.block || h.nranks != ctx.nranks) {
    throw Error(Result::InvalidUsage,
                "tcp: rank " + std::to_string(h.rank) + " uses nranks=" + std::to_string(h.nranks) +
                    " CHORUS_TCP_STREAMS=" + std::to_string(h.streams) +
                    " CHORUS_TCP_BLOCK=" + std::to_string(h.block) + " but rank " +
                    std::to_string(ctx.rank) + " uses " + std::to_string(ctx.nranks) + ", " +
                    std::to_string(config.streams) + ", " + std::to_string(config.block));
  }
  auto& slot = mesh[h.rank][h.stream];
  return slot ? nullptr : &slot;  // a duplicate is dropped, the first one stays
}

// Accepts config.streams connections from every lower rank. Strangers, garbage and
// duplicates are dropped; a silent connection never blocks the others.
void acceptFromLower(net::Socket& listener, uint64_t token, const TransportContext& ctx,
                     const TcpConfig& config, std::vector<std::vector<net::Socket>>& mesh) {
  int missing = ctx.rank * config.streams;
  std::vector<Pending> pending;
  std::vector<pollfd> fds;
  while (missing > 0) {
    auto left = ctx.deadline - Clock::now();
    if (left <= Clock::duration::zero()) {
      std::string who;
      for (int p = 0; p < ctx.rank; ++p) {
        if (std::any_of(mesh[p].begin(), mesh[p].end(), [](auto& s) { return !s; }))
          who += (who.empty() ? "" : ", ") + std::to_string(p);
      }
      throw Error(Result::Timeout, "tcp: rank " + std::to_string(ctx.rank) +
                                       " timed out waiting for rank(s) " + who +
                                       " to connect (never started, or died during set-up?)");
    }
    fds.assign(1, pollfd{listener.fd(), POLLIN, 0});
    for (auto& p : pending) fds.push_back(pollfd{p.socket.fd(), POLLIN, 0});
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (n < 0 && errno != EINTR) throwSystemError("tcp: poll while accepting");
    if (n <= 0) continue;

    // Hellos first: fds[i + 1] belongs to pending[i]; the listener may append below.
    size_t keep = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      bool drop = false;
      if (fds[i + 1].revents != 0) {
        ssize_t got = ::recv(p.socket.fd(), reinterpret_cast<char*>(&p.hello) + p.got,
                             sizeof(Hello) - p.got, MSG_DONTWAIT);
        if (got > 0) p.got += static_cast<size_t>(got);
        drop = got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        if (!drop && p.got == sizeof(Hello)) {
          if (net::Socket* slot = slotFor(p.hello, token, ctx, config, mesh)) {
            tune(p.socket, config);
            *slot = std::move(p.socket);
            --missing;
          }
          drop = true;  // done with it either way
        }
      }
      if (!drop) pending[keep++] = std::move(p);
    }
    pending.resize(keep);

    if (fds[0].revents != 0) {
      for (;;) {
        int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or a connection aborted before we got to it
        pending.push_back(Pending{net::Socket(fd)});
      }
    }
  }
}

}  // namespace

TcpConfig TcpConfig::fromEnv() {
  TcpConfig c;
  c.streams = static_cast<int>(std::clamp<size_t>(envSize("CHORUS_TCP_STREAMS", 2), 1, 16));
  c.block = std::clamp<size_t>(roundUp8(envSize("CHORUS_TCP_BLOCK", c.block)), 8, 1 << 30);
  // The ring holds only what the engine has not consumed yet (the sockets buffer what is
  // in flight), so 1 MiB is plenty; it needs room for a block per stream to fill them
  // in parallel, and at least one block to make progress at all.
  size_t ring = std::max<size_t>(1 << 20, 2 * static_cast<size_t>(c.streams) * c.block);
  c.buffer = std::max(roundUp8(envSize("CHORUS_TCP_BUFFER", ring)), c.block);
  c.socketBuffer = envSize("CHORUS_TCP_SOCKBUF", 0);
  return c;
}

std::vector<std::vector<net::Socket>> connectMesh(const TransportContext& ctx,
                                                  const TcpConfig& config) {
  std::vector<std::vector<net::Socket>> mesh(ctx.nranks);
  if (ctx.nranks <= 1) return mesh;
  if (ctx.store == nullptr) throwInvalid("tcp: no store to rendezvous through");
  for (int p = 0; p < ctx.rank; ++p) mesh[p].resize(config.streams);

  const char* spec = std::getenv("CHORUS_SOCKET_IFNAME");
  auto interfaces = net::findInterfaces(spec ? spec : "");
  if (interfaces.empty()) {
    throw Error(Result::SystemError, std::string("tcp: no network interface matches "
                                                 "CHORUS_SOCKET_IFNAME='") +
                                         (spec ? spec : "") + "'");
  }
  int backlog = std::clamp(ctx.nranks * config.streams, 128, 4096);
  auto listener = net::Socket::listen(interfaces[0].address, backlog);
  listener.setNonBlocking(true);
  std::string address = listener.localAddress().toString();
  ctx.store->set("tcp/" + std::to_string(ctx.rank),
                 std::as_bytes(std::span(address.data(), address.size())));
  // Only a process that can read the job's store (it knows the job secret) learns the
  // token, so a stray local process cannot take a peer's connection slot.
  const uint64_t token = randomSecret();
  ctx.store->set("tcp/" + std::to_string(ctx.rank) + "/token",
                 std::as_bytes(std::span(&token, 1)));

  // Connect upwards, then accept from below: the kernel completes connections in the
  // backlog before accept(), and the highest rank only accepts, so nothing waits in a
  // cycle.
  for (int p = ctx.rank + 1; p < ctx.nranks; ++p) mesh[p] = connectTo(ctx, config, p);
  acceptFromLower(listener, token, ctx, config, mesh);
  return mesh;
}

}  // namespace chorus::tcp
