// The striped byte stream as the tcp transport receives it (src/striping): a peer's bytes
// on 1..4 paths, read in pieces whose sizes come from the input, into a StripeReceiver.
// Raw mode: any bytes, so any headers; the receiver may refuse the stream (PeerError),
// never crash, and never hand out more bytes than arrived. Stream mode (first bit set):
// the input's tail is a real stream, cut into chunks that go to paths as the input says;
// the receiver must hand out exactly that stream.
#include "errors.hpp"
#include "fuzz_input.hpp"
#include "striping/chunk_header.hpp"
#include "striping/stripe_receiver.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

namespace {

using namespace chorus::stripe;

class Paths final : public PathIo {
 public:
  Paths(int n, const uint8_t* sizes, size_t count)
      : queues(size_t(n)), sizes_(sizes), count_(count) {}
  std::vector<std::deque<uint8_t>> queues;
  ssize_t write(int, const iovec*, int) override { return kWouldBlock; }
  ssize_t read(int path, const iovec* iov, int count) override {
    auto& q = queues[size_t(path)];
    if (q.empty()) return kWouldBlock;
    size_t limit = count_ ? size_t(sizes_[next_++ % count_]) + 1 : q.size();  // 1..256
    size_t n = 0;
    for (int i = 0; i < count && !q.empty() && n < limit; ++i) {
      size_t take = std::min({iov[i].iov_len, q.size(), limit - n});
      std::copy_n(q.begin(), take, static_cast<uint8_t*>(iov[i].iov_base));
      q.erase(q.begin(), q.begin() + ptrdiff_t(take));
      n += take;
    }
    return ssize_t(n);
  }
  int64_t backlog(int) override { return 0; }

 private:
  const uint8_t* sizes_;
  size_t count_, next_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const bool stream = data[0] & 1;
  const int paths = 1 + (data[0] >> 1) % 4;
  const size_t control = std::min<size_t>(data[1] % 32, size - 2);  // read sizes, chunk cuts
  const uint8_t* ctl = data + 2;
  const uint8_t* body = ctl + control;
  const size_t bodySize = size - 2 - control;
  Paths io(paths, ctl, control);
  static auto stats = registerChannel("fuzz", 0, 1, std::vector<std::string>(4, "p"));  // once
  StripeReceiver receiver(1, paths, 1 << 12, io, stats.get(), 512);

  if (stream) {  // well-formed chunks of 1..512 bytes, spread over the paths
    size_t at = 0, i = 0;
    while (at < bodySize) {
      uint8_t c = control ? ctl[i++ % control] : 0;
      size_t len = std::min<size_t>(bodySize - at, 1 + size_t(c) * 2);
      auto h = ChunkHeader::make(at, uint32_t(len));
      auto& q = io.queues[size_t(c % paths)];
      auto* hb = reinterpret_cast<const uint8_t*>(&h);
      q.insert(q.end(), hb, hb + sizeof(h));
      q.insert(q.end(), body + at, body + at + len);
      at += len;
    }
  } else {  // raw bytes, dealt to the paths in 16-byte pieces
    for (size_t at = 0, piece = 0; at < bodySize; at += 16, ++piece) {
      auto& q = io.queues[piece % size_t(paths)];
      q.insert(q.end(), body + at, body + std::min(bodySize, at + 16));
    }
  }
  std::vector<uint8_t> out;
  chorus::fuzz::expectOnlyChorusErrors([&] {
    auto queued = [&] {
      size_t n = 0;
      for (auto& q : io.queues) n += q.size();
      return n;
    };
    // Each peek pulls every path: once one reads nothing and hands out nothing, nothing
    // will change any more (a chunk waiting beyond the ring's window, say).
    for (size_t before = queued() + 1;;) {
      auto span = receiver.peek();
      size_t now = queued();
      if (span.empty() && now == before) break;
      before = now;
      auto* p = reinterpret_cast<const uint8_t*>(span.data());
      out.insert(out.end(), p, p + span.size());
      receiver.consume(span.size());
      if (out.size() > bodySize) __builtin_trap();  // more out than came in
    }
  });
  if (stream && (out.size() != bodySize || !std::equal(out.begin(), out.end(), body)))
    __builtin_trap();  // a well-formed stream must come out whole and in order
  return 0;
}
