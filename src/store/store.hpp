// The rendezvous store: set/get/add with deadlines, shared by every rank of a job.
// TcpStoreServer also watches its clients: a client that disconnects without saying
// goodbye is a dead rank, and the server tells every other client at once.
//
// Who may do what (TcpStoreServer): a client proves the job secret, and the rank it
// names is bound into that proof. A rank belongs to the first process that claims it (a
// process may open several clients for its rank, one per communicator); another process
// claiming it is refused, so nobody can stand in for a live rank or report it dead. A
// key belongs to the client identity (rank and process) that first set it: nobody else
// may change it (setting the same bytes again is allowed), nor add to it unless it is a
// counter (made by add). Frames, keys,
// values and what one client may hold on the server are capped (store_wire.hpp,
// store_server.cpp); a request over a cap is refused with a clear error.
#pragma once

#include "clock.hpp"
#include "net/socket.hpp"
#include "security/job_secret.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace chorus {

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, std::span<const std::byte> value) = 0;
  // Waits until `key` exists; throws Error(Timeout) naming the key at the deadline.
  virtual std::vector<std::byte> get(const std::string& key, Deadline deadline) = 0;
  // Atomically adds `delta` to an integer key (created as 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // As set and add, but waiting for the store at most until `deadline` (Error(Timeout)
  // then): for reports made while the store's host may be gone or cut off, which must not
  // outlast the collective's own deadline. Stores that answer at once need not override.
  virtual void setBy(const std::string& key, std::span<const std::byte> value, Deadline) {
    set(key, value);
  }
  virtual int64_t addBy(const std::string& key, int64_t delta, Deadline) { return add(key, delta); }
};

// A value read from the store as text (the values Chorus stores are text).
inline std::string storeText(const std::vector<std::byte>& value) {
  return std::string(reinterpret_cast<const char*>(value.data()), value.size());
}
// Text as a value to store (valid while `text` is).
inline std::span<const std::byte> storeBytes(const std::string& text) {
  return std::as_bytes(std::span(text));
}

// Prefixes every key, so that several communicators share one server.
class PrefixStore : public Store {
 public:
  PrefixStore(Store& base, std::string prefix) : base_(base), prefix_(std::move(prefix)) {}
  void set(const std::string& key, std::span<const std::byte> value) override {
    base_.set(prefix_ + key, value);
  }
  std::vector<std::byte> get(const std::string& key, Deadline deadline) override {
    return base_.get(prefix_ + key, deadline);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    return base_.add(prefix_ + key, delta);
  }
  void setBy(const std::string& key, std::span<const std::byte> value, Deadline deadline) override {
    base_.setBy(prefix_ + key, value, deadline);
  }
  int64_t addBy(const std::string& key, int64_t delta, Deadline deadline) override {
    return base_.addBy(prefix_ + key, delta, deadline);
  }

 private:
  Store& base_;
  std::string prefix_;
};

class TcpStoreServer {
 public:
  // Listens on `address` (port 0: any free port) and serves in a background thread.
  // `hostRank` is the rank of the process hosting the server, -1 if none (a launcher).
  // With a derived secret (secret.derived), a connection from this host is accepted only
  // from a process of this process's uid.
  TcpStoreServer(const net::SocketAddress& address, const security::JobSecret& secret,
                 int hostRank);
  ~TcpStoreServer();
  net::SocketAddress address() const;  // the bound address, real port filled in

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class TcpStoreClient : public Store {
 public:
  // Connects (retrying until the deadline), proves the secret and registers `rank`
  // (-1: an observer that is never reported dead). Throws Error(InvalidUsage) when the
  // server refuses the rank (another process holds it).
  TcpStoreClient(const net::SocketAddress& server, const security::JobSecret& secret, int rank,
                 Deadline deadline);
  ~TcpStoreClient() override;

  // These throw Error(InvalidUsage) with the server's reason when it refuses the request
  // (a key another client owns, a value over the cap, ...).
  void set(const std::string& key, std::span<const std::byte> value) override;
  std::vector<std::byte> get(const std::string& key, Deadline deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void setBy(const std::string& key, std::span<const std::byte> value, Deadline deadline) override;
  int64_t addBy(const std::string& key, int64_t delta, Deadline deadline) override;

  // Non-blocking: the ranks the server reported dead so far. If the connection to the
  // server itself is lost, throws PeerError naming the server's host rank (or Error when
  // the host is not a rank).
  std::vector<int> deadRanks();
  // Of those, the ones the server stopped hearing from (their host stopped answering for
  // CHORUS_KEEPALIVE) rather than saw close. From what deadRanks() last read.
  std::vector<int> unreachableRanks();
  // Whether the connection to the server ended because its host stopped answering.
  bool serverStoppedAnswering();
  // Tells the server this rank leaves cleanly; it will not be reported dead. Waits for the
  // server's answer until `deadline` (10 s without one), then leaves anyway.
  void goodbye();
  void goodbye(Deadline deadline);
  int fd() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace chorus
