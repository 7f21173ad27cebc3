// TcpStoreClient (the server is store_server.cpp).
//
// A connection starts with the mutual challenge-response of security/handshake.hpp keyed
// by the job secret, whose context is this client's hello (rank, process incarnation);
// then frames (store_wire.hpp) flow. A rank-dead notice carries id 0 and may arrive
// between a request and its answer, so the client stashes notices as it reads. Request
// ids let a client skip the late answer to a get that it gave up on.
#include "store/store.hpp"

#include "errors.hpp"
#include "log.hpp"
#include "security/connection_auth.hpp"
#include "settings/settings.hpp"
#include "store/store_wire.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace chorus {
using namespace store_wire;
namespace {

constexpr auto kRequestTimeout = std::chrono::minutes(5);  // set/add: the server answers at once

// This process's random id: the server binds a rank to the first process that claims
// it, and lets that process (and only it) open more clients for the rank. A forked child
// is another process: it draws its own.
std::string processIncarnation() {
  static std::mutex mutex;
  static pid_t owner = 0;
  static std::string id(kIncarnation, '\0');
  std::lock_guard lock(mutex);
  if (owner != ::getpid()) {
    security::randomBytes({reinterpret_cast<uint8_t*>(id.data()), id.size()});
    owner = ::getpid();
  }
  return id;
}

}  // namespace

// --- client --------------------------------------------------------------------------

struct TcpStoreClient::Impl {
  std::mutex mutex;
  net::SocketAddress server;
  net::Socket socket;
  std::string in;
  std::set<int> dead;
  std::set<int> unreachable;  // of `dead`: the store stopped hearing from their hosts
  int hostRank = -1;
  bool unanswered = false;  // the connection ended because the store's host stopped answering
  uint32_t nextRequest = 1;
  bool lost = false;
  bool closed = false;  // after goodbye

  [[noreturn]] void connectionLost() {
    lost = true;
    const std::string why =
        unanswered ? "no answer from its host for CHORUS_KEEPALIVE, " +
                         std::to_string(settings::duration("CHORUS_KEEPALIVE").count()) +
                         " ms: down or cut off"
                   : "";
    if (hostRank >= 0)
      throw PeerError(hostRank,
                      "rank " + std::to_string(hostRank) +
                          (unanswered ? " cannot be reached (the store it hosts: " + why + ")"
                                      : " died (lost the connection to the store it hosted)"));
    throw Error(Result::RemoteError, "lost the connection to the rendezvous store at " +
                                         server.toString() + (unanswered ? ": " + why : ""));
  }
  void checkUsable() {
    if (closed) throw Error(Result::InvalidUsage, "store client used after goodbye()");
    if (lost) connectionLost();
  }
  // Pops the frames already read: stashes notices, skips late answers, and returns the
  // answer to `id` if it is among them.
  std::optional<Frame> takeFrames(uint32_t id) {
    while (auto f = popFrame(in, kMaxFrame)) {
      if (f->type == kRankDead) {
        const Answer a = parseAnswer(*f);
        dead.insert(int(a.number));
        if (a.unreachable) unreachable.insert(int(a.number));
      } else if (id != 0 && f->id == id)
        return f;
    }
    return std::nullopt;
  }
  // Reads what has arrived without waiting; on EOF keeps the notices and throws (after
  // handing out the answer to `id` if it came just before the close: a refusal does).
  std::optional<Frame> readNow(uint32_t id = 0) {
    int error = 0;
    if (!readAvailable(socket.fd(), in, error)) {
      unanswered = error == ETIMEDOUT;
      if (auto f = takeFrames(id)) return f;
      connectionLost();
    }
    return std::nullopt;
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
      if (n > 0)
        if (auto f = readNow(id)) return f;
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
    if (f->type == kRefused)
      throw Error(Result::InvalidUsage, "the store at " + server.toString() + " refused " + what +
                                            ": " + parseAnswer(*f).value);
    if (f->type != answer) throw Error(Result::RemoteError, "store: unexpected answer type");
    return std::move(*f);
  }
};

