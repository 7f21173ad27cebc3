// A watchdog thread for tests whose failure mode may be a hang: each check arms it with a
// name and a limit; if the limit passes, it prints "HANG in <check>" and exits the process.
#pragma once

#include <unistd.h>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace chorus_test {

class Watchdog {
 public:
  Watchdog() : thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm(const std::string& check, std::chrono::seconds limit) {
    std::lock_guard<std::mutex> lock(mu_);
    check_ = check;
    deadline_ = std::chrono::steady_clock::now() + limit;
    armed_ = true;
    cv_.notify_all();
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!quit_) {
      if (armed_ && std::chrono::steady_clock::now() >= deadline_) {
        std::printf("FAIL HANG in %s: no result before the watchdog limit\n", check_.c_str());
        std::fflush(stdout);
        _exit(3);
      }
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::string check_;
  std::chrono::steady_clock::time_point deadline_{};
  bool armed_ = false;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace chorus_test
