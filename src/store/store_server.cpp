// TcpStoreServer: one thread polls every connection.
//
// A connection starts with the mutual challenge-response of security/handshake.hpp keyed
// by the job secret; its context carries the client's hello (rank and process
// incarnation), so the rank is bound into the proof. Then frames (store_wire.hpp) flow.
// The server answers each request with the request's id; a rank-dead notice carries id 0.
// The rules of store.hpp (rank claims, key owners, caps) are enforced in handle().
#include "store/store.hpp"

#include "errors.hpp"
#include "log.hpp"
#include "net/peer_credentials.hpp"
#include "security/connection_auth.hpp"
#include "settings/settings.hpp"
#include "store/store_wire.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <thread>

namespace chorus {
using namespace store_wire;
namespace {

constexpr auto kHelloTimeout = std::chrono::seconds(30);
// A stranger that connects and says nothing is dropped after this; a real client answers
// within milliseconds.
constexpr auto kAuthTimeout = std::chrono::seconds(10);
constexpr size_t kMaxUnauthenticated = 256;  // beyond this the oldest is dropped
// What one client identity may hold: bytes of the keys and values it owns, answers queued
// for it that it does not read, and gets waiting for a key.
constexpr size_t kMaxHeldBytes = 64u << 20;
constexpr size_t kMaxQueuedBytes = 64u << 20;
constexpr size_t kMaxWaiting = 4096;

const std::string kContextLabel = "chorus store";

// A client as the rules see it: its rank (or -1) and its process.
struct Identity {
  int32_t rank = -1;
  std::string incarnation;
  auto operator<=>(const Identity&) const = default;
  std::string describe() const {
    return rank >= 0 ? "rank " + std::to_string(rank) : std::string("an observer");
  }
};

}  // namespace

struct TcpStoreServer::Impl {
  struct Client {
    net::Socket socket;
    std::optional<security::AcceptedConnection> auth;  // until the secret is proven
    std::string context;                               // the hello the proof covered
    std::string in, out;
    bool authenticated = false;
    bool saidGoodbye = false;
    bool broken = false;
    bool unanswered = false;  // broken because its host stopped answering (ETIMEDOUT)
    Identity who;
    size_t waiting = 0;  // gets not answered yet
    Clock::time_point since = Clock::now();
  };
  struct Entry {
    std::string value;
    Identity owner;
    bool counter = false;  // made by add: every client may add to it
  };
  struct Claim {
    std::string incarnation;
    int connections = 0;
  };

  net::Socket listener;
  net::SocketAddress bound;
  int wakeFd = -1;
  security::JobSecret secret;
  int hostRank;
  pid_t owner = ::getpid();
  std::unique_ptr<std::thread> thread;

  // Owned by the server thread only.
  std::map<uint64_t, Client> clients;
  uint64_t nextClient = 1;
  std::map<std::string, Entry> data;
  std::map<Identity, size_t> held;  // bytes of keys and values each identity owns
  std::map<int, Claim> claims;      // rank -> the process that holds it
  std::map<std::string, std::vector<std::pair<uint64_t, uint32_t>>> waiters;
  std::set<int> dead;
  std::set<int> unreachable;  // of `dead`: their hosts stopped answering
  std::chrono::milliseconds unansweredLimit = settings::duration("CHORUS_KEEPALIVE");

  void run();
  std::string deathNotice(int rank) const;
  void acceptAll();
  bool admitted(int fd);
  void handle(uint64_t id, Client& c, const Frame& f);
  void hello(Client& c, const Request& q, uint32_t requestId);
  void refuse(Client& c, uint32_t requestId, const std::string& why);
  void store(Client& c, const std::string& key, std::string value, bool counter);
  void send(Client& c, uint8_t type, uint32_t id, const std::string& payload);
  void flush(Client& c);
  void drop(uint64_t id);
  void answerWaiters(const std::string& key);
};

TcpStoreServer::TcpStoreServer(const net::SocketAddress& address, const security::JobSecret& secret,
                               int hostRank)
    : impl_(std::make_unique<Impl>()) {
  impl_->listener = net::Socket::listen(address);
  impl_->listener.setNonBlocking(true);
  impl_->bound = impl_->listener.localAddress();
  impl_->secret = secret;
  impl_->hostRank = hostRank;
  impl_->wakeFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl_->wakeFd < 0) throwSystemError("eventfd");
  impl_->thread = std::make_unique<std::thread>([impl = impl_.get()] { impl->run(); });
}

