// What chorus_collectives_test checks per case: results element by element against the
// expected writers, guard zones, a hang turned into an error; shared by its case files.
#pragma once

#include "buffers.hpp"
#include "cases.hpp"
#include "dtypes.hpp"
#include "reference.hpp"

#include <chorus/chorus.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace chorus_test {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kWaitLimit{120000};
constexpr long kMaxPrinted = 40;  // failure lines per rank

struct Stats {
  long passed = 0;
  long failed = 0;
  long ulpCases = 0;  // float avg cases accepted with 1-ULP differences
  long printed = 0;
};

struct Hang : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline double gWaitSeconds = 0;  // time inside Work::wait, for --verbose

inline void waitFor(chorus::Work& w, const char* what) {
  const auto t0 = Clock::now();
  bool done = w.wait(kWaitLimit);
  gWaitSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
  if (!done) {
    throw Hang(std::string(what) + ": Work::wait returned false (not complete) after 120 s");
  }
}

class CaseCheck {
 public:
  CaseCheck(int rank, const Case& c, Stats& stats, std::vector<unsigned char>& scratch)
      : rank_(rank), case_(c), stats_(stats), scratch_(scratch) {}

  void fail(const std::string& msg) {
    ok_ = false;
    if (stats_.printed++ < kMaxPrinted) {
      std::printf("FAIL rank %d %s: %s\n", rank_, describe(case_).c_str(), msg.c_str());
    } else if (stats_.printed == kMaxPrinted + 1) {
      std::printf("rank %d: further failure lines suppressed\n", rank_);
    }
    std::fflush(stdout);
  }

  // Compares `count` elements at `buf` with the expected elements that fill(out, count)
  // writes; allowUlp: the float avg tolerance. Reports the first bad index.
  template <class Fill>
  void elements(const char* region, const void* buf, size_t count, Fill fill, bool allowUlp) {
    const TypeInfo& t = *case_.type;
    const size_t bytes = count * static_cast<size_t>(t.size);
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    fill(scratch_.data(), count);
    if (bytes == 0 || std::memcmp(buf, scratch_.data(), bytes) == 0) return;
    size_t wrong = 0;
    size_t first = 0;
    for (size_t i = 0; i < count; ++i) {
      uint64_t w = loadBits(scratch_.data(), i, t.size);
      uint64_t g = loadBits(buf, i, t.size);
      if (w == g) continue;
      if (compareElement(t, case_.op, allowUlp, w, g) == Match::WithinUlp) {
        ulp_ = true;
        continue;
      }
      if (wrong++ == 0) first = i;
    }
    if (wrong) {
      char head[160];
      std::snprintf(head, sizeof head, "%s: first bad index %zu (%zu of %zu wrong): expected ",
                    region, first, wrong, count);
      fail(head + formatValue(t, loadBits(scratch_.data(), first, t.size)) + ", got " +
           formatValue(t, loadBits(buf, first, t.size)));
    }
  }

  void guards(const char* name, const GuardedBuffer& b) {
    long where = 0;
    if (b.guardDamaged(&where)) {
      fail(std::string("guard zone of the ") + name + " modified at byte offset " +
           std::to_string(where) + " (data is " + std::to_string(b.bytes()) + " bytes)");
    }
  }

  bool ok() const { return ok_; }
  bool ulp() const { return ulp_; }

 private:
  int rank_;
  const Case& case_;
  Stats& stats_;
  std::vector<unsigned char>& scratch_;
  bool ok_ = true;
  bool ulp_ = false;
};

}  // namespace chorus_test
