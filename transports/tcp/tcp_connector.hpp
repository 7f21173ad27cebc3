// Connections made on first use, not a full mesh at set-up: a rank connects only to the
// peers its schedules talk to (a ring: two). Either side may start a pair's connections
// (the first trySend or peek on its channel). When both start at once, the lower rank's
// connections win: the higher rank drops its own attempt and takes the lower's; the lower
// refuses the higher's. Every connection carries the authenticated handshake
// (security/handshake.hpp, a Hello as its context), then one verdict byte from the
// acceptor ('Y': kept), so that no data goes out on a connection the other end drops.
// Nothing here blocks (but for reading a peer's published address from the store the
// first time): the transport drives it from trySend/peek and from its poll.
#pragma once

#include "net/socket.hpp"
#include "security/connection_auth.hpp"
#include "transports/tcp/tcp_hello.hpp"
#include "transports/tcp/tcp_listen.hpp"

#include <poll.h>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

namespace chorus::tcp {

class Connector {
 public:
  // Listens and publishes (listenAndPublish). A peer that has not answered within
  // `timeout` of the first use fails.
  Connector(const TransportContext& ctx, const TcpConfig& config,
            std::chrono::milliseconds timeout);
  ~Connector();

  // Starts `peer`'s connections unless they are under way (or done), and moves them on.
  // True once they are ready: take() hands them over. Throws PeerError naming the peer when
  // it refuses or drops them (it is gone), Error(Timeout) naming it (its failed rank) when
  // it has not answered within the timeout.
  bool progress(int peer);
  std::vector<net::Socket> take(int peer);
  // Peers whose connections became ready by accepting since the last call.
  std::vector<int> takeReady();

  // Entries to poll for the listeners and the handshakes under way (pollfd order is the
  // connector's business: after poll, call service()).
  void appendPollFds(std::vector<pollfd>& fds) const;
  // Accepts, answers handshakes, moves connects on; never blocks. Throws Error(InvalidUsage)
  // when a peer of this job uses other tcp settings.
  void service();

  // Connections this rank has opened (either side) so far, for stats and tests.
  int connectionsOpened() const { return opened_; }

 private:
  struct Outgoing;
  struct Pending;
  enum class State { Idle, Connecting, Awaiting, Accepting, Ready, Taken, Failed };
  struct Peer {
    State state = State::Idle;
    Deadline deadline{};
    std::vector<Outgoing> out;
    std::exception_ptr failure;  // raised by the next progress()
  };

  struct Outcome {
    enum What { Pending, Kept, Closed, Failed } what = Pending;
    std::string why;
  };
  Outcome step(Outgoing& o);
  void fail(int peer, std::exception_ptr why);
  void start(int peer);
  void stepOutgoing(int peer);
  void dropped(int peer, const std::string& how);
  void accepted(const Hello& hello, net::Socket socket);
  void becomeReady(int peer, std::vector<net::Socket>& sockets);
  std::string me() const;
  std::string them(int peer) const;

  TransportContext ctx_;
  TcpConfig config_;
  std::chrono::milliseconds timeout_;
  Listening listening_;
  std::vector<Peer> peers_;
  std::vector<std::vector<net::Socket>> in_;     // accepted, by peer and stream
  std::vector<std::vector<net::Socket>> ready_;  // until take()
  std::vector<int> newlyReady_;
  std::vector<Pending> pending_;     // accepted, handshake not complete
  std::vector<Outgoing> abandoned_;  // ours, lost to the lower rank's: until it drops them
  int opened_ = 0;
};

}  // namespace chorus::tcp
