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
#include <thread>

namespace chorus::torchpg {

class C10dStore : public Store {
 public:
  explicit C10dStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, std::span<const std::byte> value) override {
    const auto* bytes = reinterpret_cast<const uint8_t*>(value.data());
    store_->set(key, std::vector<uint8_t>(bytes, bytes + value.size()));
  }

  std::vector<std::byte> get(const std::string& key, Deadline deadline) override {
    // Polls with check() rather than c10d's wait(keys, timeout): a TCPStore wait that
    // times out leaves the server's late reply on the socket, and the next request reads
    // it (1.13). check() is one request, one reply.
    auto pause = std::chrono::microseconds(200);
    try {
      while (!store_->check({key})) {
        if (Clock::now() >= deadline)
          throw Error(Result::Timeout,
                      "store (PyTorch c10d): key '" + key + "' not set before the deadline");
        std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
        pause = std::min(pause * 2, std::chrono::microseconds(10000));
      }
      std::vector<uint8_t> value = store_->get(key);
      std::vector<std::byte> out(value.size());
      if (!value.empty()) std::memcpy(out.data(), value.data(), value.size());
      return out;
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(Result::SystemError,
                  "store (PyTorch c10d): get '" + key + "' failed: " + firstLine(e.what()));
    }
  }

  int64_t add(const std::string& key, int64_t delta) override { return store_->add(key, delta); }

 private:
  // c10::Error's what() carries a C++ stack trace after the first line.
  static std::string firstLine(const char* text) {
    std::string s(text);
    return s.substr(0, s.find('\n'));
  }

  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace chorus::torchpg
