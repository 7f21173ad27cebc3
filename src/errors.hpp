// Internal error helpers. PeerError marks a failure that one peer caused (death, reset,
// protocol violation); the engine adds the collective and sequence number.
#pragma once

#include <chorus/chorus.hpp>

#include <string>

namespace chorus {

class PeerError : public Error {
 public:
  PeerError(int peer, const std::string& what) : Error(Result::RemoteError, what), peer_(peer) {}
  int peer() const { return peer_; }

 private:
  int peer_;
};

// Throws Error(SystemError) with strerror(errno) appended.
[[noreturn]] void throwSystemError(const std::string& what);
[[noreturn]] inline void throwInvalid(const std::string& what) {
  throw Error(Result::InvalidArgument, what);
}

}  // namespace chorus
