#include "transports/tcp/tcp_connector.hpp"

#include "errors.hpp"
#include "log.hpp"
#include "security/handshake.hpp"
#include "transports/tcp/tcp_connect.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace chorus::tcp {
namespace {

constexpr uint8_t kKept = 'Y';  // the acceptor's verdict: this connection is the pair's

std::string seconds(std::chrono::milliseconds d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(d).count());
  return text;
}

bool writable(int fd) {
  pollfd p{fd, POLLOUT, 0};
  return ::poll(&p, 1, 0) > 0;
}

// Sends all of a few bytes on a fresh connection (they fit in its empty send buffer).
bool sendSmall(int fd, const void* data, size_t bytes) {
  for (;;) {
    ssize_t n = ::send(fd, data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == ssize_t(bytes)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

}  // namespace

struct Connector::Outgoing {
  enum class Step { Connect, Challenge, Verdict, Done };
  net::Socket socket;
  security::Initiator initiator;
  Step step = Step::Connect;
  Deadline deadline;
  std::array<uint8_t, security::kChallengeSize> got{};
  size_t have = 0;
};

struct Connector::Pending {
  net::Socket socket;
  security::AcceptedConnection auth;
};

Connector::Connector(const TransportContext& ctx, const TcpConfig& config,
                     std::chrono::milliseconds timeout)
    : ctx_(ctx),
      config_(config),
      timeout_(timeout),
      listening_(listenAndPublish(ctx, config)),
      peers_(size_t(ctx.nranks)),
      in_(size_t(ctx.nranks)),
      ready_(size_t(ctx.nranks)) {}

Connector::~Connector() = default;

std::string Connector::me() const { return "tcp: rank " + std::to_string(ctx_.rank); }
std::string Connector::them(int peer) const { return "rank " + std::to_string(peer); }

bool Connector::progress(int peer) {
  Peer& p = peers_[size_t(peer)];
  if (p.state == State::Ready) return true;
  if (p.state == State::Taken) return false;
  service();  // the peer's own connections may be waiting to be accepted: take those first
  if (p.failure) std::rethrow_exception(p.failure);
  if (p.state == State::Idle) start(peer);
  if (p.state == State::Connecting) stepOutgoing(peer);
  if (p.failure) std::rethrow_exception(p.failure);
  if (p.state == State::Ready) return true;
  if (Clock::now() >= p.deadline) {
    const char* doing = p.state == State::Accepting  ? "finish connecting to us"
                        : p.state == State::Awaiting ? "connect to us (it dropped ours)"
                                                     : "answer our connection";
    throw Error(Result::Timeout,
                me() + ": " + them(peer) + " did not " + doing + " within " + seconds(timeout_) +
                    " of the first use of its channel (CHORUS_TIMEOUT): not calling the same "
                    "collectives, stuck, or gone?",
                {peer});
  }
  return false;
}

std::vector<net::Socket> Connector::take(int peer) {
  Peer& p = peers_[size_t(peer)];
  if (p.state != State::Ready) throw Error(Result::InternalError, me() + ": nothing to take");
  p.state = State::Taken;
  return std::move(ready_[size_t(peer)]);
}

std::vector<int> Connector::takeReady() { return std::exchange(newlyReady_, {}); }

void Connector::fail(int peer, std::exception_ptr why) {
  Peer& p = peers_[size_t(peer)];
  p.out.clear();
  p.failure = std::move(why);
  p.state = State::Failed;
}

void Connector::start(int peer) {
  Peer& p = peers_[size_t(peer)];
  p.deadline = Clock::now() + timeout_;
  const auto remote = peerNics(ctx_, peer, p.deadline);
  const auto key = peerKey(ctx_, peer, p.deadline);
  const auto& local = listening_.nics;
  const int count = pathCount(config_, local.size(), remote.size());
  for (int s = 0; s < count; ++s) {
    const net::Interface& from = local[size_t(s) % local.size()];
    const Nic* to = &remote[size_t(s) % remote.size()];
    for (const Nic& n : remote)
      if (n.name == from.name) to = &n;  // rails stay apart
    // One NIC: routing chooses; several: leave through this one.
    Connecting c =
        startConnect(parseAddress(to->address), local.size() > 1 ? &from.address : nullptr);
    if (c.error != 0 && c.error != EINPROGRESS) {
      return fail(peer,
                  std::make_exception_ptr(PeerError(
                      peer, me() + " could not connect to " + them(peer) + " at " + to->address +
                                ": " + std::strerror(c.error) + " (it exited or was killed?)")));
    }
    auto hello = encodeHello({kHelloMagic, ctx_.rank, s, count, ctx_.nranks, config_.block});
    p.out.push_back(Outgoing{std::move(c.socket),
                             security::Initiator(security::asBytes(key), hello),
                             Outgoing::Step::Connect, p.deadline});
  }
  p.state = State::Connecting;
}

// Moves one connection's handshake on: connect, hello, the acceptor's challenge, our
// proof, its verdict. Returns what became of it.
Connector::Outcome Connector::step(Outgoing& o) {
  using Step = Outgoing::Step;
  const int fd = o.socket.fd();
  if (o.step == Step::Connect) {
    if (!writable(fd)) return {};
    if (int err = connectError(fd); err != 0)
      return {Outcome::Failed, std::string("could not connect: ") + std::strerror(err)};
    auto hello = o.initiator.hello();
    if (!sendSmall(fd, hello.data(), hello.size()))
      return {Outcome::Closed, "closed the connection before our hello"};
    o.step = Step::Challenge;
  }
  if (o.step == Step::Challenge) {
    ssize_t n = ::recv(fd, o.got.data() + o.have, o.got.size() - o.have, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
      return {Outcome::Closed, "closed the connection during authentication"};
    if (n > 0) o.have += size_t(n);
    if (o.have < o.got.size()) return {};
    auto proof = o.initiator.answer(o.got);
    if (!proof)
      return {Outcome::Failed,
              "failed to prove the job secret (another job's, or not a Chorus peer)"};
    if (!sendSmall(fd, proof->data(), proof->size()))
      return {Outcome::Closed, "closed the connection during authentication"};
    o.step = Step::Verdict;
  }
  if (o.step == Step::Verdict) {
    uint8_t verdict = 0;
    ssize_t n = ::recv(fd, &verdict, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || (n == 1 && verdict != kKept))
      return {Outcome::Closed, "dropped our connection"};
    if (n == 1) o.step = Step::Done;
  }
  return {o.step == Step::Done ? Outcome::Kept : Outcome::Pending, {}};
}

void Connector::stepOutgoing(int peer) {
  Peer& p = peers_[size_t(peer)];
  bool all = true;
  for (Outgoing& o : p.out) {
    Outcome r = step(o);
    if (r.what == Outcome::Failed)
      return fail(peer,
                  std::make_exception_ptr(PeerError(peer, me() + ": " + them(peer) + ": " + r.why +
                                                              " (it exited or was killed?)")));
    if (r.what == Outcome::Closed) return dropped(peer, r.why);
    all &= r.what == Outcome::Kept;
  }
  if (!all) return;
  std::vector<net::Socket> sockets;
  for (Outgoing& o : p.out) sockets.push_back(std::move(o.socket));
  p.out.clear();
  becomeReady(peer, sockets);
}

// Our connections to `peer` were closed before they were kept. A lower rank drops a
// higher one's connections only when it is connecting itself: then its own come (we are
// the higher rank). Otherwise the peer is gone.
void Connector::dropped(int peer, const std::string& how) {
  Peer& p = peers_[size_t(peer)];
  p.out.clear();
  if (peer < ctx_.rank) {
    p.state = State::Awaiting;
    return;
  }
  fail(peer, std::make_exception_ptr(PeerError(
                 peer, me() + ": " + them(peer) + " " + how + " (it exited or was killed?)")));
}

void Connector::becomeReady(int peer, std::vector<net::Socket>& sockets) {
  for (auto& s : sockets) tune(s, config_);
  opened_ += static_cast<int>(sockets.size());
  ready_[size_t(peer)] = std::move(sockets);
  peers_[size_t(peer)].state = State::Ready;
  newlyReady_.push_back(peer);
}

void Connector::accepted(const Hello& hello, net::Socket socket) {
  if (hello.rank < 0 || hello.rank >= ctx_.nranks || hello.rank == ctx_.rank) return;
  const int peer = hello.rank;
  Peer& p = peers_[size_t(peer)];
  switch (p.state) {
    case State::Ready:
    case State::Taken:
    case State::Failed:
      return;  // a duplicate: dropped
    case State::Connecting:
      if (peer > ctx_.rank) return;  // ours win: dropped, the peer will take ours
      // The lower rank's win. It drops ours once their handshakes are through: see them
      // through rather than close them halfway (which it would log as a stranger's).
      for (Outgoing& o : p.out) abandoned_.push_back(std::move(o));
      p.out.clear();
      p.state = State::Accepting;
      break;
    case State::Idle:
      p.deadline = Clock::now() + timeout_;
      p.state = State::Accepting;
      break;
    case State::Awaiting:
      p.state = State::Accepting;
      break;
    case State::Accepting:
      break;
  }
  net::Socket* slot = slotFor(hello, ctx_.rank, ctx_.nranks, config_, in_);
  if (!slot || !sendSmall(socket.fd(), &kKept, 1)) return;
  *slot = std::move(socket);
  auto& mine = in_[size_t(peer)];
  if (std::all_of(mine.begin(), mine.end(), [](auto& s) { return bool(s); }))
    becomeReady(peer, mine);
}

void Connector::appendPollFds(std::vector<pollfd>& fds) const {
  for (auto& l : listening_.sockets) fds.push_back(pollfd{l.fd(), POLLIN, 0});
  for (auto& p : pending_) fds.push_back(pollfd{p.socket.fd(), POLLIN, 0});
  auto add = [&](const Outgoing& o) {
    if (o.step == Outgoing::Step::Done) return;
    short events = o.step == Outgoing::Step::Connect ? POLLOUT : POLLIN;
    fds.push_back(pollfd{o.socket.fd(), events, 0});
  };
  for (const Peer& p : peers_)
    if (p.state == State::Connecting) std::for_each(p.out.begin(), p.out.end(), add);
  std::for_each(abandoned_.begin(), abandoned_.end(), add);
}

void Connector::service() {
  const auto now = Clock::now();
  for (auto& l : listening_.sockets) {
    for (;;) {
      int fd = ::accept4(l.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;  // EAGAIN, or a connection aborted before we got to it
      pending_.push_back(Pending{
          net::Socket(fd),
          security::AcceptedConnection(security::Bytes(listening_.key), now + timeout_, me())});
    }
  }
  using Status = security::AcceptedConnection::Status;
  std::vector<Pending> still;
  for (Pending& p : pending_) {
    Status status = p.auth.step(p.socket.fd());
    if (status == Status::Pending) status = p.auth.expire(p.socket.fd(), now);
    if (status == Status::Pending) {
      still.push_back(std::move(p));
    } else if (status == Status::Accepted) {
      if (auto hello = decodeHello(p.auth.context())) accepted(*hello, std::move(p.socket));
    }
  }
  pending_ = std::move(still);
  for (int peer = 0; peer < ctx_.nranks; ++peer)
    if (peers_[size_t(peer)].state == State::Connecting) stepOutgoing(peer);
  std::erase_if(abandoned_,
                [&](Outgoing& o) { return step(o).what != Outcome::Pending || now >= o.deadline; });
}

}  // namespace chorus::tcp
