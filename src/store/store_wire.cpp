#include "store/store_wire.hpp"

#include "errors.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace chorus::store_wire {
namespace {

struct Reader {
  const char* p;
  size_t left;
  uint64_t integer(int bytes) {
    need(size_t(bytes));
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<uint8_t>(p[i])) << (8 * i);
    p += bytes, left -= size_t(bytes);
    return v;
  }
  std::string bytes(size_t max) {
    size_t n = integer(4);
    if (n > max)
      throw Error(Result::RemoteError, "store: a field of " + std::to_string(n) +
                                           " bytes (at most " + std::to_string(max) + ")");
    need(n);
    std::string s(p, n);
    p += n, left -= n;
    return s;
  }
  void need(size_t n) const {
    if (left < n) throw Error(Result::RemoteError, "store: malformed message");
  }
};

}  // namespace

void putInt(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void putBytes(std::string& out, const void* data, size_t n) {
  putInt(out, n, 4);
  out.append(static_cast<const char*>(data), n);
}

bool readAvailable(int fd, std::string& in, int& error, size_t limit) {
  error = 0;
  char buf[65536];
  while (in.size() < limit) {
    ssize_t n = ::recv(fd, buf, std::min(sizeof(buf), limit - in.size()), MSG_DONTWAIT);
    if (n > 0) {
      in.append(buf, size_t(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    error = errno;
    return false;
  }
  return true;
}

std::string frame(uint8_t type, uint32_t id, const std::string& payload) {
  std::string out;
  putInt(out, 1 + 4 + payload.size(), 4);
  out.push_back(static_cast<char>(type));
  putInt(out, id, 4);
  return out + payload;
}

std::string helloPayload(int32_t rank, const std::string& incarnation) {
  std::string out;
  putInt(out, kMagic, 8);
  putInt(out, uint32_t(rank), 4);
  out += incarnation;
  return out;
}

std::optional<Frame> popFrame(std::string& in, uint32_t maxFrame) {
  if (in.size() < 4) return std::nullopt;
  Reader r{in.data(), in.size()};
  uint32_t length = static_cast<uint32_t>(r.integer(4));
  if (length < 5 || length > maxFrame)
    throw Error(Result::RemoteError, "store: bad frame length " + std::to_string(length));
  if (in.size() < 4 + size_t(length)) return std::nullopt;
  Frame f;
  f.type = static_cast<uint8_t>(in[4]);
  Reader h{in.data() + 5, 4};
  f.id = static_cast<uint32_t>(h.integer(4));
  f.payload = in.substr(kHeader, length - 5);
  in.erase(0, 4 + size_t(length));
  return f;
}

Request parseRequest(const Frame& f) {
  Reader r{f.payload.data(), f.payload.size()};
  Request q;
  q.type = f.type;
  switch (f.type) {
    case kHello:
      if (r.integer(8) != kMagic) throw Error(Result::RemoteError, "store: bad hello magic");
      q.rank = static_cast<int32_t>(r.integer(4));
      r.need(kIncarnation);
      q.incarnation.assign(r.p, kIncarnation);
      break;
    case kSet:
      q.key = r.bytes(kMaxKey);
      q.value = r.bytes(kMaxValue);
      break;
    case kGet:
      q.key = r.bytes(kMaxKey);
      break;
    case kAdd:
      q.key = r.bytes(kMaxKey);
      q.delta = static_cast<int64_t>(r.integer(8));
      break;
    case kGoodbye:
      break;
    default:
      throw Error(Result::RemoteError, "store: unknown request type " + std::to_string(f.type));
  }
  return q;
}

Answer parseAnswer(const Frame& f) {
  Reader r{f.payload.data(), f.payload.size()};
  Answer a;
  a.type = f.type;
  switch (f.type) {
    case kHelloOk:
      a.number = static_cast<int32_t>(r.integer(4));
      break;
    case kRankDead:  // the rank, then 1 where its host stopped answering
      a.number = static_cast<int32_t>(r.integer(4));
      a.unreachable = r.left > 0 && r.integer(1) == 1;
      break;
    case kValue:
      a.value = r.bytes(kMaxValue);
      break;
    case kRefused:
      a.value = r.bytes(kMaxKey);
      break;
    case kAddResult:
      a.number = static_cast<int64_t>(r.integer(8));
      break;
    case kSetOk:
    case kGoodbyeOk:
      break;
    default:
      throw Error(Result::RemoteError, "store: unknown answer type " + std::to_string(f.type));
  }
  return a;
}

}  // namespace chorus::store_wire
