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
#include <future>
#include <string>
#include <thread>

namespace chorus::torchpg {

class C10dStore : public Store {
 public:
  explicit C10dStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, std::span<const std::byte> value) override {
    const auto* bytes = reinterpret_cast<const uint8_t*>(value.data());
    store_->set(key, std::vector<uint8_t>(bytes, bytes + value.size()));
  }

  void setBy(const std::string& key, std::span<const std::byte> value, Deadline deadline) override {
    const auto* bytes = reinterpret_cast<const uint8_t*>(value.data());
    within(deadline, "set '" + key + "'",
           [store = store_, key, v = std::vector<uint8_t>(bytes, bytes + value.size())] {
             store->set(key, v);
             return true;
           });
  }

  int64_t addBy(const std::string& key, int64_t delta, Deadline deadline) override {
    return within(deadline, "add to '" + key + "'",
                  [store = store_, key, delta] { return store->add(key, delta); });
  }

  std::vector<std::byte> get(const std::string& key, Deadline deadline) override {
    // Polls with check() rather than c10d's wait(keys, timeout): a TCPStore wait that
    // times out leaves the server's late reply on the socket, and the next request reads
    // it (1.13). check() is one request, one reply.
    auto pause = std::chrono::microseconds(200);
    try {
      while (!within(deadline, "get '" + key + "'",
                     [store = store_, key] { return store->check({key}); })) {
        if (Clock::now() >= deadline)
          throw Error(Result::Timeout,
                      "store (PyTorch c10d): key '" + key + "' not set before the deadline");
        std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
        pause = std::min(pause * 2, std::chrono::microseconds(10000));
      }
      std::vector<uint8_t> value =
          within(deadline, "get '" + key + "'", [store = store_, key] { return store->get(key); });
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
  // A c10d request waits for its answer as long as the store's own timeout (30 min by
  // default), also where the store's host is cut off: so it runs on a thread of its own and
  // Chorus stops waiting at `deadline`. The thread holds the store until the answer or the
  // store's timeout; a later request waits behind it in c10d (TCPStore serialises them),
  // under its own deadline here.
  template <class Request>
  static auto within(Deadline deadline, const std::string& what, Request request)
      -> decltype(request()) {
    std::packaged_task<decltype(request())()> task(std::move(request));
    auto answer = task.get_future();
    std::thread(std::move(task)).detach();
    if (deadline != Deadline::max() && answer.wait_until(deadline) != std::future_status::ready)
      throw Error(Result::Timeout,
                  "store (PyTorch c10d): no answer to " + what + " before the deadline");
    return answer.get();
  }

  // c10::Error's what() carries a C++ stack trace after the first line.
  static std::string firstLine(const char* text) {
    std::string s(text);
    return s.substr(0, s.find('\n'));
  }

  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace chorus::torchpg
