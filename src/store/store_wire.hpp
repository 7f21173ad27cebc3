// The TcpStore wire format, both directions: u32 length of the rest, u8 type, u32 request
// id, payload. Strings and byte strings are u32 length + bytes; integers are
// little-endian. Hello: magic u64 | rank i32 | incarnation[16] (the same bytes the
// handshake bound into its MACs). Parsing is kept apart from the sockets so that it can be fuzzed:
// every parse function throws Error(RemoteError) on malformed input, never reads past its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace chorus::store_wire {

enum Type : uint8_t {
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kAdd = 4,
  kGoodbye = 5,
  kHelloOk = 101,
  kSetOk = 102,
  kValue = 103,
  kAddResult = 104,
  kGoodbyeOk = 105,
  kRefused = 106,  // the request broke a rule (reason as a string); the client throws
  kRankDead = 110,
};

constexpr uint64_t kMagic = 0x3252'4f54'5353'4843ull;  // "CHSSTOR2"
constexpr size_t kHeader = 4 + 1 + 4;
constexpr size_t kIncarnation = 16;  // the client process's random id
constexpr size_t kHelloPayload = 8 + 4 + kIncarnation;
// What the protocol needs: keys are short paths ("comm0/tcp/3/nics"), values are
// addresses, tokens, figures and reports (a few KiB; a topology of thousands of ranks
// stays far below the cap).
constexpr size_t kMaxKey = 4096;
constexpr size_t kMaxValue = 16u << 20;
constexpr uint32_t kMaxFrame = 1 + 4 + 4 + kMaxKey + 4 + kMaxValue;  // a set, the largest
constexpr uint32_t kMaxHelloFrame = 1 + 4 + kHelloPayload;           // before the hello is accepted

void putInt(std::string& out, uint64_t v, int bytes);
void putBytes(std::string& out, const void* data, size_t n);

struct Frame {
  uint8_t type = 0;
  uint32_t id = 0;
  std::string payload;
};

std::string frame(uint8_t type, uint32_t id, const std::string& payload);
// Appends what socket `fd` has now, without waiting, up to `limit` bytes in `in`; false on
// EOF or an error, with the socket's error in `error` (0 at EOF; ETIMEDOUT: the other host
// stopped answering, net::Socket::setUnansweredLimit).
bool readAvailable(int fd, std::string& in, int& error, size_t limit = SIZE_MAX);
std::string helloPayload(int32_t rank, const std::string& incarnation);
// Pops one complete frame off the front of `in`, if there is one; throws on a length
// outside [5, maxFrame].
std::optional<Frame> popFrame(std::string& in, uint32_t maxFrame);

// A client's request, as the server reads it. Keys over kMaxKey and values over kMaxValue
// are malformed.
struct Request {
  uint8_t type = 0;
  std::string key, value;   // set: both; get, add: key
  int64_t delta = 0;        // add
  int32_t rank = -1;        // hello
  std::string incarnation;  // hello: kIncarnation bytes
};
Request parseRequest(const Frame& f);

// An answer or notice, as the client reads it.
struct Answer {
  uint8_t type = 0;
  std::string value;         // kValue; kRefused: the reason
  int64_t number = 0;        // kAddResult: the sum; kHelloOk: host rank; kRankDead: the rank
  bool unreachable = false;  // kRankDead: its host stopped answering (else it closed)
};
Answer parseAnswer(const Frame& f);

}  // namespace chorus::store_wire
