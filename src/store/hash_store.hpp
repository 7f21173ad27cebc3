// In-process store (like Gloo's HashStore): for single-process tests of several ranks
// running in threads.
#pragma once

#include "errors.hpp"
#include "store/store.hpp"

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>

namespace chorus {

class HashStore : public Store {
 public:
  void set(const std::string& key, std::span<const std::byte> value) override {
    std::lock_guard lock(mutex_);
    map_[key].assign(value.begin(), value.end());
    changed_.notify_all();
  }
  std::vector<std::byte> get(const std::string& key, Deadline deadline) override {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_until(lock, deadline, [&] { return map_.count(key) != 0; }))
      throw Error(Result::Timeout, "store: timed out waiting for key '" + key + "'");
    return map_[key];
  }
  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard lock(mutex_);
    auto& bytes = map_[key];
    int64_t value = 0;
    if (bytes.size() == sizeof(value)) std::memcpy(&value, bytes.data(), sizeof(value));
    value += delta;
    bytes.resize(sizeof(value));
    std::memcpy(bytes.data(), &value, sizeof(value));
    changed_.notify_all();
    return value;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<std::byte>> map_;
};

}  // namespace chorus
