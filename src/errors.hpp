// Internal error helpers. PeerError marks a failure that one peer caused (death, reset,
// protocol violation); the engine adds the collective and sequence number.
#pragma once

#include <chorus/chorus.hpp>

#include <string>

namespace chorus {

// Its failedRanks() hold `peer`, or every rank in `failed` when one check learns of several.
class PeerError : public Error {
 public:
  PeerError(int peer, const std::string& what) : PeerError(peer, what, {peer}) {}
  PeerError(int peer, const std::string& what, std::vector<int> failed)
      : Error(Result::RemoteError, what, std::move(failed)), peer_(peer) {}
  // A peer whose host does not answer (down, or its network cut off): the diagnosis that
  // follows need not say so again.
  static PeerError unreachable(int peer, const std::string& what) {
    PeerError e(peer, what);
    e.unreachable_ = true;
    return e;
  }
  int peer() const { return peer_; }
  bool unreachable() const { return unreachable_; }

 private:
  int peer_;
  bool unreachable_ = false;
};

// Throws Error(SystemError) with strerror(errno) appended.
[[noreturn]] void throwSystemError(const std::string& what);
[[noreturn]] inline void throwInvalid(const std::string& what) {
  throw Error(Result::InvalidArgument, what);
}

}  // namespace chorus
