// TcpStoreServer / TcpStoreClient.
//
// A connection starts with the mutual challenge-response of security/handshake.hpp keyed
// by the job secret; then frames (store_wire.hpp) flow. The server
// answers each request with the request's id; a rank-dead notice carries id 0 and may
// arrive between a request and its answer, so the client stashes notices as it reads.
// Request ids let a client skip the late answer to a get that it gave up on.
#include "store/store.hpp"

#include "errors.hpp"
#include "log.hpp"
#include "security/connection_auth.hpp"
#include "store/store_wire.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace chorus {
using namespace store_wire;
namespace {

constexpr auto kRequestTimeout = std::chrono::minutes(5);  // set/add: the server answers at once
constexpr auto kHelloTimeout = std::chrono::seconds(30);
// A stranger that connects and says nothing is dropped after this; a real client answers
// within milliseconds.
constexpr auto kAuthTimeout = std::chrono::seconds(10);
constexpr size_t kMaxUnauthenticated = 256;  // beyond this the oldest is dropped

// Appends whatever the socket has now; false on EOF/reset.
bool readAvailable(int fd, std::string& in) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      in.append(buf, size_t(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    return false;
  }
}

}  // namespace

// --- server --------------------------------------------------------------------------

struct TcpStoreServer::Impl {
  struct Client {
    net::Socket socket;
    std::optional<security::AcceptedConnection> auth;  // until the secret is proven
    std::string in, out;
    bool authenticated = false;
    bool saidGoodbye = false;
    bool broken = false;
    int rank = -1;
    Clock::time_point since = Clock::now();
  };

  net::Socket listener;
  net::SocketAddress bound;
  int wakeFd = -1;
  uint64_t secret;
  int hostRank;
  pid_t owner = ::getpid();
  std::unique_ptr<std::thread> thread;

  // Owned by the server thread only.
  std::map<uint64_t, Client> clients;
  uint64_t nextClient = 1;
  std::map<std::string, std::string> data;
  std::map<std::string, std::vector<std::pair<uint64_t, uint32_t>>> waiters;
  std::set<int> dead;

  void run();
  void acceptAll();
  void handle(uint64_t id, Client& c, const Frame& f);
  void send(Client& c, uint8_t type, uint32_t id, const std::string& payload);
  void flush(Client& c);
  void drop(uint64_t id);
  void answerWaiters(const std::string& key);
};

