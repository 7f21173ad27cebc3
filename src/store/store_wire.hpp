// The TcpStore wire format, both directions: u32 length of the rest, u8 type, u32 request
// id, payload. Strings and byte strings are u32 length + bytes; integers are
// little-endian. Parsing is kept apart from the sockets so that it can be fuzzed: every
// parse function throws Error(RemoteError) on malformed input, never reads past its end.
#pragma once

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
  kRankDead = 110,
};

constexpr uint64_t kMagic = 0x3152'4f54'5353'4843ull;  // "CHSSTOR1"
constexpr size_t kHeader = 4 + 1 + 4;
constexpr uint32_t kMaxFrame = 1u << 30;
constexpr uint32_t kMaxHelloFrame = 64;  // before the hello frame is accepted

void putInt(std::string& out, uint64_t v, int bytes);
void putBytes(std::string& out, const void* data, size_t n);

struct Frame {
  uint8_t type = 0;
  uint32_t id = 0;
  std::string payload;
};

std::string frame(uint8_t type, uint32_t id, const std::string& payload);
// Pops one complete frame off the front of `in`, if there is one; throws on a length
// outside [5, maxFrame].
std::optional<Frame> popFrame(std::string& in, uint32_t maxFrame);

// A client's request, as the server reads it.
struct Request {
  uint8_t type = 0;
  std::string key, value;  // set: both; get, add: key
  int64_t delta = 0;       // add
  int32_t rank = -1;       // hello
};
Request parseRequest(const Frame& f);

// An answer or notice, as the client reads it.
struct Answer {
  uint8_t type = 0;
  std::string value;   // kValue
  int64_t number = 0;  // kAddResult: the sum; kHelloOk: host rank; kRankDead: the rank
};
Answer parseAnswer(const Frame& f);

}  // namespace chorus::store_wire