TcpStoreServer::~TcpStoreServer() {
  if (::getpid() == impl_->owner) {
    uint64_t one = 1;
    (void)!::write(impl_->wakeFd, &one, sizeof(one));
    impl_->thread->join();
  } else {
    // A forked child holds a copy of a thread that does not exist here: leave it alone
    // (and do not wake the parent's server through the shared eventfd).
    (void)impl_->thread.release();
  }
  ::close(impl_->wakeFd);
}

net::SocketAddress TcpStoreServer::address() const { return impl_->bound; }

void TcpStoreServer::Impl::run() {
  try {
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    for (;;) {
      fds.assign({{wakeFd, POLLIN, 0}, {listener.fd(), POLLIN, 0}});
      ids.clear();
      for (auto& [id, c] : clients) {
        fds.push_back({c.socket.fd(), short(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
        ids.push_back(id);
      }
      int n = ::poll(fds.data(), fds.size(), 1000);
      if (n < 0 && errno != EINTR) throwSystemError("store server: poll");
      if (fds[0].revents) return;
      if (fds[1].revents) acceptAll();
      for (size_t i = 0; i < ids.size(); ++i) {
        auto it = clients.find(ids[i]);
        if (it == clients.end()) continue;
        Client& c = it->second;
        if (fds[i + 2].revents & POLLOUT) flush(c);
        if (c.auth && (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR))) {
          auto status = c.auth->step(c.socket.fd());
          if (status == security::AcceptedConnection::Status::Refused) c.broken = true;
          if (status != security::AcceptedConnection::Status::Accepted) continue;
          auto context = c.auth->context();
          c.context.assign(context.begin(), context.end());
          c.auth.reset();  // proven: what follows is frames
        }
        if (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) {
          // Never more than one frame ahead: a client cannot make us buffer more.
          const uint32_t cap = c.authenticated ? kMaxFrame : kMaxHelloFrame;
          int error = 0;
          bool open = readAvailable(c.socket.fd(), c.in, error, 4 + size_t(cap));
          try {
            while (auto f = popFrame(c.in, cap)) {
              handle(ids[i], c, *f);
              if (c.broken) break;
            }
          } catch (const Error& e) {
            logf(LogLevel::Warn, "store at %s: dropped %s: %s", bound.toString().c_str(),
                 c.authenticated ? c.who.describe().c_str() : "a connection", e.what());
            c.broken = true;  // a protocol violation
          }
          if (!open) {
            c.broken = true;
            c.unanswered = c.unanswered || error == ETIMEDOUT;
          }
        }
      }
      auto now = Clock::now();
      for (auto& [id, c] : clients) {
        if (c.auth &&
            c.auth->expire(c.socket.fd(), now) == security::AcceptedConnection::Status::Refused)
          c.broken = true;
        if (!c.authenticated && now - c.since > kHelloTimeout) c.broken = true;
      }
      // Dropping one client notifies the others, which may break them in turn.
      for (bool again = true; again;) {
        std::vector<uint64_t> broken;
        for (auto& [id, c] : clients)
          if (c.broken) broken.push_back(id);
        for (uint64_t id : broken) drop(id);
        again = !broken.empty();
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus: store server at %s stopped: %s\n", bound.toString().c_str(),
                 e.what());
    clients.clear();  // closing every connection tells the clients at once
    listener = net::Socket();
  }
}

// With a derived secret anybody on the host could compute it: a local peer must run as
// our uid. Remote peers cannot be checked here (README, Security).
bool TcpStoreServer::Impl::admitted(int fd) {
  if (!secret.derived) return true;
  auto peer = net::peerCredentials(fd);
  using Where = net::PeerCredentials::Where;
  if (peer.where == Where::Remote || (peer.where == Where::Local && peer.uid == ::getuid()))
    return true;
  std::string why = peer.where == Where::Local
                        ? "a process of uid " + std::to_string(peer.uid) + ", not the job's uid " +
                              std::to_string(::getuid())
                        : "could not tell who it is (" + peer.detail + ")";
  logf(LogLevel::Warn,
       "store at %s: refused a local connection from %s (no CHORUS_JOB_SECRET was given, so "
       "only the job's own uid may connect)",
       bound.toString().c_str(), why.c_str());
  return false;
}

void TcpStoreServer::Impl::acceptAll() {
  for (int i = 0; i < 256; ++i) {
    int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN, or a transient error: poll again
    Client c;
    c.socket = net::Socket(fd);
    if (!admitted(fd)) continue;  // closed as `c` goes
    c.socket.setNoDelay();
    c.socket.setUnansweredLimit(unansweredLimit);
    c.auth.emplace(secret.key(), deadlineIn(kAuthTimeout), "store at " + bound.toString());
    clients.emplace(nextClient++, std::move(c));
    // Many silent strangers must not exhaust our descriptors: drop the oldest (ids grow).
    size_t unauthenticated = 0;
    for (auto& [id, other] : clients) unauthenticated += other.auth && !other.broken;
    for (auto it = clients.begin(); unauthenticated > kMaxUnauthenticated; ++it) {
      if (!it->second.auth || it->second.broken) continue;
      logf(LogLevel::Warn, "store at %s: too many unauthenticated connections, dropping one",
           bound.toString().c_str());
      it->second.broken = true;
      --unauthenticated;
    }
  }
}

void TcpStoreServer::Impl::hello(Client& c, const Request& q, uint32_t requestId) {
  // The hello must be the one the handshake proved, so the rank is the proven one.
  if (c.context != kContextLabel + helloPayload(q.rank, q.incarnation) || q.rank < -1) {
    c.broken = true;
    logf(LogLevel::Warn, "store at %s: dropped a client whose hello differs from its handshake",
         bound.toString().c_str());
    return;
  }
  c.who = {q.rank, q.incarnation};
  if (q.rank >= 0) {
    auto [it, fresh] = claims.try_emplace(q.rank, Claim{q.incarnation, 0});
    if (!fresh && it->second.incarnation != q.incarnation) {
      refuse(c, requestId,
             "rank " + std::to_string(q.rank) +
                 (dead.count(q.rank) ? " died and is held by its first process"
                                     : " is already held by another process") +
                 " (a second process claims the same rank: a stranger, or a launch error)");
      c.broken = true;  // the refusal is on its way; nothing else for this connection
      return;
    }
    ++it->second.connections;
  }
  c.authenticated = true;
  std::string reply;
  putInt(reply, uint32_t(hostRank), 4);
  send(c, kHelloOk, requestId, reply);
  for (int rank : dead) send(c, kRankDead, 0, deathNotice(rank));  // earlier deaths too
}

std::string TcpStoreServer::Impl::deathNotice(int rank) const {
  std::string notice;
  putInt(notice, uint32_t(rank), 4);
  putInt(notice, unreachable.count(rank) ? 1 : 0, 1);
  return notice;
}

void TcpStoreServer::Impl::refuse(Client& c, uint32_t requestId, const std::string& why) {
  logf(LogLevel::Warn, "store at %s: refused %s: %s", bound.toString().c_str(),
       c.who.describe().c_str(), why.c_str());
  std::string payload;
  putBytes(payload, why.data(), std::min(why.size(), kMaxKey));
  send(c, kRefused, requestId, payload);
}

// Sets `key` for c (after the owner checks), within the bytes c's identity may hold.
void TcpStoreServer::Impl::store(Client& c, const std::string& key, std::string value,
                                 bool counter) {
  auto it = data.find(key);
  size_t before = it == data.end() ? 0 : key.size() + it->second.value.size();
  size_t& mine = held[c.who];
  if (mine - before + key.size() + value.size() > kMaxHeldBytes)
    throw Error(Result::InvalidUsage,
                "would hold more than " + std::to_string(kMaxHeldBytes >> 20) + " MiB");
  mine = mine - before + key.size() + value.size();
  Entry& e = data[key];
  if (it == data.end()) e.owner = c.who, e.counter = counter;
  e.value = std::move(value);
}

void TcpStoreServer::Impl::handle(uint64_t id, Client& c, const Frame& f) {
  Request q = parseRequest(f);
  if (!c.authenticated) {
    if (q.type != kHello) {
      c.broken = true;  // the secret is proven, but this is no client of ours
      return;
    }
    return hello(c, q, f.id);
  }
  auto owned = data.find(q.key);
  const bool foreign = owned != data.end() && owned->second.owner != c.who;
  try {
    switch (q.type) {
      case kSet:
        if (foreign && !owned->second.counter && owned->second.value == q.value) {
          send(c, kSetOk, f.id, {});  // the same bytes again: changes nothing
          return;
        }
        if (foreign || (owned != data.end() && owned->second.counter))
          return refuse(c, f.id,
                        "key '" + q.key + "' belongs to " + owned->second.owner.describe() +
                            (owned->second.counter ? " (a counter: only add)" : ""));
        store(c, q.key, std::move(q.value), false);
        send(c, kSetOk, f.id, {});
        answerWaiters(q.key);
        return;
      case kGet:
        if (owned != data.end()) {
          std::string reply;
          putBytes(reply, owned->second.value.data(), owned->second.value.size());
          send(c, kValue, f.id, reply);
        } else if (c.waiting >= kMaxWaiting) {
          refuse(c, f.id, "more than " + std::to_string(kMaxWaiting) + " gets waiting");
        } else {
          ++c.waiting;
          waiters[q.key].emplace_back(id, f.id);
        }
        return;
      case kAdd: {
        if (foreign && !owned->second.counter)
          return refuse(c, f.id,
                        "key '" + q.key + "' belongs to " + owned->second.owner.describe() +
                            " (not a counter)");
        int64_t value = 0;  // same representation as HashStore: a native int64
        if (owned != data.end() && owned->second.value.size() == sizeof(value))
          std::memcpy(&value, owned->second.value.data(), sizeof(value));
        value = int64_t(uint64_t(value) + uint64_t(q.delta));  // wraps, never UB
        if (owned == data.end()) {
          store(c, q.key, std::string(sizeof(value), '\0'), true);
          owned = data.find(q.key);
        }
        std::memcpy(owned->second.value.data(), &value, sizeof(value));
        std::string reply;
        putInt(reply, uint64_t(value), 8);
        send(c, kAddResult, f.id, reply);
        answerWaiters(q.key);
        return;
      }
      case kGoodbye:
        c.saidGoodbye = true;
        send(c, kGoodbyeOk, f.id, {});
        return;
      default:
        throw Error(Result::RemoteError, "store: unexpected request");
    }
  } catch (const Error& e) {
    if (e.code() != Result::InvalidUsage) throw;
    refuse(c, f.id, "key '" + q.key + "': " + e.what());
  }
}

void TcpStoreServer::Impl::answerWaiters(const std::string& key) {
  auto it = waiters.find(key);
  if (it == waiters.end()) return;
  auto list = std::move(it->second);
  waiters.erase(it);
  std::string reply;
  putBytes(reply, data[key].value.data(), data[key].value.size());
  for (auto [clientId, requestId] : list) {
    if (auto c = clients.find(clientId); c != clients.end()) {
      --c->second.waiting;
      send(c->second, kValue, requestId, reply);
    }
  }
}

void TcpStoreServer::Impl::send(Client& c, uint8_t type, uint32_t id, const std::string& payload) {
  if (c.out.size() + kHeader + payload.size() > kMaxQueuedBytes) {
    logf(LogLevel::Warn, "store at %s: dropped %s: it does not read its answers (%zu bytes queued)",
         bound.toString().c_str(), c.who.describe().c_str(), c.out.size());
    c.broken = true;
    return;
  }
  c.out += frame(type, id, payload);
  flush(c);
}

void TcpStoreServer::Impl::flush(Client& c) {
  while (!c.out.empty() && !c.broken) {
    ssize_t n = ::send(c.socket.fd(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out.erase(0, size_t(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;  // POLLOUT will bring us back
    } else {
      c.broken = true;
      c.unanswered = errno == ETIMEDOUT;
    }
  }
}

void TcpStoreServer::Impl::drop(uint64_t id) {
  auto it = clients.find(id);
  if (it == clients.end()) return;
  const Client& c = it->second;
  const int rank = c.who.rank;
  const bool holdsRank = c.authenticated && rank >= 0;
  const bool died = holdsRank && !c.saidGoodbye;
  const bool unanswered = c.unanswered;
  clients.erase(it);
  if (holdsRank) {
    // A rank whose every client left cleanly is free again (a later job step); a rank
    // that died stays with its process, so nobody can take its place.
    auto claim = claims.find(rank);
    if (--claim->second.connections == 0 && !died && !dead.count(rank)) claims.erase(claim);
  }
  if (!died || !dead.insert(rank).second) return;
  if (unanswered) unreachable.insert(rank);
  const std::string notice = deathNotice(rank);
  for (auto& [otherId, other] : clients)
    if (other.authenticated) send(other, kRankDead, 0, notice);
}

}  // namespace chorus