TcpStoreServer::TcpStoreServer(const net::SocketAddress& address, uint64_t secret, int hostRank)
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
          c.auth.reset();  // proven: what follows is frames
        }
        if (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) {
          bool open = readAvailable(c.socket.fd(), c.in);
          try {
            // Bounded while unauthenticated, so a stray connection cannot make us allocate.
            while (auto f = popFrame(c.in, c.authenticated ? kMaxFrame : kMaxHelloFrame)) {
              handle(ids[i], c, *f);
              if (c.broken) break;
            }
          } catch (const Error&) {
            c.broken = true;  // protocol violation or wrong secret
          }
          if (!open) c.broken = true;
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

void TcpStoreServer::Impl::acceptAll() {
  for (int i = 0; i < 256; ++i) {
    int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN, or a transient error: poll again
    Client c;
    c.socket = net::Socket(fd);
    c.socket.setNoDelay();
    auto key = security::jobKey(secret);
    c.auth.emplace(key, deadlineIn(kAuthTimeout), "store at " + bound.toString());
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

void TcpStoreServer::Impl::handle(uint64_t id, Client& c, const Frame& f) {
  Request q = parseRequest(f);
  if (!c.authenticated) {
    if (q.type != kHello) {
      c.broken = true;  // the secret is proven, but this is no client of ours
      return;
    }
    c.rank = q.rank;
    c.authenticated = true;
    std::string reply;
    putInt(reply, uint32_t(hostRank), 4);
    send(c, kHelloOk, f.id, reply);
    for (int rank : dead) {  // late joiners learn about earlier deaths too
      std::string notice;
      putInt(notice, uint32_t(rank), 4);
      send(c, kRankDead, 0, notice);
    }
    return;
  }
  switch (q.type) {
    case kSet:
      data[q.key] = std::move(q.value);
      send(c, kSetOk, f.id, {});
      answerWaiters(q.key);
      return;
    case kGet:
      if (auto it = data.find(q.key); it != data.end()) {
        std::string reply;
        putBytes(reply, it->second.data(), it->second.size());
        send(c, kValue, f.id, reply);
      } else {
        waiters[q.key].emplace_back(id, f.id);
      }
      return;
    case kAdd: {
      std::string& bytes = data[q.key];
      int64_t value = 0;  // same representation as HashStore: a native int64
      if (bytes.size() == sizeof(value)) std::memcpy(&value, bytes.data(), sizeof(value));
      value = int64_t(uint64_t(value) + uint64_t(q.delta));  // wraps, never UB
      bytes.assign(reinterpret_cast<const char*>(&value), sizeof(value));
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
}

void TcpStoreServer::Impl::answerWaiters(const std::string& key) {
  auto it = waiters.find(key);
  if (it == waiters.end()) return;
  auto list = std::move(it->second);
  waiters.erase(it);
  std::string reply;
  putBytes(reply, data[key].data(), data[key].size());
  for (auto [clientId, requestId] : list)
    if (auto c = clients.find(clientId); c != clients.end())
      send(c->second, kValue, requestId, reply);
}

void TcpStoreServer::Impl::send(Client& c, uint8_t type, uint32_t id, const std::string& payload) {
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
    }
  }
}

void TcpStoreServer::Impl::drop(uint64_t id) {
  auto it = clients.find(id);
  if (it == clients.end()) return;
  bool died = it->second.authenticated && it->second.rank >= 0 && !it->second.saidGoodbye;
  int rank = it->second.rank;
  clients.erase(it);
  if (!died || !dead.insert(rank).second) return;
  std::string notice;
  putInt(notice, uint32_t(rank), 4);
  for (auto& [otherId, other] : clients)
    if (other.authenticated) send(other, kRankDead, 0, notice);
}

// --- client --------------------------------------------------------------------------

struct TcpStoreClient::Impl {
  std::mutex mutex;
  net::SocketAddress server;
  net::Socket socket;
  std::string in;
  std::set<int> dead;
  int hostRank = -1;
  uint32_t nextRequest = 1;
  bool lost = false;
  bool closed = false;  // after goodbye

  [[noreturn]] void connectionLost() {
    lost = true;
    if (hostRank >= 0)
      throw PeerError(hostRank, "rank " + std::to_string(hostRank) +
                                    " died (lost the connection to the store it hosted)");
    throw Error(Result::RemoteError,
                "lost the connection to the rendezvous store at " + server.toString());
  }
  void checkUsable() {
    if (closed) throw Error(Result::InvalidUsage, "store client used after goodbye()");
    if (lost) connectionLost();
  }
  // Pops the frames already read: stashes notices, skips late answers, and returns the
  // answer to `id` if it is among them.
  std::optional<Frame> takeFrames(uint32_t id) {
    while (auto f = popFrame(in, kMaxFrame)) {
      if (f->type == kRankDead)
        dead.insert(int(parseAnswer(*f).number));
      else if (id != 0 && f->id == id)
        return f;
    }
    return std::nullopt;
  }
  // Reads what has arrived without waiting; on EOF keeps the notices and throws.
  void readNow() {
    if (!readAvailable(socket.fd(), in)) {
      takeFrames(0);
      connectionLost();
    }
  }
  // Takes in frames until the answer to `id` arrives; nullopt at the deadline.
  std::optional<Frame> awaitAnswer(uint32_t id, Deadline deadline) {
    for (;;) {
      if (auto f = takeFrames(id)) return f;
      auto left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) return std::nullopt;
      int ms = deadline == Deadline::max()
                   ? 1000
                   : int(std::min<int64_t>(
                         std::chrono::ceil<std::chrono::milliseconds>(left).count(), 1000));
      pollfd p{socket.fd(), POLLIN, 0};
      int n = ::poll(&p, 1, ms);
      if (n < 0 && errno != EINTR) throwSystemError("store client: poll");
      if (n > 0) readNow();
    }
  }
  Frame request(uint8_t type, const std::string& payload, uint8_t answer, Deadline deadline,
                const std::string& what) {
    checkUsable();
    uint32_t id = nextRequest++;
    if (nextRequest == 0) nextRequest = 1;  // 0 marks notices
    try {
      socket.sendAll(frame(type, id, payload).data(), kHeader + payload.size(), deadline);
    } catch (const Error& e) {
      if (e.code() == Result::RemoteError) connectionLost();
      lost = true;  // a frame may be half sent: the stream is out of step for good
      throw;
    }
    auto f = awaitAnswer(id, deadline);
    if (!f) {
      std::string deadList;
      for (int r : dead) {
        if (!deadList.empty()) deadList += ',';
        deadList += std::to_string(r);
      }
      throw Error(Result::Timeout,
                  "store: timed out " + what + " at " + server.toString() +
                      (deadList.empty() ? "" : " (ranks reported dead: " + deadList + ")"));
    }
    if (f->type != answer) throw Error(Result::RemoteError, "store: unexpected answer type");
    return std::move(*f);
  }
};

TcpStoreClient::TcpStoreClient(const net::SocketAddress& server, uint64_t secret, int rank,
                               Deadline deadline)
    : impl_(std::make_unique<Impl>()) {
  impl_->server = server;
  impl_->socket = net::Socket::connect(server, deadline);
  impl_->socket.setNoDelay();
  auto key = security::jobKey(secret);
  security::authenticateConnection(impl_->socket, key, security::asBytes("chorus store"), deadline,
                                   "the rendezvous store at " + server.toString());
  std::string hello;
  putInt(hello, kMagic, 8);
  putInt(hello, uint32_t(rank), 4);
  Frame f;
  try {
    f = impl_->request(kHello, hello, kHelloOk, deadline, "waiting for the store's handshake");
  } catch (const Error&) {
    if (!impl_->lost) throw;
    throw Error(Result::RemoteError, "the rendezvous store at " + server.toString() +
                                         " closed the connection during the handshake "
                                         "(wrong job secret, or not a Chorus store)");
  }
  impl_->hostRank = int(parseAnswer(f).number);
}

TcpStoreClient::~TcpStoreClient() = default;

void TcpStoreClient::set(const std::string& key, std::span<const std::byte> value) {
  std::lock_guard lock(impl_->mutex);
  std::string payload;
  putBytes(payload, key.data(), key.size());
  putBytes(payload, value.data(), value.size());
  impl_->request(kSet, payload, kSetOk, deadlineIn(kRequestTimeout), "setting key '" + key + "'");
}

std::vector<std::byte> TcpStoreClient::get(const std::string& key, Deadline deadline) {
  std::lock_guard lock(impl_->mutex);
  std::string payload;
  putBytes(payload, key.data(), key.size());
  Frame f = impl_->request(kGet, payload, kValue, deadline, "waiting for key '" + key + "'");
  std::string bytes = parseAnswer(f).value;
  auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  return {p, p + bytes.size()};
}

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  std::lock_guard lock(impl_->mutex);
  std::string payload;
  putBytes(payload, key.data(), key.size());
  putInt(payload, uint64_t(delta), 8);
  Frame f = impl_->request(kAdd, payload, kAddResult, deadlineIn(kRequestTimeout),
                           "adding to key '" + key + "'");
  return parseAnswer(f).number;
}

std::vector<int> TcpStoreClient::deadRanks() {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->closed) {
    if (impl_->lost) impl_->connectionLost();
    impl_->readNow();
    impl_->takeFrames(0);
  }
  return {impl_->dead.begin(), impl_->dead.end()};
}

void TcpStoreClient::goodbye() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->closed) return;
  try {
    impl_->request(kGoodbye, {}, kGoodbyeOk, deadlineIn(std::chrono::seconds(10)),
                   "saying goodbye");
  } catch (const Error&) {
    // Leaving anyway: a store that is gone or slow cannot report us dead.
  }
  impl_->closed = true;
  impl_->socket = net::Socket();
}

int TcpStoreClient::fd() const { return impl_->socket.fd(); }

}  // namespace chorus
