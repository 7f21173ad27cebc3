// What the store, bootstrap and security tests share: a store server on loopback, a raw
// connection that has passed the store's handshake, the bytes/text of stored values, the
// chorus::Error a call throws, and whether the other end closed a connection. No GoogleTest
// here: chorus_stranger_test is a plain program.
#pragma once

#include "errors.hpp"
#include "net/socket.hpp"
#include "security/connection_auth.hpp"
#include "security/job_secret.hpp"
#include "store/store.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace chorus::test_support {

// A store server on 127.0.0.1, on a free port (server->address() says which).
inline std::unique_ptr<TcpStoreServer> loopbackStore(const security::JobSecret& secret) {
  return std::make_unique<TcpStoreServer>(net::SocketAddress::parse("127.0.0.1", 0), secret, -1);
}

inline std::span<const std::byte> bytes(const std::string& s) {
  return std::as_bytes(std::span(s));
}
inline std::string text(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Runs f and returns the chorus::Error it throws. When it throws none: an Error with
// code Success saying so, which no check for a refusal accepts.
inline Error errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return Error(Result::Success, "no chorus::Error thrown");
}

inline bool says(const Error& e, const std::string& what) {
  return std::string(e.what()).find(what) != std::string::npos;
}

// True when the other end closes (or resets) the connection within `limit`.
inline bool closedWithin(net::Socket& s, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  char buf[256];
  while (Clock::now() < deadline) {
    pollfd p{s.fd(), POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(s.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

// A connection to the store that has passed its handshake for `hello` (a
// store_wire::helloPayload), as the store client does: the next bytes are frames.
inline net::Socket authenticatedStoreSocket(const net::SocketAddress& store,
                                            const security::JobSecret& secret,
                                            const std::string& hello, Deadline deadline) {
  net::Socket s = net::Socket::connect(store, deadline);
  security::authenticateConnection(s, secret.key(), security::asBytes("chorus store" + hello),
                                   deadline, "store");
  return s;
}

}  // namespace chorus::test_support