TcpStoreClient::TcpStoreClient(const net::SocketAddress& server, const security::JobSecret& secret,
                               int rank, Deadline deadline)
    : impl_(std::make_unique<Impl>()) {
  impl_->server = server;
  impl_->socket = net::Socket::connect(server, deadline);
  impl_->socket.setNoDelay();
  impl_->socket.setUnansweredLimit(settings::duration("CHORUS_KEEPALIVE"));
  std::string hello = helloPayload(rank, processIncarnation());
  security::authenticateConnection(impl_->socket, secret.key(),
                                   security::asBytes("chorus store" + hello), deadline,
                                   "the rendezvous store at " + server.toString());
  Frame f;
  try {
    f = impl_->request(kHello, hello, kHelloOk, deadline,
                       "rank " + std::to_string(rank) + "'s hello");
  } catch (const Error& e) {
    if (!impl_->lost || e.code() == Result::InvalidUsage) throw;
    throw Error(Result::RemoteError, "the rendezvous store at " + server.toString() +
                                         " closed the connection during the handshake "
                                         "(wrong job secret, or not a Chorus store)");
  }
  impl_->hostRank = int(parseAnswer(f).number);
}

TcpStoreClient::~TcpStoreClient() = default;

namespace {
void checkSizes(const std::string& key, size_t valueBytes) {
  if (key.size() > kMaxKey || valueBytes > kMaxValue)
    throwInvalid("store: key '" + key.substr(0, 64) + "' (" + std::to_string(key.size()) +
                 " bytes) or its value (" + std::to_string(valueBytes) +
                 " bytes) is over the store's limit (" + std::to_string(kMaxKey) + " / " +
                 std::to_string(kMaxValue) + " bytes)");
}
}  // namespace

void TcpStoreClient::set(const std::string& key, std::span<const std::byte> value) {
  setBy(key, value, deadlineIn(kRequestTimeout));
}

void TcpStoreClient::setBy(const std::string& key, std::span<const std::byte> value,
                           Deadline deadline) {
  checkSizes(key, value.size());
  std::lock_guard lock(impl_->mutex);
  std::string payload;
  putBytes(payload, key.data(), key.size());
  putBytes(payload, value.data(), value.size());
  impl_->request(kSet, payload, kSetOk, deadline, "setting key '" + key + "'");
}

std::vector<std::byte> TcpStoreClient::get(const std::string& key, Deadline deadline) {
  checkSizes(key, 0);
  std::lock_guard lock(impl_->mutex);
  std::string payload;
  putBytes(payload, key.data(), key.size());
  Frame f = impl_->request(kGet, payload, kValue, deadline, "waiting for key '" + key + "'");
  std::string bytes = parseAnswer(f).value;
  auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  return {p, p + bytes.size()};
}

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  return addBy(key, delta, deadlineIn(kRequestTimeout));
}

int64_t TcpStoreClient::addBy(const std::string& key, int64_t delta, Deadline deadline) {
  checkSizes(key, 0);
  std::lock_guard lock(impl_->mutex);
  std::string payload;
  putBytes(payload, key.data(), key.size());
  putInt(payload, uint64_t(delta), 8);
  Frame f = impl_->request(kAdd, payload, kAddResult, deadline, "adding to key '" + key + "'");
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

std::vector<int> TcpStoreClient::unreachableRanks() {
  std::lock_guard lock(impl_->mutex);
  return {impl_->unreachable.begin(), impl_->unreachable.end()};
}

bool TcpStoreClient::serverStoppedAnswering() {
  std::lock_guard lock(impl_->mutex);
  return impl_->unanswered;
}

void TcpStoreClient::goodbye() { goodbye(deadlineIn(std::chrono::seconds(10))); }

void TcpStoreClient::goodbye(Deadline deadline) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->closed) return;
  try {
    impl_->request(kGoodbye, {}, kGoodbyeOk, deadline, "saying goodbye");
  } catch (const Error&) {
    // Leaving anyway: a store that is gone or slow cannot report us dead.
  }
  impl_->closed = true;
  impl_->socket = net::Socket();
}

int TcpStoreClient::fd() const { return impl_->socket.fd(); }

}  // namespace chorus
