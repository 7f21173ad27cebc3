// Chorus's Store interface over the c10d::Store PyTorch hands a process-group backend,
// so that the communicator rendezvouses where init_process_group already did (env://,
// tcp://, file://) instead of opening a second rendezvous port.
#pragma once

#include "clock.hpp"
#include "store/store.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace chorus::torchpg {

class C10dStore : public Store {
 public:
  explicit C10dStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, std::span<const std::byte> value) override {
    const auto* bytes = reinterpret_cast<const uint8_t*>(value.data());
    store_->set(key, std::vector<uint8_t>(bytes, bytes + value.size()));
  }

  std::vector<std::byte> get(const std::string& key, Deadline deadline) override {
    // c10d's get waits with the store's own timeout; wait() first with ours. A zero
    // timeout means "forever" to some c10d stores, hence at least 1 ms.
    using std::chrono::milliseconds;
    const auto left = deadline == Deadline::max()
                          ? milliseconds(std::chrono::hours(24))
                          : std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    try {
      store_->wait({key}, std::max(left, milliseconds(1)));
    } catch (const std::exception& e) {
      const bool late = Clock::now() >= deadline - milliseconds(1);
      throw Error(late ? Result::Timeout : Result::SystemError,
                  "store (PyTorch c10d): key '" + key + "' " +
                      (late ? "not set before the deadline" : "unavailable") + ": " + e.what());
    }
    std::vector<uint8_t> value = store_->get(key);
    std::vector<std::byte> out(value.size());
    if (!value.empty()) std::memcpy(out.data(), value.data(), value.size());
    return out;
  }

  int64_t add(const std::string& key, int64_t delta) override { return store_->add(key, delta); }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace chorus::torchpg
