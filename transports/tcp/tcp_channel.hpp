// One peer's byte stream over several TCP connections, through the striping layer
// (src/striping): chunks go to the connection that would deliver them soonest by its
// measured rate, and the receiver puts them back in order. This file only lends the
// sockets to it (stripe::PathIo) and answers poll. Not thread-safe: one engine thread
// drives a transport.
#pragma once

#include "net/socket.hpp"
#include "striping/stripe_receiver.hpp"
#include "striping/stripe_sender.hpp"
#include "striping/stripe_stats.hpp"
#include "transports/tcp/tcp_listen.hpp"
#include "transports/transport.hpp"

#include <poll.h>

#include <memory>
#include <string>
#include <vector>

namespace chorus::tcp {

class TcpChannel final : public Channel, private stripe::PathIo {
 public:
  // names[s]: what sockets[s] is called in stats and logs ("rail0:41234").
  TcpChannel(int rank, int peer, std::vector<net::Socket> sockets, std::vector<std::string> names,
             const TcpConfig& config);
  ~TcpChannel() override;

  size_t trySend(const void* data, size_t bytes) override;
  std::span<const std::byte> peek() override;
  void consume(size_t bytes) override { receiver_.consume(bytes); }

  int streams() const { return static_cast<int>(sockets_.size()); }
  // Transport::probe and silence: over every socket; the least answered one.
  void probe(bool on);
  std::optional<PeerSilence> silence() const;
  // Appends exactly streams() entries (fd -1 where there is nothing to wait for).
  void appendPollFds(std::vector<pollfd>& fds) const;
  // Takes poll's answer for the entries appendPollFds added: marks writable paths and
  // receives what arrived; never throws (failures are raised by trySend/peek).
  void onPolled(const pollfd* fds);

 private:
  ssize_t write(int path, const iovec* iov, int count) override;
  ssize_t read(int path, const iovec* iov, int count) override;
  int64_t backlog(int path) override;
  void transferred(int path, size_t chunkBytes) override;

  std::vector<net::Socket> sockets_;
  std::vector<size_t> quickAckBytes_;  // per socket: chunks this large leave pingpong mode
  std::shared_ptr<stripe::ChannelStats> stats_;
  stripe::StripeSender sender_;
  stripe::StripeReceiver receiver_;
  std::chrono::milliseconds unansweredLimit_;  // CHORUS_KEEPALIVE, restored after probing
};

}  // namespace chorus::tcp
