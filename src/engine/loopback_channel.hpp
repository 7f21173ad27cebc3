// A channel from a rank to itself (send/recv with peer == own rank): an unbounded byte
// queue in memory, so a send completes before its matching recv is even issued.
#pragma once

#include "transports/transport.hpp"

#include <vector>

namespace chorus {

class LoopbackChannel : public Channel {
 public:
  size_t trySend(const void* data, size_t bytes) override {
    auto* p = static_cast<const std::byte*>(data);
    queue_.insert(queue_.end(), p, p + bytes);
    return bytes;
  }
  std::span<const std::byte> peek() override {
    return {queue_.data() + head_, queue_.size() - head_};
  }
  void consume(size_t bytes) override {
    head_ += bytes;
    if (head_ == queue_.size()) {
      queue_.clear();
      head_ = 0;
    }
  }

 private:
  std::vector<std::byte> queue_;
  size_t head_ = 0;
};

}  // namespace chorus
